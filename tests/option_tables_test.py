#!/usr/bin/env python3
"""Each class-grader option is defined once, in a table, and everything else comes from it:
grade_class.py's parser knows the table's options and no other; its --help has a paragraph for
each, and names each in its usage lines; grade_on_slurm.py's --help names its own options and
every option of grade_class.py it passes on; its split sends each of grade_class.py's options
where the table says (the shards, the merge, both) or refuses it with the table's reason; and
--draw reaches the shards as the number read, not as the text given.

Slurm itself is not started here (tests/slurm_class_test.py grades a class on a real cluster):
the split is read from the script grade_on_slurm.py writes for its tasks, with sbatch's and
sinfo's answers made up.

usage: option_tables_test.py
"""
import os
import shutil
import sys
import tempfile

import checklist
import project


from lab04.grader import command_line, grade_class, grade_on_slurm  # noqa: E402

# A value each option accepts, for the split (the readers check nothing there but --draw).
SAMPLE = {"-j": "2", "--draw": "0012", "--points": "1,1,1,1,1,1,1", "--timeout": "5", "--deadline":
          "2026-12-01T23:59:00-05:00", "--late-penalty": "10%/day"}


def main(argv):
    if argv:
        print("option_tables_test: usage: option_tables_test.py", file=sys.stderr)
        return 2
    table = {name for o in command_line.OPTIONS for name in o.names}
    parser = command_line._parser()
    known = {s for a in parser._actions for s in a.option_strings}
    checks = [("grade_class.py's parser knows the table's options and no other", known == table,
               "only in the parser: %s; only in the table: %s" % (sorted(known - table), sorted(table - known)))]
    dests = [o.dest for o in command_line.OPTIONS]
    checks.append(("each option of the table has a value of its own", len(dests) == len(set(dests)), dests))

    text = command_line.usage(grade_class.__doc__, grade_class.NOTES)
    lines = text.splitlines()
    usage_lines = []
    for line in lines:
        if line.startswith("usage: ") or (usage_lines and line.startswith("       ")):
            usage_lines.append(line)
        elif usage_lines:
            break
    usage = " ".join(usage_lines)
    for o in command_line.OPTIONS:
        head = "  " + ", ".join(o.names) + (" " + o.value if o.value else "") + " "
        paragraphs = [line for line in lines if line.startswith(head)]
        checks.append(("grade_class.py --help says what %s does, once" % o.names[-1], len(paragraphs) == 1,
                       paragraphs or "no line starts with %r" % head))
        checks.append(("grade_class.py's usage lines name %s" % o.names[0], ("[" + o.names[0] + " " in usage or "["
                       + o.names[0] + "]" in usage or " %s " % o.names[0] in usage), usage[:300]))
    checks.append(("grade_class.py --help ends with the exit statuses", "Exit status: 0" in text, text[-300:]))

    slurm_help = grade_on_slurm.usage(grade_on_slurm.__doc__, grade_on_slurm.NOTES)
    flat = " ".join(slurm_help.split())
    passed_on = flat[flat.find("grade_class.py's options ("):]
    passed_on = passed_on[:passed_on.find(")")]
    for o in grade_on_slurm.OWN:
        checks.append(("grade_on_slurm.py --help says what its %s does" % o.names[0],
                       "\n  %s%s " % (o.names[0], " " + o.value if o.value else "") in slurm_help, slurm_help[:400]))
    for o in command_line.OPTIONS:
        passed = o.slurm in command_line.WHERE
        checks.append(("grade_on_slurm.py --help %s %s among grade_class.py's options" % (
            "names" if passed else "leaves out", o.names[0]),
            (" %s," % o.names[0] in passed_on + "," or "(%s," % o.names[0] in passed_on) == passed, passed_on))

    for o in command_line.OPTIONS:
        name = o.names[-1]
        words = [name, SAMPLE.get(name, "x")] if o.read is not None else [name]
        try:
            own, shard, merge, rest = grade_on_slurm.split_options(words + ["SUBMISSIONS", "GRADES"])
            got = "shard %s, merge %s" % (shard, merge)
            went = ("shard" if shard == words else "") + ("merge" if merge == words else "")
            want = {"shard": "shard", "merge": "merge", "both": "shardmerge"}.get(o.slurm)
            checks.append(("grade_on_slurm.py sends %s where the table says (%s)" % (name, o.slurm),
                           want is not None and went == want and rest == ["SUBMISSIONS", "GRADES"], got))
        except command_line.Usage as e:
            checks.append(("grade_on_slurm.py refuses %s with the table's reason" % name,
                           o.slurm not in command_line.WHERE and len(o.slurm.split()) >= 3
                           and str(e).endswith(": " + o.slurm), str(e)))

    checks.append(draw_reaches_the_shards_as_a_number())
    return checklist.report(checks)


def draw_reaches_the_shards_as_a_number():
    """grade_on_slurm.start with --draw 0012: the tasks' script says --draw 12, once."""
    work = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(work, "class"))
        grades = os.path.join(work, "grades")
        grade_on_slurm.slurm = lambda words, what: "1\n"  # sinfo's and sbatch's answers
        grade_on_slurm.compile_sandbox.build_grader = lambda build: None  # (the grader is built elsewhere)
        job, _ = grade_on_slurm.start(["--draw", " 0012", "--no-wait", os.path.join(work, "class"), grades])
        with open(os.path.join(job["work"], "shard.sh")) as f:
            script = f.read()
        line = next((x for x in script.splitlines() if "--prebuilt --shard" in x), "")
        ok = job["draw"] == 12 and line.count("--draw") == 1 and "--draw 12 " in line
        return ("--draw reaches the shards as the number read (--draw ' 0012' gives --draw 12, once)", ok,
                "job.json's draw %r; the task's line: %s" % (job["draw"], line))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
