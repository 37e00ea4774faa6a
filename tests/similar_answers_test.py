#!/usr/bin/env python3
"""grade_class.py's summary lists the labs that printed the same wrong numbers no known
mistake explains, with the STEP where they agree: a hint to look, never a verdict.

usage: similar_answers_test.py BUILD WORK_DIR

A class made here from the lesson: two students whose values come from the key layer (no known
mistake: STEP 2's v), two who scale by 0.3 (STEP 3's scores), one who scales by 0.25, two with
a known mistake (no scale: explained, so never grouped) and the lesson. Expected, from how the
labs were made: two groups, {ann, ben} at STEP 2 and {cal, dee} at STEP 3; eve (another
number), fay and gil (explained) and the lesson in none; nor ivy and jo, whose different code
both prints NaN scores (NaN is no number: it shows nothing alike).
"""
import os
import re
import shutil
import subprocess
import sys

import checklist
import make_class
import project

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")


def main(argv):
    if len(argv) != 2:
        print("similar_answers_test: usage: similar_answers_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    build, work = (os.path.abspath(a) for a in argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "class"))
    os.chmod(work, 0o755)
    scaled = "scores.mul_(1.0 / std::sqrt(double(HEAD)))"
    lesson = make_class.lab_text("lesson")
    if scaled not in lesson:
        raise SystemExit("similar_answers_test: the lesson has no %r any more" % scaled)
    labs = {"ann": make_class.lab_text("values_made_by_the_key_layer"),
            "ben": make_class.lab_text("values_made_by_the_key_layer"),
            "cal": lesson.replace(scaled, "scores.mul_(0.3)"), "dee": lesson.replace(scaled, "scores.mul_(0.3)"),
            "eve": lesson.replace(scaled, "scores.mul_(0.25)"), "fay": make_class.lab_text("no_scale"),
            "gil": make_class.lab_text("no_scale"), "hal": lesson,
            "ivy": lesson.replace(scaled, "scores.fill_(NAN)"), "jo": lesson.replace(scaled, "scores.mul_(NAN)")}
    for name, text in labs.items():
        os.makedirs(os.path.join(work, "class", name))
        with open(os.path.join(work, "class", name, "lab04_attention.cpp"), "w") as f:
            f.write(text)
    done = subprocess.run([sys.executable, GRADE_CLASS, "--build", build, os.path.join(work, "class"),
                           os.path.join(work, "grades")], capture_output=True, text=True)
    summary = done.stdout
    section = summary.split("## Labs that printed the same wrong numbers", 1)[1].split("\n## ", 1)[0] \
        if "## Labs that printed the same wrong numbers" in summary else ""
    groups = sorted(re.findall(r"^- STEP (\d) \((\w+)\): (.*)$", section, re.M))
    checks = [("the class is graded (exit 0)", done.returncode == 0, done.stderr[-600:]),
              ("two groups: ann and ben at STEP 2 (v), cal and dee at STEP 3 (scores); no one else (not ivy and "
               "jo, whose NaN shows nothing alike)",
               groups == [("2", "v", "ann, ben"), ("3", "scores", "cal, dee")], section or summary[-1500:]),
              ("the section says it is a hint, never a verdict", "never a verdict" in section, section)]
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
