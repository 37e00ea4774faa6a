"""make_starter.py: writes the starter repository that students get, made from the lesson.

usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE]
                       [--lab-only | --autograder | --classroom50 [--grade-unisolated] |
                        --prairielearn [--grade-unisolated]] OUT

  --blank STEPS  the STEPs the student writes, such as 2,3,4,5,6 (default 3,4,5,6: the
                 attention itself; STEP 1 and 2 draw the random numbers in the order the
                 reference needs, and STEP 7 is the lab's own check, so they are given)
  --points P     points for STEP 1 to 7 (default 1 each), for the Classroom workflow and
                 the student's README; the checker takes the same with --grade --points
  --lab FILE     the lesson to blank (default: this project's lab04_attention.cpp)
  --lab-only     write only the lab with its blanks, to the file OUT
  --autograder   write Gradescope's autograder, a zip file OUT: setup.sh and run_autograder
                 (instructor/gradescope/) with the files that build and grade a submitted lab
  --classroom50  write what a Classroom 50 classroom needs, into the folder OUT: template/
                 (the starter, the assignment's template repository), autograder/ (its
                 autograder.py and the project it builds and grades with, to commit as
                 <classroom>/autograders/<assignment>/ of the classroom's repository),
                 runtime.json (the assignment's runtime: the packages to install) and a
                 README.md saying how; Classroom 50's points are whole numbers, so --points
                 must be (a fraction is refused, exit 2, rather than rounded)
  --prairielearn  write what a PrairieLearn course needs, into the folder OUT: question/ (an
                 externally graded question: info.json, question.html with a file editor
                 started from the starter's lab, tests/points) and image/ (the grader's
                 Dockerfile and the project it builds), and a README.md saying how
  --grade-unisolated  with --classroom50: grade on a runner where a student's compile and run
                 cannot be isolated (not root, no sudo without a password, no user namespaces
                 for bubblewrap), saying so in the release; without it such a runner grades
                 nothing and says why (a lab compiled there reads what the job can); with
                 --prairielearn: grade in a container where nothing keeps /grade's tests and
                 data from the lab (run as a user, not root: info.json's environment sets
                 LAB04_GRADE_UNISOLATED=1); without it such a job fails and says why
  OUT            the folder to write the starter into: new, or empty

The starter is this project's lab04_attention.cpp with each blanked STEP's code replaced by
a TODO that compiles: the lesson's comments stay (they are the hints), the printing stays,
and the statements that compute the step (those that define or change a tensor) give way to
a call not_written_yet(n, hint), which prints "STEP n: not written yet: <hint>" and exits 4,
and to plain declarations of what the later steps use. Beside it: CMakeLists.txt,
CMakePresets.json, .clang-format, .gitignore, cmake/, watch/, checker/ and engine/ as they
are here (the build, the watch, the checker with its reference and catalogue, the run engine
that runs the lab for both); and, from the files of
templates/: a tests/CMakeLists.txt with one test per STEP, a README for the student, and
.github/workflows/grade.yml (each push graded by the checker, the grade in the job's summary).
Nothing is copied by hand, so the starter follows the lesson whenever it is made again. The
lab's blanks are blanking.py's, the other files starter_files.py's, and the platforms' parts
packagers.py's; this module is the command.

Exit status: 0 written; 2 bad arguments, an OUT that is not empty, or a lab whose STEP
comments cannot be found (nothing is written then).
"""
import os
import re
import sys

from lab04 import PROJECT, project_files
from lab04.checker import cases  # the checker's: the points of the steps are read as the checker reads them
from lab04.checker.files import write_text  # the checker's: a file written whole, never through a link
from lab04.instructor.blanking import DEFAULT_BLANKS, NotALesson, make_lab
from lab04.instructor.packagers import write_autograder, write_classroom50, write_prairielearn
from lab04.instructor.starter_files import copied, fill, grade_workflow, readme_command, student_readme, write_tree


class Usage(Exception):
    """One line on stderr, exit 2, nothing written."""


# --- the command -----------------------------------------------------------------------------

