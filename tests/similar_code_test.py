#!/usr/bin/env python3
"""grade_class.py's summary lists the labs whose students' own code looks alike (grader/
similarity.py, with Debian's sim_c++): a hint, never a verdict, never a grade changed.

usage: similar_code_test.py BUILD WORK_DIR

A class of 33 made here: the 30 labs of bench/run's class (the lesson seven times, forms of it,
known mistakes made alike by several students, a compile error, a crash, a hang), a student
who handed in the starter as it was given, and two students with code of their own (an integer
mask, where, softmax written out, a broadcast sum), one a copy of the other with every name
changed, its layout and comments changed. Expected, from how the labs were made: exactly that
pair is listed, with its shares and lines; the starter's text and the labs that share the lesson
or a one-line mistake match no one; the grades are those of the class without the check. The
copier graded alone beside an earlier term that holds the original: listed as an earlier term's.
Copies behind cheap disguises, each a line of sed (canonical.py): a dead statement after each
line, statements reordered, auto and a dead statement before each line, and the renamed copy,
all with the original in one class: one group of the five, no honest student named; each alone
beside the original: the pair listed.
--no-similarity says the check was left out; without sim_c++ on PATH (Debian 13, or hidden) the
canonical form alone lists the copier and the summary says why sim_c++ did not run; where
sim_c++ is missing every check is of the canonical form alone. Prints OK or NOT OK for each
promise.
"""
import csv
import os
import re
import shutil
import subprocess
import sys

import checklist
import make_class
import make_starter
import project
import written_another_way_test

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")
RENAMED = {"scores": "s_mat", "weights": "attn", "tril": "keep", "e": "num", "out": "result", "q": "qq", "k": "kk",
           "v": "vv", "upper": "above", "sums_ok": "rows_ok", "causal_ok": "no_future"}


def copied(text):
    """The text with every name of RENAMED changed, comments of its own and its layout changed."""
    for old, new in RENAMED.items():
        text = re.sub(r"(?<![.:\w\"])%s\b(?!\")" % old, new, text)  # the variable: not a method, a type, a name in quotes
    text = text.replace("torch::Tensor num = ", "// my own softmax, written out\n    torch::Tensor   num =  ")
    return text.replace("if (opt.mask) ", "if (opt.mask)\n      ")


def in_main(text, change):
    """text with change applied to each line of main()'s body that is a whole statement: it
    ends with ';' and the code line before it ended one too (or opened or closed a block)."""
    start = text.index("int main(")
    end = text.index("} catch", start)
    lines, before = text[start:end].split("\n"), ""
    for i, line in enumerate(lines):
        code = line.split("//", 1)[0].rstrip()
        if re.fullmatch(r" +[^/]*\S;", code) and before.endswith((";", "{", "}")):
            lines[i] = change(code) + line[len(code):]
        if code.strip():
            before = code
    return text[:start] + "\n".join(lines) + text[end:]


def dead_after_each_line(text):
    """A statement that does nothing after each line of main()."""
    return in_main(text, lambda line: line + " (void)0;")


def auto_and_dead_before_each_line(text):
    """auto for every declared type of main(), and a statement that does nothing before each line."""
    text = in_main(text, lambda line: re.sub(r"^( +)", r"\1(void)0; ", line))
    start = text.index("int main(")
    return text[:start] + re.sub(r"\b(?:const )?(?:torch::Tensor|bool) (?=\w+ = )", "auto ", text[start:])


def reordered(text):
    """Two independent statements swapped, and the mask made before the scores."""
    lines = text.split("\n")
    at = {name: next(i for i, l in enumerate(lines) if l.strip().startswith(name)) for name in
          ("const bool sums_ok", "const torch::Tensor upper", "torch::Tensor tril", "torch::Tensor scores")}
    lines[at["const bool sums_ok"]], lines[at["const torch::Tensor upper"]] = \
        lines[at["const torch::Tensor upper"]], lines[at["const bool sums_ok"]]
    tril = lines.pop(at["torch::Tensor tril"])
    lines.insert(at["torch::Tensor scores"], tril)
    return "\n".join(lines)


def write_class(folder, labs):
    for name, text in labs.items():
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(folder, name, "lab04_attention.cpp"), "w") as f:
            f.write(text)


def grade(build, folder, grades, *options, hide_sim=False):
    """Grades a class; with hide_sim, in a mount namespace where sim_c++ is not a program (as root)."""
    command = [sys.executable, GRADE_CLASS, "--draw", "7", "--build", build] + list(options) + [folder, grades]
    if hide_sim:
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   'mount --bind /dev/null "$(command -v sim_c++)" && exec "$@"', "sh"] + command
    done = subprocess.run(command, capture_output=True, text=True)
    section = done.stdout.split("## Code that looks alike", 1)[1].split("\n## ", 1)[0] \
        if "## Code that looks alike" in done.stdout else ""
    return done, section


