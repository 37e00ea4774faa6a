#!/usr/bin/env python3
"""What a class's files say of it, from rows built here, in this process (tier unit):
lab04/grader/gradebook.py's summary (who was graded, the mean and the median, each STEP right, wrong or
not reached, the known mistakes, the labs no mistake explains, the late ones, the groups of the
same wrong numbers), grades.csv (a cell a spreadsheet would compute is quoted as text) and a
student's feedback. Each expected line is worked out by hand from the rows below, never taken
from the module's output; a whole class is graded by the kit's tests, this checks the
arithmetic and the words in a second.

usage: class_summary_rules_test.py
"""
import csv
import io
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)
import checklist

from lab04.checker.mistakes import MISTAKES  # noqa: E402
from lab04.grader import deadlines, gradebook  # noqa: E402
from lab04.grader.row import Row  # noqa: E402
from lab04.grader.status import Status  # noqa: E402

POINTS = [1.0] * 7
WORDS = "the lab ran as a user id of its own; the compile ran in bubblewrap"  # a row's isolation: words, no label
DID = {m["id"]: m["did"] for m in MISTAKES}
T, F = True, False


def row(student, steps, reached, status=Status.GRADED, **fields):
    r = Row(student=student, max_score=7.0, score=sum(steps), steps=list(steps), reached=list(reached), status=status,
            right=[s == 1.0 for s in steps], **fields)
    return r


def the_class():
    """Seven students: the lesson; no scale (a known mistake, STEPs 3 and 7 wrong); a crash
    after STEP 3; two labs whose same wrong numbers no mistake explains; a blank STEP 5; no lab."""
    return [
        row("ann", [1] * 7, [T] * 7, isolation=WORDS),
        row("bob", [1, 1, 0, 1, 1, 1, 0], [T] * 7, mistakes=("no_scale",), diagnosis="no scale"),
        row("cyd", [1, 1, 1, 0, 0, 0, 0], [T, T, T, F, F, F, F], status=Status.CRASHED, diagnosis="it crashed: SIGSEGV"),
        row("dee", [1, 1, 1, 1, 0, 0, 1], [T] * 7, diagnosis="STEP 5 is wrong",
            wrong_numbers={"step": 5, "name": "weights", "key": "k1"}),
        row("eve|<b>", [1, 1, 1, 1, 0, 0, 1], [T] * 7, diagnosis="STEP 5 is wrong",
            wrong_numbers={"step": 5, "name": "weights", "key": "k1"}, late="late by 2 h: 10% taken for 1 day (0.7 points)",
            time_source=deadlines.COMMIT_DATE),
        row("fay", [1, 1, 1, 1, 0, 0, 0], [T, T, T, T, F, F, F], blank=5, diagnosis="STEP 5 is blank"),
        row("=gus", [0] * 7, [F] * 7, status=Status.NO_LAB, diagnosis="no lab04_attention.cpp was found"),
    ]


def summary_checks():
    rows = the_class()
    text = gradebook.summary_text(rows, POINTS, meta={"cases": ["1,4,8,8"], "draw": None}, picture="class.png")
    lines = text.splitlines()
    checks = []

    def has(what, line):
        checks.append((what, line in lines, "\n".join(lines)))

    # 7 students: 4 graded (ann, bob, dee, eve, fay: 5), 1 crashed, 1 no lab; ties by name
    has("the count of each status, the most first", "7 students: 5 graded, 1 crashed, 1 no lab.")
    # scores 7 5 3 5 5 4 0: mean 29/7 = 4.142857, sorted 7 5 5 5 4 3 0: median 5
    has("the mean and the median, every student counted", "Mean score 4.14/7, median 5/7 (every student counts; no lab "
        "scores 0).")
    has("the cases graded on", "Cases: 1,4,8,8.")
    checks.append(("the picture is described first: the scores' range and the STEP most got wrong or did not reach "
                   "(STEPs 5 and 6 tie at 4 of 6: dee, eve, cyd, fay; the first is named)", lines[2].startswith("![The class at a glance: 7 students' "
                                                                              "scores from 0 to 7 of 7; the STEP most "
                                                                              "got wrong or did not reach is STEP 5, 4 "
                                                                              "of 6 graded labs."), lines[2]))
    for score, n in (("7", 1), ("5", 3), ("4", 1), ("3", 1), ("0", 1)):
        has("the scores' table has %s/7 for %d" % (score, n), "| %s/7 | %d | %s |" % (score, n, "#" * n))
    # of the 6 graded: STEP 3 wrong for bob; STEP 4 not reached by cyd; STEP 5 wrong for dee and eve, not
    # reached by cyd and fay; STEP 7 wrong for bob, not reached by cyd and fay
    for step, right, wrong, missed in ((1, 6, 0, 0), (3, 5, 1, 0), (4, 5, 0, 1), (5, 2, 2, 2), (7, 3, 1, 2)):
        has("STEP %d: %d right, %d wrong, %d not reached" % (step, right, wrong, missed),
            "- STEP %d, %s: %d of 6 right (%.0f%%), %d wrong, %d not reached" % (
                step, gradebook.cases.STEP_NAMES[step], right, 100.0 * right / 6, wrong, missed))
    has("the known mistake with who made it and its id", "- %s: 1 student (bob) [no_scale]" % DID["no_scale"])
    has("the blank STEP is named with its lab, not counted as unexplained", "- fay (4/7): STEP 5")
    has("a lab no known mistake explains is listed with its diagnosis", "- dee (5/7, graded): STEP 5 is wrong")
    has("a name that could be Markdown is escaped", "- eve\\|\\<b\\> (5/7, graded): STEP 5 is wrong")
    checks.append(("neither the crash, the blank nor the known mistake is among the unexplained", not any(
        line.startswith(("- cyd (", "- fay (4/7, ", "- bob (")) for line in lines[lines.index(
            "## Labs no known mistake explains"):lines.index("## Late, and commits after the deadline")]), text))
    has("the late lab with its words", "- eve\\|\\<b\\>: late by 2 h: 10% taken for 1 day (0.7 points)")
    has("the two labs of the same wrong numbers are grouped", "- STEP 5 (weights): dee, eve\\|\\<b\\>")
    has("the students' own commit dates are said to be their claim", "Times: 1 of the repositories are timed by times "
        "the students write themselves (1 by their commit dates alone (git commit --date)): the late column says so. "
        "GitHub's record of the pushes (--pushes), Gradescope's upload times and Canvas's late mark are times they "
        "cannot write.")
    has("the lab that stopped is listed", "- cyd (3/7, crashed): it crashed: SIGSEGV")
    has("the lab not graded is listed with why", "- =gus: no lab (no lab04_attention.cpp was found)")
    has("the isolation's words are said once, under the summary's own label", "Isolation: " + WORDS)
    graded = gradebook.grade_of(rows[0], POINTS)
    checks.append(("a platform's output says the isolation under its own label, once",
                   graded.output.count("isolation: " + WORDS + "\n") + graded.output.endswith("isolation: " + WORDS) == 1
                   and "isolation: isolation" not in graded.output, graded.output))
    return checks