def parse_args(argv):
    blanks, points, lab_only, out, unisolated = list(DEFAULT_BLANKS), [1.0] * cases.STEPS, False, None, False
    lesson = os.path.join(PROJECT, "lab04_attention.cpp")
    while argv:
        a = argv.pop(0)
        if a == "--blank":
            text = argv.pop(0) if argv else ""
            try:
                blanks = sorted({int(s) for s in text.split(",")})
                assert text and all(1 <= n <= 7 for n in blanks)
            except (ValueError, AssertionError):
                raise Usage("--blank takes STEP numbers from 1 to 7 joined by commas, such as 3,4,5,6, "
                            "not %r" % text[:40])
        elif a == "--points":
            try:
                points = cases.parse_points(argv.pop(0) if argv else "")
            except ValueError as e:
                raise Usage(str(e))
        elif a == "--lab":
            lesson = argv.pop(0) if argv else ""
            if not os.path.isfile(lesson):
                raise Usage("--lab takes the path of a lab04_attention.cpp, not %r" % lesson[:80])
        elif a == "--grade-unisolated":
            unisolated = True
        elif a in ("--lab-only", "--autograder", "--classroom50", "--prairielearn"):
            lab_only = a[2:]
        elif a.startswith("-") or out is not None:
            raise Usage("usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] "
                        "[--lab-only | --autograder | --classroom50 | --prairielearn] OUT (unexpected %r)" % a[:40])
        else:
            out = a
    if out is None:
        raise Usage("usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] "
                    "[--lab-only | --autograder | --classroom50 | --prairielearn] OUT")
    if unisolated and lab_only not in ("classroom50", "prairielearn"):
        raise Usage("--grade-unisolated is a setting of Classroom 50's autograder or PrairieLearn's grader: give it "
                    "with --classroom50 or --prairielearn")
    if lab_only == "classroom50" and any(p != int(p) for p in points):
        raise Usage("Classroom 50's scores are whole numbers: give --points in whole numbers (such as 2,1,1,1,1,1,1), "
                    "not %s; a fraction is not rounded, so that no grade is changed behind your back"
                    % ",".join(cases.fmt(p) for p in points))
    if lab_only in ("lab-only", "autograder"):
        if os.path.isdir(out) or not os.path.isdir(os.path.dirname(os.path.abspath(out))):
            raise Usage("--%s writes a file: %r is a folder, or its folder does not exist" % (lab_only, out[:80]))
    elif os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise Usage("%r exists and is not an empty folder: give a new folder for the starter" % out[:80])
    return blanks, points, lab_only, out, lesson, unisolated


def main(argv):
    try:
        blanks, points, lab_only, out, lesson, unisolated = parse_args(list(argv))
        with open(lesson) as f:
            lab, hints = make_lab(f.read(), blanks)
        if lab_only == "lab-only":
            write_text(out, lab)
            return 0
        install = readme_command("install-build-run")
        rebuild = readme_command("rebuild-run")
        setup = re.sub(r"\s*&&\s*build/lab04_attention\s*$", "", install).replace("$(command -v sudo) ", "")
        files = {"lab04_attention.cpp": lab,
                 "README.md": student_readme(blanks, hints, points, install, rebuild),
                 "tests/CMakeLists.txt": fill("starter_tests_CMakeLists.txt"),
                 ".github/workflows/grade.yml": grade_workflow(points, setup)}
        if lab_only == "autograder":
            return write_autograder(out, files)
        if lab_only == "prairielearn":
            return write_prairielearn(out, files, points, blanks, install, unisolated)
        if lab_only == "classroom50":
            files["README.md"] = student_readme(blanks, hints, points, install, rebuild, on_push="classroom50")
            return write_classroom50(out, files, points, install, unisolated)
        write_tree(out, copied(), files)
        print("make_starter: wrote %s: STEP %s blanked, points %s" % (
            out, ",".join(map(str, blanks)), ",".join(cases.fmt(p) for p in points)))
        return 0
    except (Usage, NotALesson) as e:
        print("make_starter: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, StopIteration, UnicodeDecodeError, project_files.NotRegular) as e:
        print("make_starter: cannot make the starter: %s" % e, file=sys.stderr)
        return 2

