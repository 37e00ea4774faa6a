"""Passes when check_lab.py judges a mutant of the lab as it should.

usage: mutant_diagnosed.py [--timeout SECONDS] [--source FILE] MUTANT EXPECTED [REPORT_HAS]
  --source   the mutant's C++, which the diagnosis quotes (slips.py), as the watch's does
  MUTANT     a lab built with an edit (tests/CMakeLists.txt makes them)
  EXPECTED   the id of its mistake in mistakes.py, whose "step" is where it must be found;
             two ids joined by + for two mistakes; "none" for the lesson written another
             way (every case must be OK); "unknown" for a mistake the catalogue does not
             list (some case NOT OK, and no mistake named); several joined by | where
             LibTorch's versions differ (one must hold)
  REPORT_HAS a text that the checker's report must hold

Runs the checker on the default cases and prints its report, then OK or NOT OK with what
was expected and what came.
"""
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import cases, running, sandbox, verdict
from lab04.checker.mistakes import MISTAKES


def main(argv):
    timeout, source = cases.TIMEOUT, None
    if argv[:1] == ["--timeout"] and len(argv) > 1 and argv[1].replace(".", "", 1).isdigit():
        timeout, argv = float(argv[1]), argv[2:]
    if argv[:1] == ["--source"] and len(argv) > 1:
        with open(argv[1], encoding="utf-8") as f:
            source, argv = f.read(), argv[2:]
    if len(argv) not in (2, 3):
        print("mutant_diagnosed: usage: mutant_diagnosed.py [--timeout SECONDS] [--source FILE] MUTANT EXPECTED "
              "[REPORT_HAS]", file=sys.stderr)
        return 2
    mutant, wants = argv[0], argv[1].split("|")
    report_has = argv[2] if len(argv) == 3 else None
    for want in wants:
        ids = [] if want in ("none", "unknown") else want.split("+")
        if None in [next((m for m in MISTAKES if m["id"] == i), None) for i in ids]:
            print("mutant_diagnosed: no mistake %r in mistakes.py" % want, file=sys.stderr)
            return 2
    report = []

    def echo(line):
        report.append(line)
        print(line)
    box = sandbox.Sandbox(mutant)
    results, not_run = verdict.run_cases(lambda case: running.run_case(box, case, timeout, mutant), cases.DEFAULT_CASES,
                                         lambda result: [echo(line) for line in verdict.case_lines(result)])
    lines, ok, diagnosed = verdict.check_lines(results, not_run, source=source)
    for line in lines:
        echo(line)
    box.close()
    failed = [(r.text, r) for r in results if not r.judgement.ok]
    problems = min((judged_as(want, failed, diagnosed) for want in wants), key=len)
    if report_has and not any(report_has in line for line in report):
        problems.append("the report lacks %r" % report_has)
    for p in problems:
        print("NOT OK: " + p)
    if not problems:
        print("OK: judged as expected (%s)" % argv[1])
    return 1 if problems else 0


def judged_as(want, failed, diagnosed):
    """What makes the cases NOT OK (failed) and the mistake diagnosed other than want."""
    problems = []
    entries = [m for i in ([] if want in ("none", "unknown") else want.split("+")) for m in MISTAKES if m["id"] == i]
    if want == "none":
        problems += ["case %s: NOT OK, expected OK (the lesson written another way)" % case for case, _ in failed]
    elif not failed:
        problems.append("the checker passed this mutant: every case OK")
    steps = {m["step"] for m in entries}
    for case, r in failed:
        if entries and r.judgement.step not in steps:
            problems.append("case %s: NOT OK at STEP %s, expected STEP %s" % (case, r.judgement.step, " or ".join(map(str, sorted(steps)))))
    if entries and diagnosed != tuple(want.split("+")):
        problems.append("diagnosed as %s, expected %s" % ("+".join(diagnosed) or "no known mistake", want))
    if want == "unknown" and diagnosed:
        problems.append("diagnosed as %s, expected no known mistake" % "+".join(diagnosed))
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
