#!/usr/bin/env python3
"""grade_class.py: grades a whole class: a gradebook, feedback for each student, and what the
class got wrong.

usage: grade_class.py [-j N] [--shard I/N] [--draw SEED|public] [--points P1,...,P7] [--timeout S]
                      [--build DIR] [--hide PATH ...] [--deadline TIME] [--late-penalty RULE]
                      [--no-similarity | --similar-to FOLDER ... --template FILE ...]
                      [--canvas-gradebook EXPORT.csv [--canvas-column NAME]]
                      [--moodle-gradebook EXPORT.csv] [--gradescope RESULTS] SUBMISSIONS GRADES
       grade_class.py --merge [--canvas-gradebook EXPORT.csv] [--moodle-gradebook EXPORT.csv]
                      [--no-similarity | --similar-to FOLDER ...] GRADES SHARD_GRADES ...
  SUBMISSIONS  the class: a folder per student, Canvas's files, or Gradescope's export
               (submissions.py says which shapes it reads)
  GRADES       a folder to write, new or empty: grades.csv, feedback/<student>.txt,
               summary.md, and class.json (what --merge reads)
  -j N         labs graded at once (default: one per core)
  --shard I/N  grade only every Nth student, from the Ith (1 <= I <= N), for a job array;
               then --merge the N GRADES folders into one; needs --draw, the same for every shard
  --draw SEED  the seed of the draw of cases to grade on (cases.draw_grade_cases): a case of
               each kind of the public grade cases, with seeds and sizes no student has seen.
               By default a new draw each time, from the system's randomness; the summary and
               class.json name its seed, and a regrade with --draw SEED grades on the same
               cases. --draw public grades on the public cases, which every student's checker
               knows (a lab that prints their answers would score full marks)
  --points, --timeout   as check_lab.py --grade
  --hide PATH  a folder or file no lab's run may see (the class's folder and the project are
               hidden always); may be given more than once
  --deadline TIME  ISO 8601 with its zone (2026-12-01T23:59:00-05:00): a cloned repository is
               graded at its last commit at or before it (commits after it are said in the late
               column, not graded); Gradescope's :created_at: is compared with it
  --late-penalty RULE  none (the default), or P%/day[,max=Q%]: P% of the lab's points taken
               per day late (each day begun counts whole), at most Q%; Canvas's _late files
               count as one day, since Canvas does not say how late
  --canvas-gradebook EXPORT.csv  Canvas's own gradebook export: also write
               GRADES/canvas-import.csv, the same file with this lab's column filled in for
               every student it matches (grader/lms.py says how), ready to import, and list the
               students it could not match on either side; --canvas-column NAME names the
               lab's assignment there (default: the one whose name says Lab 04, or a new one)
  --moodle-gradebook EXPORT.csv  Moodle's grade export (plain text): also write
               GRADES/moodle-import.csv: the students it matches (grader/lms.py), each by the
               email address Moodle has, with this lab's grade in percent, which Moodle's CSV
               import takes as it is
  --no-similarity  leave out the summary's list of labs whose own code looks alike (grader/
               similarity.py: Debian's sim_c++ compares what each student wrote beyond the lesson
               and the template; a hint to look, never a grade), which runs by default
  --similar-to FOLDER  also compare the class with the labs of an earlier term kept in FOLDER (any
               shape SUBMISSIONS may have); may be given more than once
  --template FILE  a file handed out to the class (a starter of your own, say), whose lines are
               nobody's own code, as the lesson's and a starter's TODO lines are not; may be given
               more than once
  --gradescope RESULTS  SUBMISSIONS is one submission (Gradescope's /autograder/submission):
               grade it as one student and also write Gradescope's results.json to RESULTS
               (instructor/gradescope/run_autograder does); its pre-flight asks only that the
               project's lab04_attention.cpp (the starter's, there) compiles and runs to the end

Each lab is graded as check_lab.py --grade grades it alone: the same cases, the same steps,
the same points, then the checker's diagnosis. What makes a class fast: the project's build
(--build, default build/) compiles each lab against its precompiled header as a module; each
worker loads LibTorch once, in grader/runner.cpp, whose forked child enters the sandbox and
then loads the student's module; the reference of each case is computed once for the class.
Run as root, each worker's labs run as a user id of its own; otherwise each run goes through
checker/sandbox.py's bubblewrap or namespaces, with a LibTorch start per run (slower).

A grader fault is never a grade. Before the class, a pre-flight grades the lesson itself
(lab04_attention.cpp beside this folder) through exactly the students' path; unless it earns
full marks the class is refused, with what failed (exit 2, nothing written). A fault of the
grader's own during the class costs that student's row, marked "grader error" (not graded),
never a score, and the exit status says the gradebook is incomplete. Each student's grading
has a budget (GRADER_BUDGET): a lab whose output would cost the grader more is one row's
"grader error", never the class's end.

Exit status: 0 the class was graded (whatever its grades); 1 graded, but some rows are
"grader error": the gradebook is incomplete (one line on stderr says how many); 2 bad
arguments or a setup that cannot grade (one line on stderr, nothing written); 3 an error of
the grader's own that ended the class (nothing written).
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "checker"))
import cases  # noqa: E402
import deadlines  # noqa: E402
import gradebook  # noqa: E402
import lms  # noqa: E402
import runner_client  # noqa: E402
import sandbox  # noqa: E402
import similarity  # noqa: E402
import submissions  # noqa: E402
import torch_python  # noqa: E402

COMPILE_TIMEOUT = 120  # seconds one student's compile may take, and of CPU (the lesson: about 0.5 s)
COMPILE_CPU = COMPILE_TIMEOUT
COMPILE_MEMORY = sandbox.MEMORY  # bytes of address space: no more than a run's (the lesson's compile: 0.2 GB)
COMPILE_FILE = 256 << 20  # bytes: the largest file it writes (the module: about 1 MB)
COMPILER_OUTPUT = 1 << 20  # bytes of compiler messages read; more stops the compile (its limit)
COMPILER_LINES = 40  # lines of compiler errors kept in a student's feedback
CLASS_TIMEOUT = cases.CLASS_TIMEOUT  # seconds a run of a grade case may take (the lesson: 0.03 s)
GRADER_OWN = 60  # seconds of the grader's own work (reading, judging, diagnosing) one lab may cost


def grader_budget(timeout, cases):
    """Seconds one student's grading may take in all: the compile, each case's run, the rest."""
    return int(COMPILE_TIMEOUT + cases * (timeout + 5) + GRADER_OWN)


class Usage(Exception):
    """Bad arguments: one line on stderr, exit 2."""


class OverBudget(Exception):
    """One student's grading took longer than its budget."""