def main(argv):
    if len(argv) != 2:
        print("similar_code_test: usage: similar_code_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    build, work = (os.path.abspath(a) for a in argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        lesson = f.read()
    sim = shutil.which("sim_c++")  # Debian 13 does not package it: the canonical form alone
    if not sim:
        print("(sim_c++ is not installed here: every check below is of the canonical form alone)")
    own = written_another_way_test.written(lesson, written_another_way_test.OTHERS["integer_mask_and_other_operations"])
    labs = {"student%02d" % n: make_class.lab_text(kind) for n, kind in enumerate(make_class.BENCH)}
    labs["starter_as_given"] = make_starter.make_lab(lesson, make_starter.DEFAULT_BLANKS)[0]
    labs["orla"], labs["otto"] = own, copied(own)
    write_class(os.path.join(work, "class"), labs)
    done, section = grade(build, os.path.join(work, "class"), os.path.join(work, "grades"))
    pairs = re.findall(r"^- (\S+) and (\S+)( \(an earlier term's\))?: (.*)$", section, re.M)
    checks = [("the class of %d is graded (exit 0)" % len(labs), done.returncode == 0, done.stderr[-800:]),
              ("exactly one pair is listed: orla and otto (the copy with every name changed), with the share of "
               "each one's own code in the other's and the lines",
               [set(p[:2]) for p in pairs] == [{"orla", "otto"}] and re.search(r"\d+% of \w+'s own code is in", section)
               and "lines " in section, section or done.stdout[-1500:]),
              ("the section says it is a hint, never a verdict, and that grades are not changed",
               "never a verdict" in section and "not changed" in section, section)]
    with open(os.path.join(work, "grades", "grades.csv"), newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    checks.append(("orla and otto are graded as any lab (7/7: their code is right), the starter as given 2/7",
                   rows.get("orla", {}).get("score") == "7" and rows.get("otto", {}).get("score") == "7"
                   and rows.get("starter_as_given", {}).get("score") == "2", {n: rows.get(n) for n in ("orla", "otto")}))

    # Copies behind cheap disguises, each a line of sed: every one is listed with the original or
    # another copy, all of them as one group, and no honest student with them.
    disguised = dict((n, t) for n, t in labs.items() if n not in ("otto",))
    disguised.update({"otto": copied(own), "pip": dead_after_each_line(own), "rex": reordered(own),
                      "sal": auto_and_dead_before_each_line(own)})
    write_class(os.path.join(work, "disguised"), disguised)
    done, section = grade(build, os.path.join(work, "disguised"), os.path.join(work, "grades-disguised"))
    group = re.findall(r"^- a group of (\d+) labs.*: (.*)$", section, re.M)
    named = set(re.findall(r"\b(student\d\d|starter_as_given|orla|otto|pip|rex|sal)\b", section))
    checks.append(("four copies behind disguises (every name changed; a dead statement after each line; statements "
                   "reordered; auto and a dead statement before each line) and the original: one group of the five, "
                   "and no honest student named", done.returncode == 0 and len(group) == 1
                   and set(group[0][1].split(", ")) == {"orla", "otto", "pip", "rex", "sal"}
                   and named == {"orla", "otto", "pip", "rex", "sal"}, section or done.stderr[-800:]))
    with open(os.path.join(work, "grades-disguised", "grades.csv"), newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    checks.append(("the disguised copies compile and are graded as any lab (7/7)",
                   all(rows.get(n, {}).get("score") == "7" for n in ("pip", "rex", "sal")),
                   {n: rows.get(n, {}).get("status") for n in ("pip", "rex", "sal")}))
    for name in ("pip", "rex", "sal"):  # each alone beside the original: listed as a pair
        write_class(os.path.join(work, "pair-" + name), {"orla": own, name: disguised[name], "hal": lesson})
        done, section = grade(build, os.path.join(work, "pair-" + name), os.path.join(work, "grades-pair-" + name))
        pairs = re.findall(r"^- (\S+) and (\S+)( \(an earlier term's\))?: (.*)$", section, re.M)
        checks.append(("%s alone beside the original: the pair is listed, with its shares and lines" % name,
                       [set(p[:2]) for p in pairs] == [{"orla", name}], section or done.stderr[-800:]))

    # An earlier term that holds the original; this term, the copier alone.
    write_class(os.path.join(work, "earlier"), {"orla": own})
    write_class(os.path.join(work, "term2"), {"otto": copied(own), "hal": lesson})
    done, section = grade(build, os.path.join(work, "term2"), os.path.join(work, "grades2"), "--similar-to",
                          os.path.join(work, "earlier"))
    checks.append(("beside an earlier term's labs (--similar-to), the copier is listed with the earlier term's "
                   "original", done.returncode == 0 and re.search(r"^- otto and orla \(earlier\) \(an earlier term's\)",
                                                                  section, re.M) is not None, section or done.stderr[-800:]))
    done, section = grade(build, os.path.join(work, "term2"), os.path.join(work, "grades3"), "--no-similarity")
    checks.append(("--no-similarity: graded, and the summary says the check was left out",
                   done.returncode == 0 and "Not checked (--no-similarity)." in section, section or done.stderr[-800:]))
    if sim and (os.geteuid() != 0 or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0):
        print("(the class without sim_c++ is not tried: it needs root and a mount namespace, to hide the program)")
        return checklist.report(checks)
    done, section = grade(build, os.path.join(work, "term2"), os.path.join(work, "grades4"), "--similar-to",
                          os.path.join(work, "earlier"), hide_sim=bool(sim))
    checks.append(("without sim_c++: the class is graded (exit 0), the summary says sim_c++ did not run and why, and the "
                   "canonical form still lists the copier with the earlier term's original",
                   done.returncode == 0 and "canonical form" in section and "not compared as well: sim_c++" in section
                   and "not installed" in section and re.search(r"^- otto and orla \(earlier\)", section, re.M) is not None,
                   section or done.stderr[-800:]))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
