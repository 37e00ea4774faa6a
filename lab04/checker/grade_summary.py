"""grade_summary.py: a grade as Markdown, for a CI job's summary.

usage: grade_summary.py RESULTS
  RESULTS  the file check_lab.py --grade --gradescope wrote (Gradescope's results.json)

Prints a table, a row per STEP (its points, and what is wrong when it lost them), then the
cases the lab did not run to their end. It reads the grade's values (each step's score, points
and verdict), never the wording of the report. A RESULTS that does not exist means the lab was
not graded (it did not build, say): that is printed instead, in the same place. The starter's
workflow appends it to $GITHUB_STEP_SUMMARY. Exit status: 0 printed; 2 bad arguments or a
file that is not a grade.
"""
import json
import os
import sys

from lab04.checker import cases


def fmt(x):
    return "%g" % x


def main(argv):
    if len(argv) != 1:
        print("grade_summary: usage: grade_summary.py RESULTS (the file of check_lab.py --grade --gradescope)",
              file=sys.stderr)
        return 2
    if not os.path.exists(argv[0]):
        print("## Lab 04: not graded\n\nThe checker wrote no grade: the lab did not build, or could not be run. "
              "The step that builds it says why.")
        return 0
    try:
        with open(argv[0], encoding="utf-8", errors="replace") as f:
            data = json.load(f)
        steps = sorted((t["extra_data"]["step"], t["extra_data"]["what"], float(t["score"]), float(t["max_score"]),
                        t["status"] == "passed", t["extra_data"]["verdict"]) for t in data["tests"])
        problems, total = data["extra_data"]["problems"], float(data["extra_data"]["max_score"])
        assert [s[0] for s in steps] == list(cases.STEP_NUMBERS)
    except OSError as e:
        print("grade_summary: %s cannot be read: %s" % (argv[0], e.strerror), file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, AssertionError):
        print("grade_summary: %s is not a grade: expected the results.json of check_lab.py --grade --gradescope"
              % argv[0], file=sys.stderr)
        return 2
    out = ["## Lab 04: %s/%s" % (fmt(float(data["score"])), fmt(total)), "",
           "| step | what | points | |", "| --- | --- | --- | --- |"]
    for n, what, earned, points, passed, verdict in steps:
        out.append("| STEP %d | %s | %s/%s | %s |" % (n, what, fmt(earned), fmt(points),
                                                      "right" if passed else verdict.replace("|", "\\|")))
    if problems:
        out += [""] + ["- " + p for p in problems]
    print("\n".join(out))
    return 0

