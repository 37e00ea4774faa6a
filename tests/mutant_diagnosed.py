"""Passes when check_lab.py finds a mutant of the lab at the right STEP and names its mistake.

usage: mutant_diagnosed.py MUTANT MISTAKE
  MUTANT   a lab built with one known mistake (tests/CMakeLists.txt makes them)
  MISTAKE  the id of that mistake in mistakes.py, whose "step" is where it must be found

Runs the checker on the default cases and prints its report; then NOT OK unless some case
failed, every failing case failed first at the mistake's STEP, and the diagnosis is MISTAKE.
"""
import sys

import check_lab
from mistakes import MISTAKES


def main():
    mutant, want = sys.argv[1:3]
    entry = next((m for m in MISTAKES if m["id"] == want), None)
    if entry is None:
        print("mutant_diagnosed: no mistake %r in mistakes.py" % want, file=sys.stderr)
        return 2
    _, results, diagnosed = check_lab.check(mutant, check_lab.DEFAULT_CASES)
    problems = []
    failed = [(case, r) for case, r in results if not r["ok"]]
    if not failed:
        problems.append("the checker passed this mutant: every case OK")
    for case, r in failed:
        if r["step"] != entry["step"]:
            problems.append("case %s: NOT OK at STEP %s, expected STEP %s" % (case, r["step"], entry["step"]))
    if diagnosed != want:
        problems.append("diagnosed as %s, expected %s" % (diagnosed or "no known mistake", want))
    for p in problems:
        print("NOT OK: " + p)
    if not problems:
        print("OK: found at STEP %s in %d of %d cases and diagnosed as %s" % (
            entry["step"], len(failed), len(results), want))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
