#!/usr/bin/env python3
"""A starter, as a student gets it, builds, stops at its first blank, and grades.

usage: starter_test.py STARTER_DIR

In the starter (made by make_starter.py): the commands of its README build it
(cmake --preset default && cmake --build --preset default); its lab prints the steps before
its first blank, then "STEP n: not written yet: ..." and exits 4; and check_lab.py --grade
gives it the points of the steps before the first blank; its README checks after a rebuild, with a
ctest whose failed step test shows why. Its workflow (.github/workflows/
grade.yml) uses no action of GitHub Classroom; its grade step, run here as written, fails (the
job is red: steps are lost) and writes the report, and its summary step writes the grade, a row
per STEP, to $GITHUB_STEP_SUMMARY. The blanks are read from the lab's TODO(STEP n) lines.
Prints OK or NOT OK for each.
"""
import os
import re
import shutil
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
        test = "ctest --preset default --output-on-failure"
        checks.append(("its README checks with '%s' after 'cmake --build --preset default'" % test,
                       re.search(r"cmake --build --preset default .*\n(.*\n)*.*" + re.escape(test), readme) is not None,
                       "not in its README"))
        done = subprocess.run(["bash", "-c", test], cwd=starter, capture_output=True, text=True)
        checks.append(("%s: step_%d_is_right fails and says why, in its own output (STEP %d ... not written yet)"
                       % (test, first, first), done.returncode != 0 and re.search(
                           r"^STEP %d .*not written yet" % first, done.stdout, re.M) is not None, done.stdout[-1500:]))
        checks += workflow_checks(starter, first)
    return checklist.report(checks)


def workflow_checks(starter, first):
    """The workflow's grade and summary steps, run as the workflow runs them."""
    path = os.path.join(starter, ".github", "workflows", "grade.yml")
    if not os.path.isfile(path):
        return [("it has its workflow, .github/workflows/grade.yml", False, os.listdir(os.path.dirname(path)))]
    with open(path) as f:
        text = f.read()
    runs = dict(re.findall(r"- name: (.*)\n\s+if: always\(\)\n\s+run: (.*)", text))
    grade = next((c for n, c in runs.items() if n.startswith("Grade every STEP")), None)
    summary = next((c for n, c in runs.items() if "summary" in n), None)
    uses = re.findall(r"uses: (\S+)", text)
    checks = [("its workflow uses no action of GitHub Classroom (education/...): only %s" % ", ".join(uses),
               uses and not [u for u in uses if u.startswith("education/") or "classroom" in u.lower()], uses),
              ("its workflow has a grade step and a summary step, each run always", grade and summary, runs)]
    if not (grade and summary):
        return checks
    shutil.rmtree(os.path.join(starter, "grade.txt"), ignore_errors=True)
    done = subprocess.run(["bash", "-c", grade], cwd=starter, capture_output=True, text=True)
    checks.append(("its grade step fails, so the job is red: the blanks lose points",
                   done.returncode == 1 and os.path.isfile(os.path.join(starter, "grade.txt")),
                   "exit %d; %s" % (done.returncode, done.stderr[-500:])))
    job_summary = os.path.join(starter, "job_summary.md")
    done = subprocess.run(["bash", "-c", summary], cwd=starter, capture_output=True, text=True,
                          env=dict(os.environ, GITHUB_STEP_SUMMARY=job_summary))
    written = open(job_summary).read() if os.path.isfile(job_summary) else ""
    rows = re.findall(r"^\| STEP (\d) \|", written, re.M)
    checks.append(("its summary step writes the grade, a row per STEP, STEP %d's lost" % first,
                   done.returncode == 0 and rows == [str(n) for n in range(1, 8)]
                   and re.search(r"^\| STEP %d \|.*\| 0/" % first, written, re.M) is not None
                   and "## Lab 04: %d/7" % (first - 1) in written, written + done.stderr))
    for name in ("grade.txt", "job_summary.md"):
        if os.path.exists(os.path.join(starter, name)):
            os.remove(os.path.join(starter, name))
    return checks


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
