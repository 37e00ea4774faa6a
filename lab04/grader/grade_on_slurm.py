"""grade_on_slurm.py: grades a class on a Slurm cluster: the class cut into shards graded by a
job array, then merged by a job that waits for it, into the same GRADES one machine writes.
"""
import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time

from lab04 import PROJECT
from lab04.checker import cases, files
from lab04.grader import command_line, compile_sandbox
from lab04.grader.command_line import Option, Usage, parse_args

GRADE_CLASS = os.path.join(PROJECT, "grader", "grade_class.py")  # the command each task runs
TASKS = 4
POLL = 2  # seconds between two looks at the queue
SLURM_TIMEOUT = 60  # seconds a Slurm command may take to answer

# This command's own options; grade_class.py's (command_line.OPTIONS) say themselves where they go.
OWN = (
    Option(("--tasks",), "N", "tasks", str, str(TASKS),
           "shards of the class, one array task each (default %d); each task grades with as many labs at once as "
           "Slurm gave it CPUs (--sbatch=--cpus-per-task=C; or give -j)" % TASKS, "own"),
    Option(("--partition",), "P", "partition", str, None, "passed to sbatch for every job", "own"),
    Option(("--account",), "A", "account", str, None, "passed to sbatch for every job", "own"),
    Option(("--time",), "T", "time", str, None, "passed to sbatch for every job", "own"),
    Option(("--sbatch",), "OPTION", "sbatch", str, None,
           "passes any other of sbatch's options (--sbatch=--qos=short) to every job; may be given more than once",
           "own", many=True),
    Option(("--no-wait",), "", "no_wait", None, False,
           "submit, say the jobs, and return; --wait GRADES waits for them later", "own"),
    Option(("--wait",), "GRADES", "wait", str, None, "wait for a class submitted with --no-wait", "own"),
    Option(("--rerun",), "GRADES", "rerun", str, None,
           "submit again the shards that did not finish, then the merge", "own"),
)


# --help prints the docstring, the usage lines and each option, made from the options' table
# (lab04/grader/command_line.py's OPTIONS, and OWN below), then NOTES.
NOTES = """\
What it does, in order: builds the grader once (the run engine and the lesson's module, in
--build), so that the tasks find it built; writes GRADES.slurm/ beside GRADES (the tasks'
script, their logs and their shards: it must be a folder every node sees, as the build and the
class must); submits the array (sbatch --array=1-N), each task running grade_class.py --shard
I/N --prebuilt into GRADES.slurm/shard-I; submits the merge (grade_class.py --merge) as a job
that runs only if every task ended well (--dependency=afterok, --kill-on-invalid-dep=yes);
then waits for both. When the merge has run, its summary is printed, GRADES.slurm/ is removed,
and the exit status is the merge's. When a task failed, was preempted or ran out of time, the
merge does not run and GRADES is not written: one line per missing shard names its log, and
--rerun GRADES submits those shards alone, then the merge.

Exit status: 0 the class was graded; 1 graded with rows of "grader error" (as grade_class.py),
or a shard did not finish (GRADES not written); 2 bad arguments, no Slurm answering, sbatch
refusing an option, or a job Slurm says can never start (nothing written in GRADES); 3 an error
of its own.
"""


def usage(top, end):
    """The --help: top, the usage lines, this command's options, where grade_class.py's go, end."""
    passed = [o for o in command_line.OPTIONS if o.slurm in command_line.WHERE]
    lines = command_line.wrapped(command_line.synopsis([o for o in OWN if o.dest not in ("wait", "rerun")])
                                 + ["[grade_class.py's options]", "SUBMISSIONS", "GRADES"], "usage: grade_on_slurm.py ")
    lines += ["       grade_on_slurm.py --wait GRADES", "       grade_on_slurm.py --rerun GRADES",
              "  SUBMISSIONS, GRADES  as grade_class.py's; GRADES is written by the merge alone, whole"]
    lines += command_line.usage_lines(OWN)
    lines += textwrap.wrap("grade_class.py's options (%s) go to the shards or to the merge, where each belongs; "
                           "without --draw, one new draw is chosen for the whole class"
                           % ", ".join(o.names[0] for o in passed), 100, initial_indent="  ", subsequent_indent="  ",
                           break_on_hyphens=False)
    return "\n".join([top.strip(), ""] + lines + ["", end.strip()])


