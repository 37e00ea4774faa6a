#!/usr/bin/env python3
"""autograder.py: grades one Classroom 50 submission of Lab 04 (self-attention) with the lab's
own class grader, and writes what Classroom 50's runner reads. Made by make_starter.py
--classroom50; the project beside it (project/) is the lab's, with the starter's lab.

Classroom 50's runner calls it with no arguments, in the student's checkout, with CLASSROOM,
ASSIGNMENT, SUBMISSION_TAG, COMMIT_URL and RELEASE_URL set (and REVIEW_URL, OWNER or USERNAME,
ASSIGNMENT_TYPE, which have fallbacks). It
  1. installs what the lab needs from the distribution's packages when they are missing (the
     assignment's runtime.json lists them for the runner's apt step),
  2. builds the project here (never the student's copy of the build or the checker),
  3. grades the checkout's lab04_attention.cpp as grade_class.py grades one submission: read
     once, then compiled and run in the sandbox as a user id of its own (as root: through sudo
     when the runner's user has it), every STEP judged on the lab's own numbers,
  4. writes ./result.json (classroom50/result/v1: integer points, a test per STEP with its
     line of the report as "message") and ./release-body.md (the grade step by step, the
     diagnosis, the compiler's messages).
A lab that is missing, does not compile, crashes or hangs is graded (0, or what it printed)
with the reason: exit 0, whatever the grade. A fault of the grader's own (the install, the
build, the grader itself) is never a grade: no result.json, one line on stderr, exit 1, which
the runner shows as an error for the instructor to see, never as a 0. Missing variables (not
run by Classroom 50's runner): one line naming them, exit 2.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.join(HERE, "project")
POINTS = [@POINTS@]  # each STEP's points: whole numbers, as Classroom 50's scores are
PACKAGES = "@PACKAGES@".split()  # the README's install line's packages
NEEDED = ["CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG", "COMMIT_URL", "RELEASE_URL"]
BODY_LIMIT = 60000  # characters of release-body.md (a GitHub release's text holds about 125,000)
# Where the student's compile cannot be isolated (not root, no sudo without a password, no user
# namespaces for bubblewrap): "refuse" grades nothing and says so; "grade" grades, saying so
# (make_starter.py --classroom50 --grade-unisolated).
UNISOLATED = "@UNISOLATED@"

sys.path.insert(0, PROJECT)  # the bundle's package, lab04/: the checker's file writers
from lab04.checker import files, platforms  # noqa: E402


class GraderFault(Exception):
    """The grader could not grade: exit 1, no result.json."""


def run(command, **kw):
    return subprocess.run(command, stdin=subprocess.DEVNULL, **kw)


def as_root(command):
    """command, through sudo when this user is not root and may use it without a password."""
    if os.geteuid() == 0 or not shutil.which("sudo"):
        return command
    if run(["sudo", "-n", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        return command
    return ["sudo", "-n", "--preserve-env=PATH,TMPDIR"] + command


def install():
    """The distribution's packages the lab needs, when any is missing."""
    missing = [p for p in PACKAGES if run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True,
                                          text=True).stdout.strip() != "install ok installed"]
    if not missing:
        return
    print("autograder: installing %s" % " ".join(missing), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends"] + missing):
        if run(as_root(step), env=env).returncode != 0:
            raise GraderFault("%s failed" % " ".join(step[:2]))


def build(folder):
    """The project's build, with the starter's lab, and the class grader's runner."""
    if not os.path.isfile(os.path.join(folder, "CMakeCache.txt")):
        configure = ["cmake", "-S", PROJECT, "-B", folder, "-G", "Ninja", "-DCMAKE_CXX_COMPILER=clang++"]
        if run(configure).returncode != 0:
            raise GraderFault("cmake could not configure the project")
    if run(["cmake", "--build", folder, "--target", "lab04_attention", "lab04_runner", "lab04_module"]).returncode != 0:
        raise GraderFault("the project did not build")


def open_to_others(paths):
    """As root the grader compiles and runs each lab as a user of its own, which must enter the
    project and its build: each folder that holds them gets o+x for the grade. Returns
    {folder: its mode before}, for close_again()."""
    closed = {}
    for path in list(paths) + [os.path.realpath(p) for p in paths]:  # (the way there, and where it is)
        while os.path.dirname(path) != path:
            mode = os.stat(path).st_mode & 0o7777
            if not mode & 0o001:
                closed[path] = mode
            path = os.path.dirname(path)
    if closed and (os.geteuid() == 0 or as_root(["true"]) != ["true"]):
        run(as_root(["chmod", "o+x"] + sorted(closed)))
        return closed
    return {}


def close_again(modes):
    """Gives each folder open_to_others() opened its mode back (the runner's home among them)."""
    for path, mode in sorted(modes.items()):
        run(as_root(["chmod", "%o" % mode, path]))


def cannot_isolate():
    """Why this runner cannot isolate a student's compile and run, or None when it can: as root,
    or through sudo without a password, a user of its own (which must be able to run programs
    here: a system whose folders are closed to other users, as some chroots are, lets it load
    nothing); as a user, bubblewrap (user namespaces). Where it cannot, the lab would read what
    this job can, its token among them."""
    from lab04.checker import sandbox  # the bundle's checker: what isolation can be had, and its probes
    if os.geteuid() == 0 or as_root(["true"]) != ["true"]:
        probe = run(as_root(sandbox.PROBES["user"]), cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode == 0:
            return None
        return ("no user of its own can run programs on this runner (its system's folders are closed to other "
                "users), so as root a lab would run with root's rights and read what this job can (its token, the "
                "checkout's .git)")
    if sandbox.bwrap_works():
        return None
    return ("the student's compile and run cannot be isolated on this runner: it is not root, has no sudo without a "
            "password, and bubblewrap cannot make user namespaces here, so a lab would read what this job can (its "
            "token, the checkout's .git)")


def hidden(folder):
    """What every run must not see beside the bundle: what the job keeps in $RUNNER_TEMP (its
    step scripts and environment files), all of it but the build."""
    temp = os.environ.get("RUNNER_TEMP")
    if not temp or not os.path.isdir(temp):
        return []
    keep = {os.path.realpath(p) for p in (PROJECT, folder)}
    hide = []
    for name in sorted(os.listdir(temp)):
        path = os.path.realpath(os.path.join(temp, name))
        if not any(k == path or k.startswith(path + os.sep) for k in keep):
            hide += ["--hide", os.path.join(temp, name)]
    return hide


def grade(checkout, folder, private):
    """The submission's row of the class grader's gradebook (grades/class.json), and the class's
    (the cases it was graded on: drawn anew for each grade, no student has seen them)."""
    grades = os.path.join(private, "grades")
    points = ",".join(str(p) for p in POINTS)
    command = as_root([os.path.join(PROJECT, "grader", "grade_class.py"), "--build", folder, "--jobs", "1",
                       "--points", points, "--hide", HERE] + hidden(folder) + [
                       "--gradescope", os.path.join(private, "gradescope.json"), checkout, grades])
    done = run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    try:
        with open(os.path.join(grades, "class.json")) as f:
            graded = json.load(f)
        row = graded["rows"][0]
    except (OSError, ValueError, KeyError, IndexError):
        raise GraderFault("the class grader wrote no grade (exit status %d)" % done.returncode)
    if done.returncode != 0 or row["status"] == "grader error":
        raise GraderFault("the class grader could not grade the lab (%s)" % (row.get("diagnosis") or
                                                                            "exit status %d" % done.returncode))
    return row, graded


def committed_at(checkout):
    """The graded commit's committer time in UTC (Classroom 50's "datetime"), or now."""
    done = run(["git", "-C", checkout, "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "rev-list", "-1",
                "--timestamp", "HEAD"], capture_output=True, text=True)
    first = done.stdout.split()[:1] if done.returncode == 0 else []
    stamp = int(first[0]) if first and first[0].isdigit() else None
    when = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc) if stamp else datetime.datetime.now(
        datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def result_of(row, env, checkout):
    """result.json for the row (class.json's), as platforms.classroom50 writes it."""
    grade = platforms.Grade(
        score=float(row.get("score") or 0), points=POINTS, earned=[float(p) for p in row.get("steps") or [0] * len(POINTS)],
        right=row.get("right") or [False] * len(POINTS), lines=dict(enumerate(row.get("step_lines") or [], 1)),
        output="\n".join(row.get("feedback") or []), status=row["status"], why=row["diagnosis"])
    owner = env.get("OWNER") or env.get("USERNAME") or env.get("GITHUB_ACTOR") or ""
    return platforms.classroom50(grade, {
        "classroom": env["CLASSROOM"], "assignment": env["ASSIGNMENT"],
        "assignment_type": env.get("ASSIGNMENT_TYPE") or "individual", "owner": owner,
        "submission": env["SUBMISSION_TAG"], "commit": env["COMMIT_URL"], "release": env["RELEASE_URL"],
        "review": env.get("REVIEW_URL") or env["COMMIT_URL"], "datetime": committed_at(checkout)})


def fence(text):
    """A Markdown code fence longer than any run of backticks in text."""
    longest, run_ = 0, 0
    for c in text:
        run_ = run_ + 1 if c == "`" else 0
        longest = max(longest, run_)
    return "`" * max(3, longest + 1)


def release_body(result, row, graded):
    lines = ["### Lab 04, self-attention: %d/%d (%s)" % (result["score"], result["max-score"], row["status"]), "",
             "| STEP | points | |", "|---|---|---|"]
    for t in result["tests"]:
        lines.append("| %s | %d/%d | %s |" % (t["test-name"], t["score"], t["max-score"], "right" if t["passed"] else "not right"))
    feedback = "\n".join(row.get("feedback") or [])
    if len(feedback) > BODY_LIMIT:
        feedback = feedback[:BODY_LIMIT] + "\n... (cut here: the whole report is in the grade job's log)"
    mark = fence(feedback)
    drawn = "Each STEP is judged on your lab's own numbers, in cases drawn for this grade (draw %s): %s." % (
        graded.get("draw"), " ".join(graded.get("cases") or []))
    return "\n".join(lines + ["", drawn, "", mark, feedback, mark, ""])


def write(path, text):
    """Writes path anew (files.py, the checker's: whole, through a file of its own, a link the
    checkout left at path or path.new removed, never followed); a folder the checkout left at
    path goes first."""
    if os.path.isdir(path) and not os.path.islink(path):
        files.remove(path)
    files.write_text(path, text)


def main():
    env = os.environ
    missing = [name for name in NEEDED if not env.get(name)]
    if missing:
        print("autograder: %s not set: Classroom 50's runner sets them; to try it by hand, set %s" % (
            ", ".join(missing), ", ".join(NEEDED)), file=sys.stderr)
        return 2
    checkout = os.getcwd()
    for name in ("result.json", "release-body.md"):  # nothing of an earlier run, or of the student's, counts
        files.remove(os.path.join(checkout, name))
    private = tempfile.mkdtemp(prefix="lab04-classroom50-")
    folder = os.path.join(env.get("RUNNER_TEMP") or tempfile.gettempdir(), "lab04-build")
    opened = {}
    try:
        install()
        note = cannot_isolate() or ""
        if note:
            if UNISOLATED != "grade":
                write(os.path.join(checkout, "release-body.md"), "Not graded: %s. To grade on such runners anyway, "
                      "make the autograder with make_starter.py --classroom50 --grade-unisolated.\n" % note)
                raise GraderFault(note)
            print("autograder: %s; graded anyway (--grade-unisolated)" % note, flush=True)
        build(folder)
        opened = open_to_others([PROJECT, folder])
        row, graded = grade(checkout, folder, private)
        result = result_of(row, env, checkout)
        body = release_body(result, row, graded)
        if note:
            body = "Isolation: NONE: %s; graded anyway (the instructor's setting).\n\n%s" % (note, body)
        write(os.path.join(checkout, "release-body.md"), body)
        write(os.path.join(checkout, "result.json"), json.dumps(result, indent=2) + "\n")
        print("autograder: %d/%d (%s); wrote result.json and release-body.md" % (
            result["score"], result["max-score"], row["status"]))
        return 0
    except GraderFault as e:
        print("autograder: NOT GRADED: %s. This is a fault of the grader, not the submission's grade: no "
              "result.json was written, so Classroom 50 shows an error for the instructor, never a 0." % e,
              file=sys.stderr)
        return 1
    finally:
        close_again(opened)
        run(as_root(["rm", "-rf", private]))


if __name__ == "__main__":
    sys.exit(main())
