#!/usr/bin/env python3
"""One student, one row: a class whose submissions stress the class grader is graded with each
student on a row of their own, as if alone, and nothing of one student reaches the next; a
grader that cannot grade says so and writes nothing, never a gradebook of zeros.

usage: one_student_one_row_test.py BUILD WORK_DIR
  BUILD     the project's build folder
  WORK_DIR  a folder to make the class in (emptied first)

The class (labs made from the lesson's text by make_class.py; what each row must say comes
from the lesson and the edit, never from the grader): the lesson; no scale; right output and
then a crash, or a hang (judged on what it printed: STEP 1 to 6 earned, STEP 7's exit status
lost); shapes of a hundred million rows claimed; files left in every place any user may write,
at any depth, and System V IPC; thirty processes burning CPU; two Moodle students named John
Smith and two Canvas students smithjohn (two rows each, told apart by the LMS's id); a folder
name that is not UTF-8 and one with a newline. Then: no file, IPC object or process of a
sandbox's user is left; and the grader refuses a setup it cannot grade (its precompiled
header unreadable to the sandbox's user, a build in a folder other users cannot enter) with
one line and exit 2, writing nothing. Runs inside a PID namespace of its own.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

import checklist
import make_class
import project

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")
PLACES = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# (folder or file name in the class, kind of lab) -> (student, id, score, status)
CLASS = {
    ("lesson", "lesson"): ("lesson", "", 7, "graded"),
    ("no_scale", "no_scale"): ("no_scale", "", 6, "graded"),
    ("aborts", "aborts_after_its_last_line"): ("aborts", "", 6, "crashed"),
    ("hangs", "hangs_after_its_last_line"): ("hangs", "", 6, "timed out"),
    ("lies", "claims_huge_shapes"): ("lies", "", None, "graded"),
    ("leaves", "leaves_files_and_ipc"): ("leaves", "", 7, "graded"),
    ("burns", "burns_cpu"): ("burns", "", None, None),  # slowed by its own processes: any grade
    ("John Smith_111_assignsubmission_file_", "lesson"): ("John Smith", "111", 7, "graded"),
    ("John Smith_222_assignsubmission_file_", "no_scale"): ("John Smith", "222", 6, "graded"),
    ("smithjohn_1001_5001_lab04_attention.cpp", "lesson"): ("smithjohn", "1001", 7, "graded"),
    ("smithjohn_1002_5002_lab04_attention.cpp", "no_scale"): ("smithjohn", "1002", 6, "graded"),
    (b"Jos\xe9_333_assignsubmission_file_", "lesson"): ("Jos\\xe9", "333", 7, "graded"),
    ("two\nlines", "no_scale"): ("two\\nlines", "", 6, "graded"),
    ("=HYPERLINK(\"evil\")", "lesson"): ("'=HYPERLINK(\"evil\")", "", 7, "graded"),
    ("escapes", "prints_escapes"): ("escapes", "", 0, "failed to run"),
}
# A folder this deep in a student's folder: past the search's bound, that row's status alone.
DEEP = 1100
DEEP_ROW = ("deep", "", 0, "folder too large")
# Submissions whose lab04_attention.cpp is a symbolic link: (folder, where the link points,
# relative to the folder) -> (student, id, score, status). SECRET: a file of root's, mode 644 in
# a folder of mode 700, made beside the class.
SECRET = "SECRET"
LINKS = {
    ("copies_lesson", "../lesson/lab04_attention.cpp"): ("copies_lesson", "", 0, "link outside the submission"),
    ("reads_root", SECRET): ("reads_root", "", 0, "link outside the submission"),
    ("links_inside", "src/mine.cpp"): ("links_inside", "", 6, "graded"),  # its own file: no_scale
}


def snooper(lesson, classmate):
    """A lab that looks, as it runs, for the lesson, a classmate's lab and its grader's command
    line, says on one line of stderr which it found, and exits 7 (so the row's diagnosis quotes it)."""
    return r"""#include <dirent.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
static bool readable(const char* path) { return bool(std::ifstream(path)); }
static bool sees_its_grader() {
  DIR* proc = opendir("/proc");
  bool seen = false;
  while (dirent* e = proc ? readdir(proc) : nullptr) {
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::stringstream text;
    text << f.rdbuf();
    seen = seen || text.str().find("grade_class") != std::string::npos;
  }
  if (proc) closedir(proc);
  return seen;
}
int main() {
  std::fprintf(stderr, "snooped: lesson=%%d classmate=%%d grader=%%d\n", readable("%s"), readable("%s"),
               sees_its_grader());
  return 7;
}
""" % (lesson, classmate)


def in_pid_namespace(argv):
    """Runs this test again inside a PID namespace of its own; None when it is there already.
    LAB04_ROWS_NAMESPACE says whether its mounts are its own (private) or may be seen outside
    (shared: a chroot whose / is no mount point cannot make them private)."""
    if os.environ.get("LAB04_ROWS_NAMESPACE"):
        return None
    for propagation in ("private", "unchanged"):
        isolate = ["unshare", "--pid", "--fork", "--mount-proc", "--propagation", propagation]
        if subprocess.run(isolate + ["true"], capture_output=True).returncode == 0:
            env = dict(os.environ, LAB04_ROWS_NAMESPACE="private" if propagation == "private" else "shared")
            return subprocess.run(isolate + [sys.executable, os.path.abspath(__file__)] + argv, env=env).returncode
    return "none"


def grade_class(build, *args):
    return subprocess.run([sys.executable, GRADE_CLASS, "--timeout", "5", "--build", build] + list(args),
                          capture_output=True)


# Students whose labs attack what a sandbox holds: left out where the lab is not isolated.
NEEDS_ISOLATION = {"leaves", "burns", "snoops", "includes_the_lesson", "includes_a_classmate"}


def make(folder, isolated):
    os.makedirs(folder)
    for (name, kind) in CLASS:
        if not isolated and name in NEEDS_ISOLATION:
            continue
        raw = name if isinstance(name, bytes) else name.encode()
        path = os.path.join(folder.encode(), raw)
        if not raw.endswith(b".cpp"):
            os.makedirs(path)
            path = os.path.join(path, b"lab04_attention.cpp")
        with open(path, "w") as f:
            f.write(make_class.lab_text(kind))
    secret = os.path.join(tempfile.mkdtemp(prefix="lab04-root-only-", dir=os.path.dirname(folder)), "secret.cpp")
    with open(secret, "w") as f:
        f.write("#error THE-SECRET-OF-ROOT\n")
    os.chmod(secret, 0o644)  # readable, but in a folder only root may enter
    make_deep(folder)
    if not isolated:
        return make_links(folder, secret)
    for name, path in (("includes_the_lesson", os.path.join(project.ROOT, "lab04_attention.cpp")),
                       ("includes_a_classmate", os.path.join(folder, "lesson", "lab04_attention.cpp"))):
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(folder, name, "lab04_attention.cpp"), "w") as f:
            f.write('#include "%s"\n' % path)
    os.makedirs(os.path.join(folder, "snoops"))
    with open(os.path.join(folder, "snoops", "lab04_attention.cpp"), "w") as f:
        f.write(snooper(os.path.join(project.ROOT, "lab04_attention.cpp"),
                        os.path.join(folder, "lesson", "lab04_attention.cpp")))
    make_links(folder, secret)


