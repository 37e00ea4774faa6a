#!/usr/bin/env python3
"""A starter, as a student gets it, builds, stops at its first blank, and grades.

usage: starter_test.py STARTER_DIR

In the starter (made by make_starter.py): the commands of its README build it
(cmake --preset default && cmake --build --preset default); its lab prints the steps before
its first blank, then "STEP n: not written yet: ..." and exits 4; and check_lab.py --grade
gives it the points of the steps before the first blank. The blanks are read from the lab's
TODO(STEP n) lines. Prints OK or NOT OK for each.
"""
import os
import re
import subprocess
import sys

import checklist


def main(argv):
    if len(argv) != 1 or not os.path.isfile(os.path.join(argv[0], "lab04_attention.cpp")):
        print("starter_test: usage: starter_test.py STARTER_DIR (a folder made by make_starter.py)", file=sys.stderr)
        return 2
    starter = os.path.abspath(argv[0])
    lab = open(os.path.join(starter, "lab04_attention.cpp")).read()
    blanks = sorted({int(n) for n in re.findall(r"TODO\(STEP (\d)\)", lab)})
    checks = []
    if not blanks:
        checks.append(("the starter's lab has blanks", False, "no TODO(STEP n) line"))
    readme = open(os.path.join(starter, "README.md")).read()
    build = "cmake --preset default && cmake --build --preset default"
    checks.append(("its README builds it with '%s'" % build, build in readme, "not in its README"))
    made = subprocess.run(["bash", "-c", build], cwd=starter, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    checks.append(("it builds", made.returncode == 0, made.stdout[-3000:]))
    if made.returncode == 0 and blanks:
        first = blanks[0]
        run = subprocess.run([os.path.join(starter, "build", "lab04_attention")], capture_output=True, text=True)
        steps = re.findall(r"^STEP (\d)", run.stdout, re.M)
        checks += [
            ("its run exits 4 at its first blank", run.returncode == 4, "exit status %d" % run.returncode),
            ("its run prints the steps before STEP %d, then 'STEP %d: not written yet: <hint>'" % (first, first),
             all(str(n) in steps for n in range(1, first)) and
             re.search(r"^STEP %d: not written yet: \S" % first, run.stdout, re.M) is not None, run.stdout),
        ]
        grade = subprocess.run([os.path.join(starter, "checker", "check_lab.py"), "--grade",
                                os.path.join(starter, "build", "lab04_attention")], capture_output=True, text=True)
        score = re.search(r"^score: (\S+)/(\S+)$", grade.stdout, re.M)
        checks.append(("check_lab.py --grade gives the %d step(s) before the first blank" % (first - 1),
                       score is not None and float(score.group(1)) == first - 1, grade.stdout[-1500:] + grade.stderr))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
