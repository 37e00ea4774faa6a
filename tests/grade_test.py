"""check_lab.py --grade takes from a lab exactly the points of the steps it got wrong.

usage: grade_test.py [--report FILE [--built PROGRAM]] [--draw SEED] LAB LOST
  LAB   a built lab (the lesson, or a mutant of tests/CMakeLists.txt)
  LOST  the STEPs it must lose, joined by commas, or "none" for full marks
  --report FILE  the checker's report on LAB (check_lab.py --report): when it says NOT OK
        about this build of LAB, the test says SKIPPED and why (it needs right numbers)
  --built PROGRAM  the lab's program, whose date says which build the report is about, when
        LAB stands in for it (build/tests/lab04_fast, which an edit of the lab does not rebuild)
  --draw SEED  also grade on that draw of cases (an instructor's grade: cases no student has
        seen), which must take exactly the same steps: a draw is fair to every lab

Runs the grade (and the draw's), prints it, then OK or NOT OK with the steps expected and the
steps lost.
"""
import os
import re
import subprocess
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)



def numbers_known_wrong(report, lab):
    """Whether the checker's report, written after this build of the lab, says NOT OK."""
    try:
        with open(report) as f:
            first = f.readline().strip()
        return first == "NOT OK" and os.path.getmtime(report) >= os.path.getmtime(lab)
    except OSError:
        return False


def main(argv):
    report = built = draw = None
    if argv[:1] == ["--report"] and len(argv) > 1:
        report, argv = argv[1], argv[2:]
        if argv[:1] == ["--built"] and len(argv) > 1:
            built, argv = argv[1], argv[2:]
    if argv[:1] == ["--draw"] and len(argv) > 1:
        draw, argv = argv[1], argv[2:]
    if len(argv) == 2 and report and numbers_known_wrong(report, built or argv[0]):
        print("SKIPPED: needs right numbers, and the checker found this lab's wrong: see the test "
              "every_step_of_the_lab_matches_the_reference_in_every_case, or %s" % report)
        return 0
    if len(argv) != 2 or not re.fullmatch(r"none|[1-7](,[1-7])*", argv[1]):
        print("grade_test: usage: grade_test.py LAB LOST (STEPs joined by commas, or none)", file=sys.stderr)
        return 2
    lab, lost = argv
    want = set() if lost == "none" else {int(s) for s in lost.split(",")}
    problems = []
    for options in [[]] + ([["--draw", draw]] if draw else []):
        problems += graded(lab, options, want)
    for p in problems:
        print("NOT OK: " + p)
    if not problems:
        print("OK: lost exactly %s%s" % (", ".join("STEP %d" % n for n in sorted(want)) or "nothing",
                                        ", on the public cases and on draw %s" % draw if draw else ""))
    return 1 if problems else 0


def graded(lab, options, want):
    """What is wrong with check_lab.py --grade's grade of lab (options: its cases), in words."""
    of = " (draw %s)" % options[1] if options else ""
    run = subprocess.run([sys.executable, project.CHECK_LAB, "--grade"] + options + [lab], capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    got = {int(m.group(1)) for m in re.finditer(r"^STEP (\d)  .* 0/1  ", run.stdout, re.M)}
    score = re.search(r"^score: (\S+)/7$", run.stdout, re.M)
    problems = []
    if score is None:
        problems.append("no 'score: .../7' line (exit status %d)%s" % (run.returncode, of))
    elif float(score.group(1)) != 7 - len(want):
        problems.append("score %s/7, expected %d/7%s" % (score.group(1), 7 - len(want), of))
    if got != want:
        problems.append("lost %s, expected to lose %s%s" % (
            ", ".join("STEP %d" % n for n in sorted(got)) or "nothing",
            ", ".join("STEP %d" % n for n in sorted(want)) or "nothing", of))
    if run.returncode != (0 if not want else 1):
        problems.append("exit status %d, expected %d%s" % (run.returncode, 0 if not want else 1, of))
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