# The reasons squeue gives for a pending job that Slurm will never start as it is asked.
NEVER_STARTS = {"BadConstraints", "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "InvalidAccount",
                "InvalidQOS", "AccountNotAllowed", "QOSNotAllowed", "ReqNodeNotAvail, UnavailableNodes:",
                "DependencyNeverSatisfied", "JobHeldAdmin", "JobHeldUser"}
GOING = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
         "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"}


class Failed(Exception):
    """Slurm did not do what was asked: one line on stderr, with its exit status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def split_options(argv):
    """The command line in its parts: (own options as a dict, options for each shard, options for
    the merge, the positional arguments), each of grade_class.py's where its table says."""
    named = {name: o for o in OWN + command_line.OPTIONS for name in o.names}
    own, shard, merge, rest = {"sbatch": []}, [], [], []
    i = 0
    while i < len(argv):
        word = argv[i]
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        option = named.get(name)
        if option is None:
            if word.startswith("-") and word != "-":
                raise Usage("unknown option %r: see grader/grade_on_slurm.py --help" % word[:40])
            rest.append(word)
            i += 1
            continue
        if option.read is not None and not eq:
            if i + 1 >= len(argv):
                raise Usage("%s takes a value" % name)
            value, i = argv[i + 1], i + 1
        i += 1
        given = [name, value] if option.read is not None else [name]
        if option in OWN:
            if option.dest == "sbatch" and not value.startswith("-"):
                raise Usage("--sbatch takes one of sbatch's own options (--sbatch=--qos=short), not %r" % value[:40])
            if option.many:
                own[option.dest].append(value)
            else:
                own[option.dest] = value if option.read is not None else True
        elif option.slurm not in command_line.WHERE:
            raise Usage("%s is not an option of grade_on_slurm.py: %s" % (name, option.slurm))
        else:
            shard += given if option.slurm in ("shard", "both") else []
            merge += given if option.slurm in ("merge", "both") else []
    return own, shard, merge, rest


def without_draw(options):
    """options (as split_options gives them: a name, then its value if it takes one) without --draw."""
    kept, i = [], 0
    while i < len(options):
        if options[i] == "--draw":
            i += 2
            continue
        kept.append(options[i])
        i += 1
    return kept


def slurm(words, what):
    """Runs a Slurm command: its output, or Failed (exit 2) with its first line of error."""
    try:
        done = subprocess.run(words, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=SLURM_TIMEOUT)
    except FileNotFoundError:
        raise Failed("no Slurm here: %s is not on PATH (Debian's slurm-client has it)" % words[0], 2)
    except subprocess.TimeoutExpired:
        raise Failed("Slurm did not answer %s within %d s: is its controller running?" % (what, SLURM_TIMEOUT), 2)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["exit %d, no message" % done.returncode]
        said = next((x for x in lines if "error" in x.lower()), lines[0])
        raise Failed("Slurm refused %s: %s" % (what, said.strip()[:300]), 2)
    return done.stdout


def work_of(grades):
    return os.path.abspath(grades).rstrip("/") + ".slurm"