def parse_args(argv):
    args = {"jobs": os.cpu_count() or 1, "shard": (1, 1), "points": [1.0] * 7, "timeout": CLASS_TIMEOUT,
            "build": os.path.join(ROOT, "build"), "merge": False, "hide": [], "gradescope": None,
            "deadline": None, "penalty": deadlines.Penalty(), "canvas": None, "canvas_column": None,
            "moodle": None, "draw": None, "similarity": True, "similar_to": [], "templates": []}
    rest = []
    while argv:
        option, value = argv[0], argv[1] if len(argv) > 1 else None
        if option in ("--merge", "--no-similarity"):
            args["merge" if option == "--merge" else "similarity"] = option == "--merge"
            argv = argv[1:]
            continue
        if option in ("-j", "--jobs"):
            if not (value or "").isdigit() or not 1 <= int(value) <= 256:
                raise Usage("-j takes a number of labs to grade at once, from 1 to 256, not %r" % (value or "")[:20])
            args["jobs"] = int(value)
        elif option == "--shard":
            i, _, n = (value or "").partition("/")
            if not (i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n) <= 10000):
                raise Usage("--shard takes I/N, with 1 <= I <= N (such as 2/8), not %r" % (value or "")[:20])
            args["shard"] = (int(i), int(n))
        elif option in ("--similar-to", "--template"):
            if option == "--similar-to" and not (value and os.path.isdir(value)):
                raise Usage("--similar-to takes a folder of an earlier term's labs (any shape a class may have), not %r"
                            % (value or "")[:80])
            if option == "--template" and not (value and os.path.isfile(value)):
                raise Usage("--template takes a file handed out to the class (a starter's lab04_attention.cpp, say), "
                            "not %r" % (value or "")[:80])
            args["similar_to" if option == "--similar-to" else "templates"].append(value)
        elif option == "--draw":
            try:
                args["draw"] = "public" if value == "public" else cases.parse_draw(value)
            except ValueError as e:
                raise Usage(str(e)[:-1] + ", or public)" if str(e).endswith(")") else str(e))
        elif option == "--points":
            try:
                args["points"] = cases.parse_points(value or "")
            except ValueError as e:
                raise Usage(str(e))
        elif option == "--timeout":
            try:
                args["timeout"] = float(value)
                assert 0 < args["timeout"] <= 3600
            except (TypeError, ValueError, AssertionError):
                raise Usage("--timeout takes a number of seconds from 0 to 3600")
        elif option == "--build":
            if not value:
                raise Usage("--build takes the project's build folder")
            args["build"] = os.path.abspath(value)
        elif option == "--hide":
            if not value or not os.path.exists(value):
                raise Usage("--hide takes a folder or file that exists, not %r" % (value or "")[:80])
            args["hide"].append(os.path.realpath(value))
        elif option == "--deadline":
            args["deadline"] = deadlines.parse_deadline(value)
        elif option == "--late-penalty":
            args["penalty"] = deadlines.parse_penalty(value)
        elif option == "--canvas-gradebook":
            if not value or not os.path.isfile(value):
                raise Usage("--canvas-gradebook takes the CSV file Canvas's gradebook exported (Grades, Export), "
                            "not %r" % (value or "")[:80])
            args["canvas"] = lms.read_export("canvas", value)
        elif option == "--moodle-gradebook":
            if not value or not os.path.isfile(value):
                raise Usage("--moodle-gradebook takes the CSV file Moodle's grade export wrote (Grades, Export, "
                            "Plain text file), not %r" % (value or "")[:80])
            args["moodle"] = lms.read_export("moodle", value)
        elif option == "--canvas-column":
            if not value:
                raise Usage("--canvas-column takes the name of the lab's assignment in Canvas's gradebook export")
            args["canvas_column"] = value
        elif option == "--gradescope":
            if not value or not os.path.isdir(os.path.dirname(os.path.abspath(value))):
                raise Usage("--gradescope takes the results.json to write, in a folder that exists")
            args["gradescope"] = os.path.abspath(value)
        elif option.startswith("-") and option != "-":
            raise Usage("unknown option %r: see the top of grader/grade_class.py" % option[:40])
        else:
            rest.append(option)
            argv = argv[1:]
            continue
        argv = argv[2:]
    if args["canvas_column"] and not args["canvas"]:
        raise Usage("--canvas-column names a column of --canvas-gradebook's export: give both")
    args["exports"] = [e for e in (args["canvas"], args["moodle"]) if e]
    if args["exports"] and args["shard"] != (1, 1):
        raise Usage("--canvas-gradebook and --moodle-gradebook fill the whole class's column: give them to --merge, "
                    "not to a --shard")
    if args["canvas"]:
        args["canvas"].choose_column(args["canvas_column"])
    if not args["similarity"] and (args["similar_to"] or args["templates"]):
        raise Usage("--similar-to and --template are for the similarity check, which --no-similarity leaves out: "
                    "give one or the other")
    if args["merge"] and args["templates"]:
        raise Usage("--template goes to the grading of each shard (each lab's own code is found there), not to --merge")
    args["template"] = frozenset(similarity.template_keys(
        [read_text(p) for p in [os.path.join(ROOT, "lab04_attention.cpp")] + args["templates"]]))
    if args["shard"] != (1, 1) and args["draw"] is None:
        raise Usage("--shard needs --draw SEED, one seed for every shard of the class (any whole number, such as "
                    "--draw %d), so that the whole class is graded on the same cases" % cases.new_draw())
    if args["draw"] is None:
        args["draw"] = cases.new_draw()
    args["cases"] = cases.GRADE_CASES if args["draw"] == "public" else cases.draw_grade_cases(args["draw"])
    if args["merge"]:
        if len(rest) < 2:
            raise Usage("usage: grade_class.py --merge GRADES SHARD_GRADES ... (the folders --shard wrote)")
        args["grades"], args["shards"] = rest[0], rest[1:]
    else:
        if len(rest) != 2:
            raise Usage("usage: grade_class.py [-j N] [--shard I/N] [--points P1,...,P7] [--timeout S] "
                        "[--build DIR] SUBMISSIONS GRADES")
        args["submissions"], args["grades"] = rest
    check_new_folder(args["grades"])
    return args


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(submissions.MAX_BYTES + 1)
    except OSError as e:
        raise Usage("cannot read %s: %s" % (path, e.strerror))


