"""A verdict kept (lab04/checker/memo.py) is given only to runs that print what the runs it was
judged on printed, by the same checker and torch: any other run is judged anew.

usage: memo_test.py LAB WRONG_LAB
  LAB        the lesson's lab (or the tests' client of it): every case OK
  WRONG_LAB  a lab with a known mistake (softmax over dimension 0): NOT OK, and the diagnosis
             names it

check_lab.py --memo: a second check of the same lab gives the same report, json and exit
status without importing torch (python -X importtime says what was imported); the wrong lab
after it is judged (NOT OK, its diagnosis), and the lesson again is OK; a copy of the checker
whose code changed judges again, and so does one whose entries were written by hand in
another shape; --memo with --grade, or on a file, is refused with one line
and exit 2; the folder keeps at most memo.KEPT entries. watch_verdict.py, the watch's
checker (--lazy): a second one fed the runs a first one judged answers as the first did,
without starting its judge (the process that loads torch); the wrong lab's runs after them get
their own verdict.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import checklist
import project

from lab04.checker import cases, memo

PYTHON = sys.executable


def check(lab, folder, *extra, checker=project.CHECKER):
    """(exit status, stdout, stderr with python's import times, report, json) of a check."""
    report, js = os.path.join(folder, "report.txt"), os.path.join(folder, "report.json")
    done = subprocess.run([PYTHON, "-X", "importtime", os.path.join(checker, "check_lab.py"), "--report", report,
                           "--json", js, *extra, lab], capture_output=True, text=True,
                          env=dict(os.environ, LAB_SANDBOX="none"))
    read = lambda p: open(p).read() if os.path.exists(p) else None
    return done.returncode, done.stdout, done.stderr, read(report), read(js)


def loaded_torch(stderr):
    """Whether python -X importtime's lines name torch as imported."""
    return any(re.match(r"import time: .*\|\s+torch$", line.rstrip()) for line in stderr.splitlines())


def first_difference(a, b):
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return "line %d: %r against %r" % (n + 1, x, y)
    return "%d lines against %d" % (len(a.splitlines()), len(b.splitlines()))


def outside_import_times(stderr):
    return "\n".join(l for l in stderr.splitlines() if not l.startswith("import time:"))


def job_of(lab, ident):
    """A watch job: each of the checker's cases run on lab, as the watch sends them."""
    records = []
    for text in cases.DEFAULT_CASES:
        done = subprocess.run([lab] + cases.arguments(cases.parse_case(text)), capture_output=True)
        records.append(b"ran %s %d - %d %d\n" % (text.encode(), done.returncode, len(done.stdout), len(done.stderr))
                       + done.stdout + done.stderr)
    return b"job %d %d\n" % (ident, len(records)) + b"".join(records)


def ask(checker, job, ident):
    """The lines of the watch's checker's answer to a job, to its "end <id>"."""
    checker.stdin.write(job)
    checker.stdin.flush()
    lines = []
    for line in iter(checker.stdout.readline, b""):
        if line == b"end %d\n" % ident:
            return lines
        if not line.startswith((b"cases ", b"limits ", b"case ")):  # its greeting
            lines.append(line.decode())
    return lines + ["(the checker ended)"]


def tamper(folder, value):
    """Every entry of a memo folder written by hand: value, as JSON."""
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "w") as f:
            json.dump(value, f)


def children(pid):
    """How many processes have pid as their parent."""
    found = 0
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as f:
                found += int(f.read().rsplit(")", 1)[1].split()[1]) == pid
        except (OSError, ValueError, IndexError):
            pass
    return found


