#!/usr/bin/env python3
"""grade_summary.py: a grade's report as Markdown, for a CI job's summary.

usage: grade_summary.py REPORT
  REPORT  the file check_lab.py --grade --report wrote

Prints a table, a row per STEP (its points, and what is wrong when it lost them), then the
score. A REPORT that does not exist means the lab was not graded (it did not build, say):
that is printed instead, in the same place. The starter's workflow appends it to
$GITHUB_STEP_SUMMARY. Exit status: 0 printed; 2 bad arguments or a file that is not a grade.
"""
import os
import re
import sys

STEP_LINE = re.compile(r"^STEP (\d)  (.*?)\s+(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)  (.*)$")


def main(argv):
    if len(argv) != 1:
        print("grade_summary: usage: grade_summary.py REPORT (the file of check_lab.py --grade --report)", file=sys.stderr)
        return 2
    if not os.path.exists(argv[0]):
        print("## Lab 04: not graded\n\nThe checker wrote no grade: the lab did not build, or could not be run. "
              "The step that builds it says why.")
        return 0
    try:
        with open(argv[0], encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print("grade_summary: %s cannot be read: %s" % (argv[0], e.strerror), file=sys.stderr)
        return 2
    steps = [m.groups() for m in map(STEP_LINE.match, lines) if m]
    score = next((l for l in lines if l.startswith("score: ")), None)
    if len(steps) != 7 or not score:
        print("grade_summary: %s is not a grade: expected the report of check_lab.py --grade --report" % argv[0],
              file=sys.stderr)
        return 2
    out = ["## Lab 04: %s" % score[len("score: "):], "", "| step | what | points | |", "| --- | --- | --- | --- |"]
    for n, what, earned, points, verdict in steps:
        mark = "right" if verdict == "right in every case" else verdict.replace("|", "\\|")
        out.append("| STEP %s | %s | %s/%s | %s |" % (n, what, earned, points, mark))
    problems = [l for l in lines if l.startswith("case ")]
    if problems:
        out += [""] + ["- " + l for l in problems]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
