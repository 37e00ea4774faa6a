"""platforms.py: the files a grading platform reads, one function per platform, each written
from one value, a Grade. Nothing else in the project writes them:

  gradescope(grade, path)        Gradescope's results.json (check_lab.py --grade --gradescope,
                                 grade_class.py --gradescope in the Gradescope autograder)
  prairielearn(grade, path)      PrairieLearn's results.json (grade_class.py --prairielearn)
  classroom50(grade, about)      Classroom 50's result.json, as a dict (its autograder writes
                                 it, and its release's text from it)

A Grade is made by whoever graded: check_lab.py from its cases, the class grader from a row
(gradebook.grade_of). A class's gradebook for an LMS (Canvas, Moodle) is lms.py's.
"""
import dataclasses
import json
from typing import Optional

from lab04.checker import cases, files

PRAIRIELEARN_LIMIT = 1 << 20  # bytes: PrairieLearn reads no larger results.json


@dataclasses.dataclass(frozen=True)
class Grade:
    """One submission's grade. points: each STEP's points; earned: each STEP's points earned;
    right: each STEP judged right; lines: {STEP n: its line of the report}, for the steps
    judged (none when the lab was not graded); output: what the student reads (the report,
    or the feedback); status: how its runs ended, in a gradebook's words ("graded" when they
    ran to their end); graded: whether its points were judged at all (a compile's 0 was);
    why: when not graded, why (one line); verdicts: {STEP n: its verdict in words} where the
    checker gave them; extra: what else a platform keeps for its other readers. Its text is
    shown as it is: whoever made it escaped the student's (cases.escaped)."""
    score: float
    points: list
    earned: list
    right: list
    lines: dict
    output: str
    status: str = "graded"
    graded: bool = True
    why: str = ""
    verdicts: Optional[dict] = None
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def max_score(self):
        return sum(self.points)


def not_graded_line(grade):
    return "not graded: %s" % grade.status


def gradescope(grade, path):
    """Gradescope's results.json: a test per STEP (its score, its points, passed or failed, its
    line of the report; in extra_data the step and its verdict as values), the total score,
    the output, and the grade's extra as the file's extra_data."""
    tests = []
    for n in cases.STEP_NUMBERS:
        extra = {"step": n, "what": cases.STEP_NAMES[n]}
        if grade.verdicts is not None:
            extra["verdict"] = grade.verdicts[n]
        tests.append({"name": "STEP %d: %s" % (n, cases.STEP_NAMES[n]), "number": str(n),
                      "score": float(grade.earned[n - 1]), "max_score": float(grade.points[n - 1]),
                      "status": "passed" if grade.right[n - 1] else "failed",
                      "output": grade.lines.get(n, not_graded_line(grade)), "extra_data": extra})
    data = {"score": float(grade.score), "output": grade.output, "stdout_visibility": "visible", "tests": tests,
            "extra_data": grade.extra}
    with files.written(path) as f:
        json.dump(data, f, indent=2)


def prairielearn(grade, path):
    """PrairieLearn's results.json, by its external grader's rules (strict JSON in UTF-8, no
    NaN, at most 1 MiB; a score from 0 to 1, which it never clamps). A lab that was graded,
    whatever it scored (a compile's 0 too): the score as points over the lab's, a test per STEP
    with its line of the report, the output. A submission with no lab, or a file that is not
    one: "gradable": false with the reason in format_errors, which costs the student no
    attempt."""
    if not grade.graded:
        data = {"gradable": False, "format_errors": [grade.why or grade.status],
                "message": "Not graded (%s): submit one file, lab04_attention.cpp. This cost you no attempt."
                           % grade.status}
    else:
        data = {"gradable": True, "score": grade.score / grade.max_score if grade.max_score else 0.0,
                "message": "score: %s/%s (%s)" % (cases.fmt(grade.score), cases.fmt(grade.max_score), grade.status),
                "output": grade.output,
                "tests": [{"name": "STEP %d" % n, "description": cases.STEP_NAMES[n],
                           "points": float(grade.earned[n - 1]), "max_points": float(grade.points[n - 1]),
                           "message": grade.lines.get(n, not_graded_line(grade)), "output": ""}
                          for n in cases.STEP_NUMBERS]}
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, indent=1)
    if len(text) > PRAIRIELEARN_LIMIT:  # the output alone can grow: cut it to fit, and say so
        over = len(text) - PRAIRIELEARN_LIMIT + 200
        data["output"] = data["output"][:max(0, len(data["output"]) - over)] + "\n... (cut: PrairieLearn reads 1 MB)"
        text = json.dumps(data, ensure_ascii=True, allow_nan=False, indent=1)
    files.write_text(path, text + "\n")


def classroom50(grade, about):
    """Classroom 50's result.json (classroom50/result/v1), as a dict: whole points (a STEP's
    points are all or nothing, and the points whole numbers), a test per STEP. about: what
    the autograder knows of the submission (classroom, assignment, assignment_type, owner,
    submission, commit, release, review, datetime), in the file's own keys."""
    tests = []
    for n in cases.STEP_NUMBERS:
        points = int(grade.points[n - 1])
        tests.append({"test-name": "STEP %d: %s" % (n, cases.STEP_NAMES[n]), "passed": bool(grade.right[n - 1]),
                      "score": points if grade.right[n - 1] else 0, "max-score": points,
                      "message": grade.lines.get(n, "%s (%s)" % (not_graded_line(grade), grade.why[:300]))})
    return {"schema": "classroom50/result/v1", **about, "score": sum(t["score"] for t in tests),
            "max-score": sum(int(p) for p in grade.points), "tests": tests}
