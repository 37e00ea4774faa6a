"""The checker's limits hold whatever the lab does (fake_lab.sh plays the lab).

usage: checker_limits_test.py FAKE_LAB

A lab that prints forever, on standard output or on standard error, is stopped once it has
printed MAX_STDOUT (or MAX_STDERR) and reported NOT OK, and the checker's peak memory stays
under 300 MB; a lab that never ends costs one time limit: the cases after it are not run; a
lab whose file names the AddressSanitizer runtime still runs within the memory limit.
Prints OK or NOT OK for each, with what was expected and what came.
"""
import os
import subprocess
import sys
import tempfile

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import check_lab, limits

LIMIT_MB = 300
TIMEOUT = "3"


def run_checker(fake, cases, sandbox_mode=None):
    """Runs check_lab.py in a child: (exit status, stdout, stderr, the child's peak memory in
    MB, from wait4, which reports that child alone). The fake lab is no sanitizer build, so the
    grader's LAB_SANITIZED (set for a sanitizer build's tests) is not passed on."""
    env = {k: v for k, v in os.environ.items() if k != "LAB_SANITIZED"}
    if sandbox_mode:
        env["LAB_SANDBOX"] = sandbox_mode
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, project.CHECK_LAB, "--timeout", TIMEOUT, fake] + cases,
                                 stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (child.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                usage.ru_maxrss / 1024)


def main(argv):
    if len(argv) != 1 or not os.access(argv[0], os.X_OK):
        print("checker_limits_test: usage: checker_limits_test.py FAKE_LAB", file=sys.stderr)
        return 2
    fake = argv[0]
    mb = check_lab.MAX_STDOUT >> 20
    checks = [
        ("a lab that prints forever is stopped", ["5,4,6,6"],
         ["NOT OK  5,4,6,6", "printed more than %d MB of output without finishing" % mb,
          "the last STEP line it printed: 'STEP 1: input x is 4 tokens x 6 dims'"]),
        ("a lab that prints forever on standard error is stopped", ["6,4,6,6"],
         ["NOT OK  6,4,6,6", "printed more than %d kB of standard error" % (check_lab.MAX_STDERR >> 10)]),
        ("a lab that never ends costs one time limit: the cases after it are not run",
         ["4,4,6,6", "1,4,6,6", "2,4,6,6"],
         ["did not finish within %s s" % TIMEOUT, "NOT RUN 1,4,6,6 2,4,6,6: the lab ran out of time in case 4,4,6,6",
          "0 passed, 1 failed, 2 not run"]),
        # The sandbox kills what a lab leaves behind as soon as the lab ends: it is judged on
        # what it printed, without waiting out the time limit for the child.
        ("a lab whose child keeps its output open is judged at once on what it printed", ["7,4,6,6"],
         ["NOT OK  7,4,6,6", "STEP 1: x: was not printed"], ["did not finish"]),
        ("a lab cannot lift its memory limit by holding the name __asan_init", ["8,4,6,6"],
         ["NOT OK  8,4,6,6", "address space limit: %d" % (limits.MEMORY >> 10)], ["unlimited"]),
        # The time limit judges the lab, not its reader: on a loaded machine the checker may
        # wake after the limit, and what the lab printed by then, or that it had ended, counts.
        # (Only outside a sandbox can the fake lab stop the checker, to make the checker late.)
        ("a lab that ended in time is not timed out because its reader woke late", ["9,4,6,6"],
         ["NOT OK  9,4,6,6", "STEP 1: x: was not printed"], ["did not finish"], "none"),
        ("a lab that timed out is judged on all it printed, though its reader woke late", ["10,4,6,6"],
         ["did not finish within %s s and was stopped; the last STEP line it printed: "
          "'STEP 1: input x is 4 tokens x 6 dims'" % TIMEOUT], [], "none"),
    ]
    failed = 0
    for what, cases, wanted, *rest in checks:
        unwanted, mode = rest + [[], None][len(rest):]
        status, out, err, peak = run_checker(fake, cases, mode)
        problems = ["exit status %d, expected 1 (stderr: %s)" % (status, err.strip()[:200])] if status != 1 else []
        problems += ["the report lacks %r" % w for w in wanted if w not in out]
        problems += ["the report says %r" % w for w in unwanted if w in out]
        if peak >= LIMIT_MB:
            problems.append("the checker's peak memory was %.0f MB, the limit is %d MB" % (peak, LIMIT_MB))
        print("%s  %s (peak memory %.0f MB)" % ("NOT OK" if problems else "OK    ", what, peak))
        for p in problems:
            print("        " + p)
        if problems:
            print("        its report:\n" + "\n".join("          " + l for l in out.splitlines()[:20]))
        failed += bool(problems)
    print("%d passed, %d failed" % (len(checks) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