def make_deep(folder):
    """A student whose folder holds, beside the lesson, a folder DEEP levels deep (a walk that
    recurses ends the class there with a RecursionError)."""
    os.makedirs(os.path.join(folder, "deep"))
    with open(os.path.join(folder, "deep", "lab04_attention.cpp"), "w") as f:
        f.write(make_class.lab_text("lesson"))
    subprocess.run(["mkdir", "-p", os.path.join(folder, "deep", *(["d"] * DEEP))], check=True)  # (os.makedirs recurses)


def make_links(folder, secret):
    for name, target in LINKS:
        target = secret if target == SECRET else target
        student = os.path.join(folder, name)
        os.makedirs(os.path.join(student, "src"))
        with open(os.path.join(student, "src", "mine.cpp"), "w") as f:
            f.write(make_class.lab_text("no_scale"))
        os.symlink(target, os.path.join(student, "lab04_attention.cpp"))


def left_behind():
    """The files the class's labs leave (make_class.LEAVES names them left-*) in the places
    any user may write, at any depth."""
    found = subprocess.run(["find"] + list(PLACES) + ["-name", "left-*", "-prune", "-print"],
                           capture_output=True, text=True, errors="replace")  # (any depth: not os.walk)
    return found.stdout.split()


def ipc_of(uids):
    found = []
    for kind in ("shm", "sem", "msg"):
        with open("/proc/sysvipc/" + kind) as f:
            head, *rows = [line.split() for line in f]
        found += ["%s %s" % (kind, r[1]) for r in rows if int(r[head.index("uid")]) in uids]
    return found


def refused(done, grades, words):
    err = done.stderr.decode("utf-8", "replace")
    return (done.returncode == 2 and not done.stdout and err.count("\n") == 1 and words in err
            and not os.path.exists(grades)), (done.returncode, err[-600:], os.path.exists(grades))