def main(argv):
    if len(argv) != 2 or not all(os.access(a, os.X_OK) for a in argv):
        print("memo_test: usage: memo_test.py LAB WRONG_LAB", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        return checked(*argv, folder)


def checked(lab, wrong, folder):
    kept = os.path.join(folder, "memo")
    checks = []

    first = check(lab, folder, "--memo", kept)
    again = check(lab, folder, "--memo", kept)
    checks.append(("the lesson checked: exit 0, and its verdict kept (one entry)",
                   first[0] == 0 and len(os.listdir(kept)) == 1, (first[0], first[1][-300:], os.listdir(kept))))
    checks.append(("checked again: the same stdout, report and json, exit 0, and torch never imported",
                   again[0] == 0 and again[1] == first[1] and again[3] == first[3] and again[4] == first[4]
                   and not loaded_torch(again[2]),
                   "exit %d; torch imported: %s; stdout the same: %s" % (again[0], loaded_torch(again[2]),
                                                                         again[1] == first[1])))
    bad = check(wrong, folder, "--memo", kept)
    plain = check(wrong, folder)
    checks.append(("a wrong lab after it is judged: NOT OK, exit 1, the report of a check without --memo",
                   bad[0] == 1 and loaded_torch(bad[2]) and bad[3] is not None and bad[3].startswith("NOT OK")
                   and bad[1].replace(" --memo " + kept, "") == plain[1] and json.loads(bad[4]) == json.loads(plain[4]),
                   "exit %d; %s" % (bad[0], first_difference(bad[1], plain[1]))))
    bad_again = check(wrong, folder, "--memo", kept)
    checks.append(("the wrong lab again: its own verdict, from the memo (NOT OK, exit 1, no torch)",
                   bad_again[0] == 1 and bad_again[1] == bad[1] and not loaded_torch(bad_again[2]),
                   (bad_again[0], loaded_torch(bad_again[2]))))
    right_again = check(lab, folder, "--memo", kept)
    checks.append(("the lesson after the wrong lab: OK again, exit 0", right_again[0] == 0 and right_again[1] == first[1],
                   (right_again[0], right_again[1][-300:])))

    tamper(kept, {"ok": "yes", "echoed": 1})
    handmade = check(lab, folder, "--memo", kept)
    checks.append(("entries written by hand, of another shape, are not taken: judged anew, the same report, exit 0",
                   handmade[0] == 0 and handmade[1] == first[1] and loaded_torch(handmade[2]),
                   (handmade[0], loaded_torch(handmade[2]), outside_import_times(handmade[2])[-300:])))

    copy = os.path.join(folder, "checker")  # the command, and the package's checker, as a starter carries them
    project.project_files.copy(project.ROOT, project.checker_files(), folder)
    check(lab, folder, "--memo", kept, checker=copy)
    with open(os.path.join(folder, "lab04", "checker", "compare.py"), "a") as f:
        f.write("# a change of the checker's code\n")
    changed = check(lab, folder, "--memo", kept, checker=copy)
    checks.append(("a checker whose code changed judges again (torch imported), exit 0",
                   changed[0] == 0 and loaded_torch(changed[2]), (changed[0], loaded_torch(changed[2]))))

    for what, extra in (("--memo with --grade", ["--grade", "--memo", kept]),
                        ("--memo naming a file", ["--memo", os.path.join(folder, "report.txt")])):
        done = check(lab, folder, *extra)
        err = outside_import_times(done[2])
        checks.append(("%s: refused, one line on stderr, nothing on stdout, exit 2" % what,
                       done[0] == 2 and done[1] == "" and len(err.splitlines()) == 1 and err.startswith("check_lab: "),
                       (done[0], done[1][:200], err[:300])))

    bounded = memo.Memo(os.path.join(folder, "bounded"))
    for n in range(memo.KEPT + 6):
        bounded.put(bounded.key("entry", str(n)), [n])
    names = os.listdir(bounded.folder)
    checks.append(("a folder keeps at most %d entries, the last ones put" % memo.KEPT,
                   len(names) == memo.KEPT and bounded.get(bounded.key("entry", str(memo.KEPT + 5))) == [memo.KEPT + 5]
                   and bounded.get(bounded.key("entry", "0")) is None, len(names)))

    # The watch's checker (--lazy: its judge, which loads torch, starts at the first job it
    # must judge): one judges the lesson's runs; another, given the same runs, answers alone.
    watch_kept = os.path.join(folder, "watch_memo")
    right_job, wrong_job = job_of(lab, 1), job_of(wrong, 2)
    first_checker, second_checker = (subprocess.Popen(
        [PYTHON, os.path.join(project.CHECKER, "watch_verdict.py"), "--lazy", "--memo", watch_kept, "lab04_attention"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2))
    judged = ask(first_checker, right_job, 1)
    first_checker.stdin.close()
    first_checker.wait()
    kept_answer = ask(second_checker, right_job, 1)
    judges_before = children(second_checker.pid)
    wrong_answer = ask(second_checker, wrong_job, 2)
    judges_after = children(second_checker.pid)
    second_checker.stdin.close()
    second_checker.wait()
    tamper(watch_kept, {"lines": 3})
    third_checker = subprocess.Popen(
        [PYTHON, os.path.join(project.CHECKER, "watch_verdict.py"), "--lazy", "--memo", watch_kept, "lab04_attention"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    rejudged = ask(third_checker, right_job, 1)
    judges_third = children(third_checker.pid)
    third_checker.stdin.close()
    third_checker.wait()
    checks.append(("the watch's checker: the lesson's runs judged right", judged[-1:] == [
        "check: every STEP matches the reference in all %d cases\n" % len(cases.DEFAULT_CASES)], judged))
    checks.append(("another checker given the same runs: the same answer, and no judge started (no torch)",
                   kept_answer == judged and judges_before == 0, (judges_before, kept_answer)))
    checks.append(("then the wrong lab's runs: a judge started, and NOT OK with the known mistake named",
                   judges_after == 1 and any(l.startswith("check: NOT OK") for l in wrong_answer)
                   and any("softmax" in l for l in wrong_answer), (judges_after, wrong_answer)))
    checks.append(("the watch's checker, its entries written by hand: judged anew (a judge started), the same answer",
                   rejudged == judged and judges_third == 1, (judges_third, rejudged)))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