def look_alike(args, rows):
    """The similarity check's result for the class's rows (similarity.look_alike), with the
    earlier terms' labs; None when it is left out."""
    if not args["similarity"]:
        return None
    earlier = []
    for folder in args["similar_to"]:
        for s in submissions.find_students(folder):
            if s.problem() is None:
                earlier.append(("%s (%s)" % (s.label, os.path.basename(os.path.normpath(folder))),
                                similarity.own_code(s.text, args["template"])))
    labs = [(gradebook.name_of(r), [tuple(x) for x in r["own_code"]]) for r in rows if r.get("own_code")]
    return similarity.look_alike(labs, earlier)


def check_new_folder(path):
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise Usage("GRADES %r exists and is not an empty folder: name a new one, or remove it first "
                    "(rm -r %s)" % (path, path))
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise Usage("GRADES %r: its folder %s does not exist" % (path, parent))


# --- the build, once per class ------------------------------------------------------------

def prepare(build):
    """Builds the runner and what it loads, and reads how to compile and link a lab as a
    module. Returns (paths, compile command as a list, seconds it took)."""
    started = time.monotonic()
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        raise Usage("no configured build at %s: run the README's build first (cmake --preset default), or "
                    "name one with --build" % build)
    made = subprocess.run(["cmake", "--build", build, "--target", "lab04_class_runner"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if made.returncode != 0:
        raise Usage("the build at %s could not build the grader's runner: %s" % (
            build, (made.stdout.strip().splitlines() or ["no output"])[-1][:200]))
    paths = {}
    with open(os.path.join(build, "lab04_paths.txt")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            paths[key] = value
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    target = os.path.normpath(paths["module_object"])

    def words_of(e):
        return e["arguments"] if "arguments" in e else shlex.split(e["command"])

    def output_of(e):
        w = words_of(e)
        return os.path.normpath(os.path.join(e["directory"], w[w.index("-o") + 1])) if "-o" in w[:-1] else None
    entry = next((e for e in entries if output_of(e) == target), None)
    if entry is None:
        raise Usage("the build at %s does not say how it compiles the lab as a module (compile_commands.json): "
                    "configure it again (cmake --preset default)" % build)
    words = words_of(entry)
    command, skip = [], 0
    for w in words:  # the lesson's own command, less its file names and Ninja's depfile
        if skip:
            skip -= 1
        elif w in ("-o", "-c", "-MT", "-MF"):
            skip = 1
        elif w not in ("-MD", "-MMD"):
            command.append(w)
    return paths, (entry["directory"], command), time.monotonic() - started


# --- one student ---------------------------------------------------------------------------

class Worker:
    """A worker's state: its runner (LibTorch loaded once; root only) and its explainer."""
    runner = None
    explainer = None
    compiler_prefix = []
    compile_isolation = "none"  # COMPILE_ISOLATION's keys: how each compile is isolated here
    hidden = []  # what else each run must not see (--hide)


# How a compile is isolated, as a row's "compile_isolation" says it, and in words.
COMPILE_ISOLATION = {
    "user": "the compile ran as that user, in a root of its own that holds the system's files and the lab alone",
    "bwrap": "the compile ran in bubblewrap, in a root that holds the system's files and the lab alone",
    "none": "the compile was NOT isolated: it ran with the grader's rights and could read what the grader can "
            "(as root, or where bubblewrap can make user namespaces, it is isolated)",
}


def start_worker(paths, hidden=()):
    import diagnosis
    from mistakes import MISTAKES
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process stops the class
    Worker.explainer = diagnosis.Explainer(MISTAKES)
    Worker.paths = paths
    Worker.hidden = list(hidden)
    if os.geteuid() == 0 and os.environ.get("LAB_SANDBOX", "user") == "user":
        try:
            Worker.runner = runner_client.Runner(paths["class_runner"], paths["runtime"])
            Worker.compiler_prefix = ["setpriv", "--reuid=%d" % Worker.runner.uid, "--regid=%d" % Worker.runner.uid,
                                      "--clear-groups", "--no-new-privs", "--"]
            if sandbox.user_cannot_run(Worker.runner.uid):
                Worker.runner.close()
                Worker.runner, Worker.compiler_prefix = None, []
        except sandbox.Refused:
            Worker.runner = None
    if Worker.compiler_prefix:
        Worker.compile_isolation = "user"
    elif os.environ.get("LAB_SANDBOX", "") != "none" and sandbox.bwrap_works():
        Worker.compile_isolation = "bwrap"  # not root, or root with no user of its own
    else:
        Worker.compile_isolation = "none"


# As root, the compile runs as the sandbox's user in a root of its own (a mount namespace): the
# system's programs, libraries and headers (/usr, /etc), the precompiled header's files, the
# lab's own folder, an empty /tmp, /dev/null and its kin, and a /proc that shows only its own
# processes. Nothing else is there: not the lesson, not the build's compiled lesson, not the
# class, not the grader's files. #include or .incbin of any of them finds no file.
COMPILE_ROOT = r"""set -e
new=$1 work=$2 hidepid=$3 links=$4; shift 4
mount -t tmpfs -o size=64m,mode=755 lab04-compile "$new"
cd "$new"
mkdir usr etc dev proc && mkdir -m 1777 tmp && touch dev/null dev/zero dev/random dev/urandom
[ -z "$links" ] || cp -P $links "$new/"
mount --rbind /usr usr && mount --rbind /etc etc
for n in null zero random urandom; do mount --bind "/dev/$n" "dev/$n"; done
mount -t proc -o hidepid="$hidepid" proc proc
while [ "$1" != -- ]; do
  if [ ! -e "$new$1" ]; then  # (a file in a folder kept already is there)
    if [ -d "$1" ]; then mkdir -p "$new$1"; else mkdir -p "$new${1%/*}"; : >"$new$1"; fi
    mount --bind "$1" "$new$1"
  fi
  shift
done
shift
exec chroot "$new" env -C "$work" "$@"
"""
SYSTEM_LINKS = [d for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32") if os.path.islink(d)]
SYSTEM_FOLDERS = [d for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # where /usr is not merged
                  if os.path.isdir(d) and not os.path.islink(d)]


def compile_needs(command):
    """What a compile command needs beyond the system's files: the folder of each file it names
    (the precompiled header's: the PCH checks the files it was built from), and the files its
    header includes by their paths. All the compile may see of the project and its build."""
    needed = set()
    for w in command:
        if w.startswith("/") and not w.startswith(("/usr/", "/etc/")) and os.path.isfile(w):
            needed.add(os.path.dirname(os.path.realpath(w)))
            if w.endswith((".hxx", ".h")):
                with open(w, errors="replace") as f:  # cmake_pch.hxx: #include "/abs/path"
                    needed.update(os.path.realpath(m) for m in re.findall(r'^#include "(/[^"]+)"', f.read(), re.M)
                                  if os.path.isfile(m))
    return sorted(needed)


def bwrap_root(work, command):
    """bubblewrap's command line for a compile without root: a root of its own with the system's
    programs, libraries and headers (/usr, /etc), the precompiled header's files, the lab's
    folder and an empty /tmp; no network, no other processes. The checkout, its .git, the
    runner's home and its job's files are not there."""
    line = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
            "--ro-bind", "/etc", "/etc"]
    for link in SYSTEM_LINKS:
        line += ["--symlink", os.readlink(link), link]
    for folder in SYSTEM_FOLDERS + compile_needs(command):
        line += ["--ro-bind", folder, folder]
    return line + ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", work, work, "--chdir", work, "--"]


def compile_lab(text, work, compile_command, paths):
    """Compiles and links the lab (its text, as the grader read it) as a module in work, within
    the compile's limits: (module path, None), or (None, (status, errors)) with status "did
    not compile", "did not compile (limit)", or "grader error" (killed from outside, twice)."""
    directory, command = compile_command
    lab = os.path.join(work, "lab04_attention.cpp")
    with open(lab, "w", encoding="utf-8") as f:
        f.write(text)
    prefix = Worker.compiler_prefix
    if prefix:  # the compiler reads the student's file, so it runs as the student's user id
        os.chown(work, Worker.runner.uid, Worker.runner.uid)
        os.chown(lab, Worker.runner.uid, Worker.runner.uid)
        if Worker.runner.own_proc:
            new = os.path.join(os.path.dirname(work), "root")
            os.mkdir(new, 0o755)
            prefix = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", COMPILE_ROOT, "sh", new,
                      work, Worker.runner.own_proc, " ".join(SYSTEM_LINKS)] + SYSTEM_FOLDERS + \
                compile_needs(command) + [work, "--"] + prefix
    elif Worker.compile_isolation == "bwrap":
        prefix = bwrap_root(work, command)
    limits = ["prlimit", "--as=%d" % COMPILE_MEMORY, "--cpu=%d" % COMPILE_CPU, "--fsize=%d" % COMPILE_FILE,
              "--core=0", "--"]
    steps = [command + ["-o", "lab04_attention.o", "-c", "lab04_attention.cpp"],
             paths["module_link"].split() + ["-o", "lab04_module.so", "lab04_attention.o"]]
    # Both steps in one sandbox (its root costs about 25 ms to make), each within the limits.
    both = prefix + ["sh", "-c", " && ".join(shlex.join(limits + step) for step in steps)]
    status, output, limit = run_compiler(both, work)
    if limit == KILLED:  # once more: a kill from outside is no limit of the student's
        time.sleep(1)
        status, output, limit = run_compiler(both, work)
        if limit == KILLED:
            return None, ("grader error", "the compile was killed twice by a signal none of its limits sends "
                          "(the system's out-of-memory killer, say)")
    if limit:
        return None, ("did not compile (limit)", "lab04_attention.cpp: the compile %s, and was stopped (its limits: "
                      "%d s, %d s of CPU, %d GiB of memory, %d kB of messages, files of %d MB)" % (
                          limit, COMPILE_TIMEOUT, COMPILE_CPU, COMPILE_MEMORY >> 30, COMPILER_OUTPUT >> 10,
                          COMPILE_FILE >> 20))
    if status != 0:
        text = output.decode("utf-8", "replace").replace(work + "/", "")
        return None, ("did not compile", trim_crash(text))
    return os.path.join(work, "lab04_module.so"), None


def run_compiler(command, work):
    """Runs one step of the compile: (exit status, its messages, None) or, when it broke a
    limit, (status, messages, what it did). Its messages are read as they come, up to
    COMPILER_OUTPUT bytes: past that, or past COMPILE_TIMEOUT, it is stopped."""
    import select
    process = subprocess.Popen(command, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True,
                               env=dict(os.environ, TMPDIR=work))  # a crash's reproducer files: removed with it
    deadline, chunks, size, limit = time.monotonic() + COMPILE_TIMEOUT, [], 0, None
    with process.stdout:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                limit = "took longer than %d s" % COMPILE_TIMEOUT
                break
            ready, _, _ = select.select([process.stdout], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > COMPILER_OUTPUT:
                limit = "wrote more than %d kB of messages" % (COMPILER_OUTPUT >> 10)
                break
    if limit:
        stop_compiler(process)
        return process.wait(), b"".join(chunks)[:COMPILER_OUTPUT], limit
    try:
        status = process.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        stop_compiler(process)
        return process.wait(), b"".join(chunks), "took longer than %d s" % COMPILE_TIMEOUT
    output = b"".join(chunks)
    if 128 < status < 128 + 65:  # the shell that runs the steps says a step's signal so
        status = -(status - 128)
    if status == -signal.SIGXCPU:
        return status, output, "used more than %d s of CPU" % COMPILE_CPU
    if status == -signal.SIGXFSZ:
        return status, output, "wrote a file larger than %d MB" % (COMPILE_FILE >> 20)
    if status != 0 and OUT_OF_MEMORY.search(output):  # its address space: the allocation fails
        return status, output, "ran out of its %d GiB of memory" % (COMPILE_MEMORY >> 30)
    if status == -signal.SIGKILL:  # not a limit of its own (those are signals it can name, or ENOMEM)
        return status, output, KILLED
    return status, output, None


KILLED = "was killed from outside"  # by no limit of the compile's: the system's OOM killer, an operator
OUT_OF_MEMORY = re.compile(rb"out of memory|std::bad_alloc|Cannot allocate memory|memory exhausted")


def stop_compiler(process):
    """Kills a compile and every process it started (as the sandbox's user: all of that user's)."""
    if Worker.runner:
        sandbox.kill_user(Worker.runner.uid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


def trim_crash(text):
    """The compiler's messages, less a crash's stack dump and reproducer notes (the grader's
    paths and clang's internals, which help no student): what came before, and one line."""
    cut = re.search(r"^(PLEASE submit a bug report|Stack dump:|clang(\+\+)?: error: clang frontend command failed)",
                    text, re.M)
    if not cut:
        return text
    return text[:cut.start()] + "the compiler itself crashed on this code (its own fault, not an error in C++): " \
        "change what the last message points at\n"


def grade_student(job):
    """Grades one student: the row of the gradebook (gradebook.py), with its feedback. An error
    of the grader's own, or grading past the student's budget, costs this row (status
    "grader error": not graded), never the class."""
    student, compile_command, points, timeout, texts, template = job

    def over_budget(*_):
        raise OverBudget("grading this lab took longer than its budget of %d s" % budget)
    budget = grader_budget(timeout, len(texts))
    signal.signal(signal.SIGALRM, over_budget)
    signal.alarm(budget)
    try:
        return grade_one(student, compile_command, points, timeout, texts, template)
    except Exception as e:  # pylint: disable=broad-except
        if Worker.runner:  # its answer may be half read: the next lab gets a new runner
            Worker.runner.close_process()
        return grader_error(student, points, "%s: %s" % (type(e).__name__, str(e)[:300]))
    finally:
        signal.alarm(0)


def grader_error(student, points, why):
    return new_row(student, points, status="grader error", diagnosis=why,
                   feedback=["Not graded: the grader could not grade this lab (%s). This is not your grade: "
                             "your instructor will look at it." % why])


def new_row(student, points, **fields):
    """A row of the gradebook (gradebook.py), no points earned yet."""
    row = {"student": student.name, "id": student.id, "label": student.label, "score": 0.0, "max_score": sum(points), "steps": [0.0] * 7, "right": [False] * 7, "status": "",
           "diagnosis": "", "mistake": None, "feedback": [], "compile_isolation": Worker.compile_isolation}
    row.update(fields)
    return row


def grade_one(student, compile_command, points, timeout, texts, template=frozenset()):
    import compare
    import diagnosis
    import running
    import verdict
    from mistakes import MISTAKES
    row = new_row(student, points)
    problem = student.problem()
    if problem:
        row["status"], row["diagnosis"] = problem
        row["feedback"] = ["Not graded: %s." % problem[1]]
        return row
    row["own_code"] = similarity.own_code(student.text, template)  # what the summary compares
    # The staged lab: a folder only the grader and this student's sandbox user can enter, in one
    # that others may cross but not list (and, as root, the compile's root beside it).
    top = tempfile.mkdtemp(prefix="lab04-class-")
    os.chmod(top, 0o711)
    work = os.path.join(top, "lab")
    os.mkdir(work, 0o700)
    clock = time.monotonic()
    try:
        module, failed = compile_lab(student.text, work, compile_command, Worker.paths)
        row["seconds"] = {"compile": time.monotonic() - clock}
        if module is None and failed[0] == "grader error":
            return grader_error(student, points, failed[1])
        if module is None and not students_own(*failed) and not control_compiles(compile_command):
            lines = failed[1].strip().splitlines()
            return grader_error(student, points, "the compile failed, and not on the lab's code: %s"
                                % (lines[0] if lines else "no message")[:300])
        if module is None:
            lines = failed[1].strip().splitlines()
            first = next((l for l in lines if "error" in l), lines[0] if lines else "no message")
            row["status"], row["diagnosis"] = failed[0], first[:300]
            row["feedback"] = ["Your lab did not compile. The compiler said:", ""] + lines[:COMPILER_LINES] + (
                ["... (%d more lines)" % (len(lines) - COMPILER_LINES)] if len(lines) > COMPILER_LINES else [])
            return row
        if Worker.runner:
            box = runner_client.ForkedBox(Worker.runner, module, hidden=[student.folder, ROOT] + Worker.hidden)
        else:
            box = runner_client.ServedBox(Worker.paths["class_runner"], module, Worker.paths["runtime"])
        row["isolation"] = re.sub(r"user id \d+ of its own", "a user id of its own", box.isolation) + "; " + \
            COMPILE_ISOLATION[Worker.compile_isolation]
        clock = time.monotonic()
        try:
            results, not_run = verdict.run_cases(lambda case: running.run_case(box, case, timeout, "lab04_attention"),
                                                 texts)
        finally:
            box.close()
        score, total, grades, parts, report = verdict.grade_lines(results, not_run, points)
        problems = [line for line in map(verdict.problem_line, results) if line]
        row["seconds"]["grade"] = time.monotonic() - clock
        clock = time.monotonic()
        row["score"], row["steps"] = score, [points[n - 1] if grades[n] is None else 0.0 for n in range(1, 8)]
        row["status"] = status_of(results)
        row["step_lines"] = [parts[n] for n in range(1, 8)]
        row["right"] = [grades[n] is None for n in range(1, 8)]
        lines = []
        if row["status"] != "graded":  # it did not run to the end: what happened is the diagnosis
            row["diagnosis"] = problems[0]
        elif any(compare.blank_step(r["out"]) for r in results):
            row["blank"] = min(b for b in (compare.blank_step(r["out"]) for r in results) if b)
            row["diagnosis"] = "STEP %d is not written yet (the starter's TODO)" % row["blank"]
        elif not all(r["ok"] for r in results):
            lines, row["mistake"] = diagnosis.diagnose(results, MISTAKES, Worker.explainer)
            row["same_tensor"], row["diagnosis"] = diagnosis.parts(lines)
            if not row["mistake"]:
                row["wrong_numbers"] = wrong_numbers(results)
        row.setdefault("same_tensor", [])
        row["seconds"]["diagnosis"] = time.monotonic() - clock
        row["feedback"] = ["Your grade, step by step (each STEP judged on your lab's own numbers):", ""] + \
            problems + report + ([""] + lines if lines else [])
        return row
    finally:
        sandbox.remove_tree(top)
        if Worker.runner:  # what the compiler, as the student's user, left in /tmp and the like
            sandbox.remove_files_of(Worker.runner.uid)


def wrong_numbers(results):
    """What a lab printed where it first went wrong, in each case it got wrong, as a value two
    labs share only when they printed the same numbers there: {step, name, key}, or None (no
    tensor to compare: a wrong exit status, a STEP 8). The summary groups labs by it."""
    import hashlib
    import compare
    import grading
    parts = []
    for r in results:
        block = (r.get("blocks") or {}).get(r.get("name")) if not r["ok"] else None
        if isinstance(block, dict) and grading.full(block) is not None and not grading.not_numbers(
                block["values"], compare.expected_of(cases.parse_case(r["text"]), r.get("of_head", 0))[r["name"]]):
            # (NaN is no number: two labs that print NaN printed nothing alike)
            parts.append((r["text"], r["step"], r["name"], r.get("of_head", 0), tuple(block["shape"]),
                          block["values"].tolist()))
    if not parts:
        return None
    return {"step": parts[0][1], "name": parts[0][2], "key": hashlib.sha256(repr(parts).encode()).hexdigest()[:20]}


def control_compiles(compile_command):
    """Whether the project's own lab04_attention.cpp compiles through the same path just now:
    when it does, a failed compile whose messages do not name the lab (an .incbin, an #include
    of a file it cannot have) is the student's; when it does not, the fault is the grader's."""
    top = tempfile.mkdtemp(prefix="lab04-control-")
    try:
        os.chmod(top, 0o711)
        work = os.path.join(top, "lab")
        os.mkdir(work, 0o700)
        with open(os.path.join(ROOT, "lab04_attention.cpp"), encoding="utf-8") as f:
            module, _ = compile_lab(f.read(), work, compile_command, Worker.paths)
        return module is not None
    finally:
        sandbox.remove_tree(top)


def students_own(status, errors):
    """Whether a failed compile is the student's: a limit stopped it, or the compiler's
    messages name the lab's file (an error in it, a file it includes) or its object. A failure
    that names neither (a precompiled header the grader cannot read, a missing compiler) is
    the grader's own."""
    return status == "did not compile (limit)" or bool(re.search(r"lab04_attention\.(cpp|o)\b", errors))


def status_of(results):
    """The row's status from how its runs ended (running.ENDINGS), the worst first."""
    import running
    endings = {r["ended"] for r in results}
    for ending, status in ((running.TIMED_OUT, "timed out"), (running.CRASHED, "crashed"),
                           (running.TOO_MUCH_OUTPUT, "too much output"), (running.SILENT, "failed to run")):
        if ending in endings:
            return status
    return "graded"


# --- the class ----------------------------------------------------------------------------

def progress(done, total, started, tty):
    if not tty:
        return
    elapsed = time.monotonic() - started
    left = ", about %d s left" % (elapsed / done * (total - done) + 0.5) if done else ""
    sys.stderr.write("\rgrade_class: graded %d of %d%s   " % (done, total, left))
    sys.stderr.flush()


def grade(args):
    import multiprocessing
    import reference_attention
    students = args["students"]
    i, n = args["shard"]
    mine = students[i - 1::n]
    tty = sys.stderr.isatty()
    if tty:
        sys.stderr.write("grade_class: %d students; building the grader (once: the runner and LibTorch's "
                         "inline code)...\n" % len(mine))
    refuse_closed_folders(args["build"])
    paths, compile_command, build_time = prepare(args["build"])
    # The references, once for the class: computed here, the workers inherit them. On one
    # thread: LibTorch 2.6 and later leave a forked child waiting forever on the thread pool of
    # a parent that ran an operation on several (seen on Debian 13 and testing); the workers
    # then run on one thread each, one per core.
    import torch
    torch.set_num_threads(1)
    for text in args["cases"]:
        c = cases.parse_case(text)
        reference_attention.attention(c["seed"], c["tokens"], c["embed"], c["head"], scale=c["scale"], mask=c["mask"],
                                      heads=c["heads"])
    started = time.monotonic()
    rows = []
    jobs = [(s, compile_command, args["points"], args["timeout"], args["cases"], args["template"]) for s in mine]
    context = multiprocessing.get_context("fork")
    with context.Pool(min(args["jobs"], max(len(jobs), 1)), start_worker, (paths, args["hide"])) as pool:
        preflight(pool, compile_command, args, full=not args["gradescope"])
        progress(0, len(jobs), started, tty)
        results = pool.imap_unordered(grade_student, jobs)
        # A lab's grade is bounded (its compile, its runs' time limits): a worker silent for
        # longer has stopped, and the class ends with that said rather than waiting forever.
        patience = 2 * COMPILE_TIMEOUT + len(args["cases"]) * (args["timeout"] + 10) + 120
        while len(rows) < len(jobs):
            try:
                rows.append(results.next(timeout=patience))
            except multiprocessing.TimeoutError:
                raise RuntimeError("a worker gave no grade for %d s: %d of %d students graded, nothing written"
                                   % (patience, len(rows), len(jobs)))
            progress(len(rows), len(jobs), started, tty)
    seconds = time.monotonic() - started
    by_key = {(s.name, s.id): s for s in mine}
    for row in rows:
        deadlines.mark(row, by_key[(row["student"], row["id"])], args["deadline"], args["penalty"],
                       graded=row["status"] not in gradebook.NOT_GRADED)
    if tty:
        sys.stderr.write("\rgrade_class: graded %d students in %.1f s (%.2f s each, %d at once; the build "
                         "before: %.1f s)\n" % (len(rows), seconds, seconds / max(len(rows), 1), args["jobs"], build_time))
    meta = {"cases": args["cases"], "draw": args["draw"], "points": args["points"], "shard": "%d/%d" % (i, n),
            "similarity": look_alike(args, rows) if n == 1 else None,
            "class": [s.label for s in students],
            "deadline": args["deadline"].isoformat() if args["deadline"] else None, "late_penalty": str(args["penalty"])}
    written = gradebook.write(args["grades"], rows, meta, args["exports"])
    if args["gradescope"] and rows[0]["status"] != "grader error":
        gradebook.gradescope_results(rows[0], args["points"], args["gradescope"], meta)
    return written


def the_class(args):
    """The students to grade: the class in SUBMISSIONS, or with --gradescope the one submission."""
    folder = args["submissions"]
    if not args["gradescope"]:
        students = submissions.find_students(folder)
        for s in students if args["deadline"] else ():  # a cloned repository, as it was at the deadline
            if s.own and deadlines.is_repository(s.own):
                try:
                    s.snapshot = deadlines.at_deadline(s.own, args["deadline"])
                except deadlines.Unreadable as e:
                    s.unreadable = str(e)
        return students
    if not os.path.isdir(folder):
        raise Usage("no folder %r: with --gradescope, SUBMISSIONS is the submission's folder" % folder)
    labs, too_large = submissions.search(folder)
    student = submissions.Student("the submission", labs[:1], "Gradescope submission", folder=folder, own=folder)
    student.too_large = too_large
    return [student]


def preflight(pool, compile_command, args, full=True):
    """Grades the lesson through the students' own path (a worker: its user, compiler command,
    header, runner and sandbox); unless it earns full marks (or, not full, runs to the end),
    the class is refused."""
    lesson = submissions.Student("the lesson", [os.path.join(ROOT, "lab04_attention.cpp")], "pre-flight")
    row = pool.apply(grade_student, ((lesson, compile_command, args["points"], args["timeout"], args["cases"],
                                      frozenset()),))
    if row["status"] != "graded" or (full and row["score"] != row["max_score"]):
        raise Usage("pre-flight: the lesson (%s) graded %s/%s through the students' path on the class's cases (%s: %s), "
                    "so no student's grade could be trusted; nothing was graded" % (
                        os.path.join(ROOT, "lab04_attention.cpp"), gradebook.fmt(row["score"]),
                        gradebook.fmt(row["max_score"]), row["status"], " ".join(row["diagnosis"].split())[:300]))


def refuse_closed_folders(build):
    """As root, each lab is compiled and run as a user of its own, which must enter the build
    folder and the project's: a folder above them that other users cannot enter is refused
    here, with how to fix it, rather than found by every student's compile."""
    if os.geteuid() != 0 or os.environ.get("LAB_SANDBOX", "user") != "user" or not os.stat("/").st_mode & 0o001:
        return  # no user of its own here (sandbox.py says why in the summary)
    for top in (os.path.realpath(build), ROOT):
        folder = top
        while folder != "/":
            mode = os.stat(folder).st_mode
            if not mode & 0o001:
                raise Usage("the sandbox's user cannot enter %s (mode %o), which holds %s: as root each lab is "
                            "compiled and run as a user of its own, which needs it. Let other users enter it "
                            "(chmod o+x %s), or grade from a project in a folder they can enter"
                            % (folder, mode & 0o777, top, shlex.quote(folder)))
            folder = os.path.dirname(folder)


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.reconfigure(errors="backslashreplace")  # a terminal that cannot show a name still gets it
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    try:
        args = parse_args(argv)
        if args["merge"]:
            summary, faults = gradebook.merge(args["grades"], args["shards"], args["exports"],
                                              lambda rows: look_alike(args, rows))
        else:
            try:
                torch_python.with_torch()  # this Python, or one that sees Debian's packages
            except torch_python.NoTorch as e:
                raise Usage(str(e))
            args["students"] = the_class(args)  # bad input before anything is built
            summary, faults = grade(args)
        sys.stdout.write(summary)
        if faults:
            print("grade_class: %d student%s not graded because of an error of the grader's own (grader error in "
                  "grades.csv): the gradebook is incomplete; see summary.md" % (faults, "s" * (faults > 1)),
                  file=sys.stderr)
            return 1
        return 0
    except (Usage, gradebook.Mismatch, submissions.Bad, deadlines.Bad, lms.Bad) as e:
        print("grade_class: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of the grader's own: one line, never a traceback
        print("grade_class: internal error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