def scripts(job):
    """The array task's script and the merge's, as text."""
    q = shlex.quote
    jobs = [] if {"-j", "--jobs"} & set(job["shard_options"]) else ['-j "${SLURM_CPUS_PER_TASK:-$(nproc)}"']
    task = "\n".join([
        "#!/bin/bash",
        "# One shard of the class (grade_on_slurm.py wrote this): grade_class.py --shard I/N into",
        "# shard-I, renamed there only once it is whole, so that a shard that exists is a finished one.",
        "work=%s i=$SLURM_ARRAY_TASK_ID" % q(job["work"]),
        'rm -rf "$work/shard-$i.part"',
        " ".join([q(job["python"]), q(GRADE_CLASS), "--prebuilt", "--shard", "$i/%d" % job["tasks"], "--draw",
                  str(job["draw"])] + jobs + [q(w) for w in job["shard_options"]]
                 + [q(job["submissions"]), '"$work/shard-$i.part"']),
        "status=$?",
        "# 1: graded, with rows of grader error, which the merge keeps (one machine's gradebook would)",
        'if [ $status -le 1 ]; then rm -rf "$work/shard-$i" && mv "$work/shard-$i.part" "$work/shard-$i" && exit 0; fi',
        "exit $status", ""])
    shards = " ".join('"$work/shard-%d"' % i for i in range(1, job["tasks"] + 1))
    merge = "\n".join([
        "#!/bin/bash",
        "# The merge of the shards into GRADES (grade_on_slurm.py wrote this); its status is kept.",
        "work=%s" % q(job["work"]),
        " ".join([q(job["python"]), q(GRADE_CLASS), "--merge"] + [q(w) for w in job["merge_options"]]
                 + [q(job["grades"]), shards]),
        "status=$?",
        'echo $status > "$work/merge.status"',
        "exit $status", ""])
    return task, merge


def sbatch_options(job):
    """The options every job of the class gets: the cluster's own, as the instructor gave them."""
    return ["--%s=%s" % (k, job[k]) for k in ("partition", "account", "time") if job[k]] + job["sbatch"]


def submit_merge(job, after):
    """Submits the merge, after the array job after if any; its job id."""
    wait_for = ["--dependency=afterok:" + after, "--kill-on-invalid-dep=yes"] if after else []
    return slurm(["sbatch", "--parsable", "--job-name=lab04-merge"] + wait_for
                 + ["--output=%s/merge.out" % job["work"], "--error=%s/merge.err" % job["work"]]
                 + sbatch_options(job) + [os.path.join(job["work"], "merge.sh")], "the merge").strip().split(";")[0]


def submit(job, indices):
    """Submits the array tasks of indices (none: the merge alone), then the merge, which waits
    for them; writes job.json and returns the two job ids."""
    work = job["work"]
    array = None
    if indices:
        array = slurm(["sbatch", "--parsable", "--job-name=lab04-grade", "--array=" + ",".join(map(str, indices)),
                       "--output=%s/logs/shard-%%a.log" % work] + sbatch_options(job)
                      + [os.path.join(work, "shard.sh")], "the array of shards").strip().split(";")[0]
    try:
        merge = submit_merge(job, array)
    except Failed:
        cancel([array] if array else [])
        raise
    job["jobs"] = {"array": array, "merge": merge}
    files.write_text(os.path.join(work, "job.json"), json.dumps(job, indent=1) + "\n")
    return array, merge


def cancel(ids):
    if ids:
        subprocess.run(["scancel"] + ids, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=SLURM_TIMEOUT, check=False)


