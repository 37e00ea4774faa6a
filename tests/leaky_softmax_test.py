#!/usr/bin/env python3
"""The grade case whose softmax leaks (cases.py's leaky-softmax) runs with it, in every sandbox
the checker can choose: as root (a user id of its own), and as a user with bubblewrap, with
namespaces of its own and with none. There both checks of STEP 7 must say NO.

usage: leaky_softmax_test.py LESSON MUTANT WORK_DIR

LESSON is the lab; MUTANT the same lab with STEP 7's checks written in advance (sums_ok = true,
causal_ok = opt.mask), which no other case can tell from the lesson. In each sandbox
check_lab.py --grade, on the leaking case and one other, gives the lesson 7/7 and the mutant
6/7 (STEP 7 lost, STEP 5 right): a sandbox where the library did not load would give the mutant
7/7. The user runs a copy of checker/, of the run engine with its library and of both labs, in
a folder it can enter. Prints OK or NOT OK for each promise.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import checklist
import project

CASES = ["5,7,9,4,leaky-softmax", "3,4,6,6"]


def grade(checker, lab, user, mode=None, env=None):
    command = [sys.executable, os.path.join(checker, "check_lab.py"), "--grade", lab] + CASES
    if user:
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=" + user,
                   "LAB_SANDBOX=" + mode] + ["%s=%s" % kv for kv in env.items()] + command
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd="/",
                         env=dict(os.environ, **(env or {})))
    score = re.search(r"^score: (\d+)/7$", run.stdout, re.M)
    lost = re.findall(r"^STEP (\d)  .* 0/1", run.stdout, re.M)
    return (int(score.group(1)) if score else None), lost, run


def main(argv):
    if len(argv) != 3:
        print("leaky_softmax_test: usage: leaky_softmax_test.py LESSON MUTANT WORK_DIR", file=sys.stderr)
        return 2
    lesson, mutant, work = (os.path.abspath(a) for a in argv)
    runner = os.path.join(os.path.dirname(lesson), "lab04_runner")
    library = os.path.join(os.path.dirname(lesson), "lab04_leaky_softmax.so")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    checks = []
    kinds = [("as root", None)]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        cannot = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/bin/sh", "-c",
                                 "exit 0"], capture_output=True, text=True, cwd="/")
        if cannot.returncode == 0:
            kinds += [("as a user, LAB_SANDBOX=%s" % mode, mode) for mode in ("bwrap", "unshare", "none")]
        else:  # a root folder closed to other users (a chroot unpacked as some are): no user runs anything
            checks.append(("as a user: skipped, a user cannot run programs here (%s)"
                           % (cannot.stderr.strip().splitlines() or ["exit %d" % cannot.returncode])[-1][:120], True, ""))
    copy = tempfile.mkdtemp(prefix="lab04-leaky-test-")  # in /tmp: a user may enter it
    home = os.path.join(copy, "home")
    try:
        os.chmod(copy, 0o755)
        project.project_files.copy(project.ROOT, project.checker_files(), copy)
        build = os.path.join(copy, "build")
        os.makedirs(build)
        for path in (lesson, mutant, runner, library):
            shutil.copy(path, build)
        os.makedirs(home)
        os.chown(home, 65534, 65534)
        env = {"LAB_RUNNER": os.path.join(build, "lab04_runner")}
        for what, mode in kinds:
            for name, lab, want in (("the lesson", lesson, (7, [])), ("STEP 7 written in advance", mutant, (6, ["7"]))):
                score, lost, run = grade(os.path.join(copy, "checker"), os.path.join(build, os.path.basename(lab)),
                                         home if mode else None, mode, env)
                if mode and ("cannot make namespaces" in run.stderr or "cannot be made here" in run.stderr):
                    checks.append(("%s: skipped, no namespaces here" % what, True, ""))
                    break
                checks.append(("%s, %s scores %d/7%s" % (what, name, want[0], ", STEP 7 lost" if want[1] else ""),
                               (score, lost) == want, "score %s, lost STEP %s\n%s%s" % (
                                   score, lost, run.stdout[-1500:], run.stderr[-500:])))
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