def main(argv):
    if len(argv) != 2:
        print("one_student_one_row_test: usage: one_student_one_row_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    again = in_pid_namespace(argv)
    if isinstance(again, int):
        return again
    if again == "none" or os.geteuid() != 0:
        print("SKIPPED: needs root and a PID namespace (the class holds labs that fork, burn CPU and leave "
              "files behind, graded as a user of their own)")
        return 0
    from lab04.checker import sandbox
    from lab04.checker import isolation
    from lab04.checker import sandbox_users
    build, work = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    subprocess.run(["rm", "-rf", work])  # (a folder of the last run DEEP deep: not shutil.rmtree)
    os.makedirs(work)
    os.chmod(work, 0o755)
    shared = make_class.SHARED  # a folder of root's that anyone may write, as X11's is
    os.makedirs(shared, exist_ok=True)
    os.chmod(shared, 0o1777)
    checks = []
    uids = set(isolation.user_ids())
    box = sandbox.Sandbox("/bin/true")
    box.close()
    isolated = box.mode != "none"
    if not isolated:  # a chroot whose / other users cannot enter: the lab runs as the grader
        print("the labs that need isolation (%s) are left out: %s" % (", ".join(sorted(NEEDS_ISOLATION)), box.isolation))

    submissions, grades = os.path.join(work, "class"), os.path.join(work, "grades")
    make(submissions, isolated)
    done = grade_class(build, submissions, grades)
    if done.returncode == 2 and b"cannot enter" in done.stderr:  # a project in a folder of mode 700, as root
        print("SKIPPED: the class grader refuses this build: " + done.stderr.decode("utf-8", "replace").strip())
        return 0
    checks.append(("the class is graded: exit 0, its summary printed", done.returncode == 0 and
                   done.stdout.startswith(b"# Lab 04"), done.stderr.decode("utf-8", "replace")[-2000:]))
    if done.returncode != 0:
        return checklist.report(checks)
    with open(os.path.join(grades, "grades.csv"), newline="", encoding="utf-8") as f:  # strict: UTF-8 or an error
        rows = list(csv.DictReader(f))
    got = sorted((r["student"], r.get("id", "")) for r in rows)
    extra = sorted(NEEDS_ISOLATION - {name for name, _ in CLASS}) if isolated else []
    want = sorted([(s, i) for (n, _), (s, i, _, _) in list(CLASS.items()) + list(LINKS.items())
                   if isolated or n not in NEEDS_ISOLATION] + [(n, "") for n in extra] + [DEEP_ROW[:2]])
    checks.append(("every student has a row of their own, named by the LMS's id where names collide",
                   got == want, (got, want)))
    by_key = {(r["student"], r.get("id", "")): r for r in rows}
    wrong = []
    for (name, kind), (student, ident, score, status) in list(CLASS.items()) + list(LINKS.items()) + [
            (("deep", "lesson beside a folder %d deep" % DEEP), DEEP_ROW)]:
        if not isolated and name in NEEDS_ISOLATION:
            continue
        r = by_key.get((student, ident), {})
        if not r or (status is not None and r.get("status") != status) or \
                (score is not None and float(r.get("score", -1)) != score):
            wrong.append("%s (%s): %s %s, expected %s %s" % (student, kind, r.get("score"), r.get("status"), score, status))
    checks.append(("each row has its lab's score and status, as if graded alone", not wrong, wrong))
    after = [by_key.get((student, ""), {}) for student in ("aborts", "hangs")]
    checks.append(("right output, then a crash or a hang: STEP 1 to 6 earned on what it printed, STEP 7 lost",
                   all([r.get("STEP %d" % n) for n in range(1, 8)] == ["1"] * 6 + ["0"] for r in after), after))
    lies = by_key.get(("lies", ""), {})
    checks.append(("a lab that claims a hundred million rows is graded, its lying q wrong (STEP 2)",
                   lies.get("status") == "graded" and lies.get("STEP 2") == "0", lies))
    feedback = os.listdir(os.path.join(grades, "feedback"))
    checks.append(("a feedback file per row", len(feedback) == len(rows), (len(rows), sorted(feedback))))
    with open(os.path.join(grades, "summary.md"), encoding="utf-8") as f:
        summary = f.read()
    # What the summary's isolation line says the grader hid, it must have hidden (where root
    # may make namespaces; not in a container without them).
    if isolated and "hidden" in next((l for l in summary.splitlines() if l.startswith("Isolation:")), ""):
        included = [(n, by_key.get((n, ""), {}).get("score")) for n in ("includes_the_lesson", "includes_a_classmate")]
        checks.append(("a lab that #includes the lesson or a classmate's lab by its path earns nothing from it",
                       all(score == "0" for _, score in included), included))
        snoops = by_key.get(("snoops", ""), {}).get("diagnosis", "")
        checks.append(("a lab sees neither the lesson, nor a classmate's lab, nor its grader's command line",
                       "snooped: lesson=0 classmate=0 grader=0" in snoops, snoops))
    else:
        print("the checks of what is hidden are left out: the summary says nothing is hidden here")
    checks.append(("a name with a newline is one line of the summary, escaped",
                   "two\\nlines" in summary and "\ntwo\n" not in summary and "\nlines" not in summary, summary[-800:]))
    written = []
    for top, _, names in os.walk(grades):
        for n in names:
            with open(os.path.join(top, n), "rb") as f:
                written.append((n, f.read()))
    # (class.png is a picture drawn from counts, not text: its bytes may hold any value)
    raw = [n for n, data in written if not n.endswith(".png") and (b"\x1b" in data or b"\x07" in data)]
    leaked = [n for n, data in written if b"THE-SECRET-OF-ROOT" in data or b"lab04_attention.cpp:1:2: error" in data]
    checks.append(("a link out of a submission is not followed: no file of root's or a classmate's is read",
                   not leaked, leaked))
    checks.append(("no terminal escape from a lab's output reaches the gradebook, summary or feedback", not raw, raw))
    formulas = [r[c] for r in rows for c in r if r[c][:1] in ("=", "+", "-", "@")]
    checks.append(("no cell of grades.csv can start a formula", not formulas, formulas))
    if isolated:
        checks.append(("nothing a lab left is in /tmp, /var/tmp, /dev/shm or /run/lock, at any depth",
                       not left_behind() and not os.listdir(shared), left_behind()[:10] + os.listdir(shared)[:10]))
        checks.append(("no System V shared memory, semaphore or message queue of a sandbox's user is left",
                       not ipc_of(uids), ipc_of(uids)))
        left = sandbox_users.left_behind()
        checks.append(("no process of a sandbox's user is left (of the user ids no grader holds)", not left, left))

    # A setup that cannot grade is refused, with one line, before anything is written. The
    # mounts below must be this test's alone, or a test running beside it would meet them.
    if os.environ.get("LAB04_ROWS_NAMESPACE") != "private":
        print("the refusals are not tried: this test's mounts cannot be made private here")
        return checklist.report(checks)
    small = os.path.join(work, "small")
    os.makedirs(os.path.join(small, "one"))
    shutil.copy(os.path.join(project.ROOT, "lab04_attention.cpp"), os.path.join(small, "one"))
    closed = tempfile.mkdtemp(prefix="lab04-closed-")  # mode 700: root's alone
    os.chmod(closed, 0o700)
    # The compiler made a program the sandbox's user cannot run (mode 700): the build is up to
    # date, so only the students' path (their compile, as their user) meets the fault.
    with open(os.path.join(build, "compile_commands.json")) as f:
        compiler = shutil.which(json.load(f)[0]["command"].split()[0]) or ""
    root_only = os.path.join(closed, "root-only")
    with open(root_only, "w") as f:
        f.write("#!/bin/sh\nexit 99\n")
    os.chmod(root_only, 0o700)
    if compiler and subprocess.run(["mount", "--bind", root_only, compiler]).returncode == 0:
        out = os.path.join(work, "cannot-compile-grades")
        ok, why = refused(grade_class(build, small, out), out, "pre-flight")
        checks.append(("a compiler the sandbox's user cannot run: the pre-flight refuses the class, never a 0",
                       ok, why))
        subprocess.run(["umount", compiler])
    inside = os.path.join(closed, "build")
    os.makedirs(inside)
    if subprocess.run(["mount", "--bind", build, inside]).returncode == 0:
        # Refused, naming the folder, where labs run as a user of their own; elsewhere (a chroot
        # whose / other users cannot enter) graded right, or refused with one line all the same.
        out = os.path.join(work, "closed-grades")
        done = grade_class(inside, small, out)
        ok, why = refused(done, out, "cannot enter" if box.mode == "user" else "")
        if done.returncode == 0:
            with open(os.path.join(out, "grades.csv"), newline="") as f:
                ok = [(r["student"], r["score"]) for r in csv.DictReader(f)] == [("one", "7")]
                why = "graded: %s" % done.stdout[-600:]
        checks.append(("a build in a folder other users cannot enter: refused, saying which folder, or graded right",
                       ok, why))
        subprocess.run(["umount", inside])
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