def still_going(ids):
    """The jobs of ids (array tasks one by one) that Slurm has not ended: [(id, state, reason)].
    A job Slurm no longer knows has ended."""
    words = ["squeue", "--noheader", "--array", "--format=%i|%T|%r", "--jobs=" + ",".join(ids)]
    try:
        done = subprocess.run(words, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=SLURM_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return [] if "invalid job id" in done.stderr.lower() else None
    return [tuple(x.split("|", 2)) for x in done.stdout.splitlines() if x.count("|") == 2 and x.split("|")[1] in GOING]


def wait(job, patience=600):
    """Waits until Slurm has ended the array and the merge; a job it says can never start is
    cancelled (Failed, exit 2). Slurm silent for longer than patience seconds: Failed."""
    merge = job["jobs"]["merge"]
    ids = [x for x in (job["jobs"]["array"], merge) if x]
    silent_since = None
    while True:
        going = still_going(ids)
        if going is None:
            silent_since = silent_since or time.monotonic()
            if time.monotonic() - silent_since > patience:
                raise Failed("Slurm stopped answering while the class was graded (jobs %s): wait again with "
                             "grade_on_slurm.py --wait %s" % (" and ".join(ids), job["grades"]), 2)
        else:
            silent_since = None
            stuck = [(i, r) for i, state, r in going if state == "PENDING" and r.strip() in NEVER_STARTS
                     and not (i == merge and r.strip() == "DependencyNeverSatisfied")]
            if stuck:
                cancel(ids)
                if len(missing(job)) == job["tasks"]:  # nothing of it to keep: as if never submitted
                    wait_until_gone(ids)
                    files.remove(job["work"])
                raise Failed("job %s can never start as it is asked: Slurm says %s (cancelled; nothing written "
                             "in %s)" % (stuck[0][0], stuck[0][1].strip(), job["grades"]), 2)
            if not going or going == [(merge, "PENDING", "DependencyNeverSatisfied")]:
                if going:  # (a task failed: Slurm cancels such a merge itself, --kill-on-invalid-dep)
                    cancel([merge])
                return
        time.sleep(POLL)


def wait_until_gone(ids, seconds=30):
    """Waits (a while, at most) until Slurm has ended the cancelled jobs of ids, so that no
    task of theirs still writes in the folder about to be removed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and still_going(ids):
        time.sleep(0.5)


def missing(job):
    return [i for i in range(1, job["tasks"] + 1) if not os.path.isdir(os.path.join(job["work"], "shard-%d" % i))]


def outcome(job):
    """How the class ended, once Slurm is done with it: the merge's summary and status, or
    the shards that did not finish (exit 1)."""
    work = job["work"]
    try:
        with open(os.path.join(work, "merge.status")) as f:
            status = int(f.read().strip())
    except (OSError, ValueError):
        status = None
    if status is None:
        gone = missing(job)
        for i in gone:
            print("grade_on_slurm: shard %d/%d did not finish (it failed, was preempted or ran out of time): see "
                  "%s/logs/shard-%d.log" % (i, job["tasks"], work, i), file=sys.stderr)
        if not gone:
            print("grade_on_slurm: the merge did not run (see %s/merge.err)" % work, file=sys.stderr)
        print("grade_on_slurm: nothing written in %s; grade what is missing and merge: grader/grade_on_slurm.py "
              "--rerun %s" % (job["grades"], shlex.quote(job["grades"])), file=sys.stderr)
        return 1
    for name, stream in (("merge.out", sys.stdout), ("merge.err", sys.stderr)):
        try:
            with open(os.path.join(work, name), encoding="utf-8", errors="replace") as f:
                stream.write(f.read())
        except OSError:
            pass
    if status in (0, 1):
        files.remove(work)  # what stays is what one machine leaves: GRADES
    return status


def say(line, always=False):
    """What was submitted, on a terminal (or with --no-wait, where it is the answer): a log or
    a CI job reads the summary, or one line of error, alone."""
    if always or sys.stderr.isatty():
        print(line, file=sys.stderr)


def read_job(grades, what):
    work = work_of(grades)
    try:
        with open(os.path.join(work, "job.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        if os.path.isfile(os.path.join(grades, "grades.csv")):
            raise Usage("%s: %s is graded already (its grades.csv is there): nothing to wait for or rerun" % (what, grades))
        raise Usage("%s: no class was submitted for %s (no %s/job.json)" % (what, grades, work))


def start(argv):
    own, shard_options, merge_options, rest = split_options(argv)
    if "wait" in own or "rerun" in own:
        if rest or shard_options or merge_options or len(own) > 2 + ("no_wait" in own):
            raise Usage("--wait GRADES and --rerun GRADES take no other argument, but --no-wait with --rerun")
        if "wait" in own and "rerun" in own:
            raise Usage("--wait or --rerun, not both")
        grades = own.get("wait") or own.get("rerun")
        job = read_job(grades, "--wait" if "wait" in own else "--rerun")
        if "rerun" in own:
            files.remove(os.path.join(job["work"], "merge.status"))  # (a merge that had ended well removed the folder)
            gone = missing(job)
            for i in gone:
                files.remove(os.path.join(job["work"], "shard-%d.part" % i))
            array, merge = submit(job, gone)
            say("grade_on_slurm: %s, the merge as job %s" % (
                "shard%s %s submitted again as job %s" % ("s" * (len(gone) > 1), ", ".join(map(str, gone)), array)
                if gone else "every shard had finished", merge), "no_wait" in own)
        return job, "no_wait" in own
    if len(rest) != 2:
        raise Usage("usage: grade_on_slurm.py [--tasks N] [--partition P] [--account A] [--time T] "
                    "[--sbatch OPTION ...] [--no-wait] [grade_class.py's options] SUBMISSIONS GRADES")
    tasks = own.get("tasks", str(TASKS))
    if not tasks.isdigit() or not 1 <= int(tasks) <= 10000:
        raise Usage("--tasks takes a number of array tasks, from 1 to 10000, not %r" % tasks[:20])
    submissions, grades = rest
    new_draw = [] if "--draw" in shard_options else ["--draw", str(cases.new_draw())]
    checked = parse_args(shard_options + new_draw + ["--shard", "1/%s" % tasks, submissions, grades])  # every bad input
    shard_options = without_draw(shard_options)  # the tasks get the draw read here, checked["draw"]
    parse_args(["--merge"] + merge_options + [grades, submissions])
    if not os.path.isdir(submissions):
        raise Usage("SUBMISSIONS %r is not a folder: the class's folder" % submissions[:80])
    work = work_of(grades)
    if os.path.lexists(work):
        raise Usage("%s exists: a class was submitted there already; wait for it (--wait %s), rerun what is missing "
                    "(--rerun %s), or remove it" % (work, grades, grades))
    slurm(["sinfo", "--noheader", "--format=%P"], "a question (sinfo)")  # a controller answers, before the build
    problem = compile_sandbox.build_grader(checked["build"])
    if problem:
        raise Usage(problem)
    if "--build" not in shard_options:  # the build just built, whatever folder the tasks start in
        shard_options += ["--build", checked["build"]]
    job = {"tasks": int(tasks), "draw": checked["draw"], "python": sys.executable, "work": work,
           "submissions": os.path.abspath(submissions), "grades": os.path.abspath(grades),
           "shard_options": shard_options, "merge_options": merge_options, "sbatch": own["sbatch"],
           "partition": own.get("partition"), "account": own.get("account"), "time": own.get("time")}
    os.makedirs(os.path.join(work, "logs"))
    try:
        task, merge = scripts(job)
        for name, text in (("shard.sh", task), ("merge.sh", merge)):
            files.write_text(os.path.join(work, name), text)
            os.chmod(os.path.join(work, name), 0o755)
        array, merge_id = submit(job, range(1, job["tasks"] + 1))
    except BaseException:
        files.remove(work)
        raise
    say("grade_on_slurm: %d shards submitted as job array %s, the merge as job %s" % (job["tasks"], array, merge_id),
        own.get("no_wait", False))
    return job, own.get("no_wait", False)


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if argv[:1] in (["-h"], ["--help"]):
        print(usage(__doc__, NOTES))
        return 0
    try:
        job, no_wait = start(argv)
        if no_wait:
            print("grade_on_slurm: not waiting; then: grader/grade_on_slurm.py --wait %s" % shlex.quote(job["grades"]),
                  file=sys.stderr)
            return 0
        wait(job)
        return outcome(job)
    except Usage as e:
        print("grade_on_slurm: %s" % e, file=sys.stderr)
        return 2
    except Failed as e:
        print("grade_on_slurm: %s" % e, file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of its own: one line, never a traceback
        print("grade_on_slurm: internal error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3