def one_mistake_each_checks():
    rows = [row("a", [1, 1, 0, 1, 1, 1, 0], [T] * 7, mistakes=("no_scale", "softmax_over_dim_0")),
            row("b", [1, 1, 0, 1, 1, 1, 0], [T] * 7, mistakes=("no_scale",))]
    text = gradebook.summary_text(rows, POINTS)
    return [("a pair of mistakes counts for each of its two (no scale: 2, softmax over dimension 0: 1)",
             "- %s: 2 students (a, b) [no_scale]" % DID["no_scale"] in text
             and "- %s: 1 student (a) [softmax_over_dim_0]" % DID["softmax_over_dim_0"] in text, text),
            ("no lab explained by a mistake is unexplained", "## Labs no known mistake explains\n\nNone." in text, text)]


def even_class_checks():
    # scores 7, 6, 2 and 1: mean 4, median the mean of the middle two, (6 + 2) / 2 = 4; shown as 4, not 4.00
    rows = [row(n, [1] * k + [0] * (7 - k), [T] * 7) for n, k in (("a", 7), ("b", 6), ("c", 2), ("d", 1))]
    text = gradebook.summary_text(rows, POINTS)
    return [("in a class of 4 (7, 6, 2, 1) the median is the mean of the middle two, 4",
             "Mean score 4.00/7, median 4/7 (every student counts; no lab scores 0)." in text.splitlines(), text)]


def csv_and_feedback_checks():
    rows = the_class()
    table = list(csv.reader(io.StringIO(gradebook.csv_text(rows))))
    checks = [("grades.csv's header: student, id, score, max_score, the 7 STEPs, status, late, commit, diagnosis",
               table[0] == ["student", "id", "score", "max_score"] + ["STEP %d" % n for n in range(1, 8)] + [
                   "status", "late", "commit", "diagnosis"], table[0])]
    gus = [r for r in table if r[0].endswith("gus")]
    checks.append(("a name a spreadsheet would compute (=gus) is quoted as text", gus and gus[0][0] == "'=gus", gus))
    bob = [r for r in table if r[0] == "bob"][0]
    checks.append(("bob's row: 5 of 7, STEP 3 and 7 at 0", bob[2:11] == ["5", "7", "1", "1", "0", "1", "1", "1", "0"],
                   bob))
    r = row("hal\x1b[31m", [1] * 7, [T] * 7, feedback=["all right"])
    text = gradebook.feedback_text(r)
    checks.append(("a feedback file opens with the name, the score and the status, an escape sequence shown as text",
                   text.startswith("Lab 04 (self-attention): hal\\x1b[31m\nscore: 7/7 (graded)\n") and "\x1b" not in text,
                   text))
    return checks


def main(argv):
    if argv:
        print("class_summary_rules_test: usage: class_summary_rules_test.py", file=sys.stderr)
        return 2
    return checklist.report(summary_checks() + one_mistake_each_checks() + even_class_checks() + csv_and_feedback_checks())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
