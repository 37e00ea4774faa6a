"""A student's failing run reads as one report: the README's test command, run on a copy of
the project whose lab has one mistake, fails exactly one test (the checker's), skips the
tests that need right numbers, prints at most MAX_LINES lines and no grader's isolation line, and ends with the diagnosis
and a count of the tests failed, passed and skipped.

usage: wrong_lab_run_test.py PROJECT_DIR WRONG_LAB_CPP WORK_DIR DIAGNOSIS

  PROJECT_DIR    the project (its CMakeLists.txt, CMakePresets.json, README.md and tests/)
  WRONG_LAB_CPP  a lab04_attention.cpp with a mistake (a mutant of tests/CMakeLists.txt)
  WORK_DIR       a folder for the copy (emptied first)
  DIAGNOSIS      words that the diagnosis line must hold

Configures the copy with the default preset and builds it with the lesson, as a student's
checkout is built before the first edit (README: install-build-run), then puts the wrong lab
in its place and runs the README's test command there, as .ci/run reads it (the code block
after <!-- test -->). Prints OK or NOT OK for each promise.
"""
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import checklist
import project

MAX_LINES = 100
LAST = 15  # the diagnosis must stand in this many last lines


def main(argv):
    if len(argv) != 4 or not os.path.isfile(os.path.join(argv[0], "README.md")) or not os.path.isfile(argv[1]):
        print("wrong_lab_run_test: usage: wrong_lab_run_test.py PROJECT_DIR WRONG_LAB_CPP WORK_DIR DIAGNOSIS",
              file=sys.stderr)
        return 2
    project_dir, wrong, work, diagnosis = argv
    project.copy(project_dir, work)
    built = subprocess.run(["bash", "-c", "cmake --preset default && cmake --build --preset default"], cwd=work,
                           capture_output=True, text=True)
    if built.returncode != 0:
        print("NOT OK  the copy could not be configured and built:\n" + built.stdout[-2000:] + built.stderr[-2000:])
        return 1
    shutil.copy(wrong, os.path.join(work, "lab04_attention.cpp"))
    command = project.readme_command("test", os.path.join(project_dir, "README.md"))
    print("ran in %s: %s" % (work, command))
    run = subprocess.run(["bash", "-c", command], cwd=work, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    lines = run.stdout.splitlines()
    last = "\n".join(lines[-LAST:])
    checks = [
        ("the command fails", run.returncode != 0, "exit status %d" % run.returncode),
        ("ctest counts exactly one failed test", re.search(r"\b1 tests failed out of", run.stdout) is not None,
         next((l for l in lines if "tests failed out of" in l), "no ctest summary")),
        ("it prints at most %d lines (%d)" % (MAX_LINES, len(lines)), len(lines) <= MAX_LINES, "%d lines" % len(lines)),
        ("its last %d lines hold the diagnosis" % LAST,
         any(l.strip().startswith("diagnosis") and diagnosis in l for l in lines[-LAST:]), "last lines:\n" + last),
        ("its last %d lines say where the whole report is" % LAST, "The whole report:" in last, "last lines:\n" + last),
        ("no grader's line in a student's run: no isolation line, no compiler command line",
         not [l for l in lines if "isolation:" in l or l.startswith("FAILED: ")],
         [l for l in lines if "isolation:" in l or l.startswith("FAILED: ")][:3]),
    ]
    try:
        suite = ET.parse(os.path.join(work, "build", "junit.xml")).getroot()
        cases = list(suite.iter("testcase"))
        failures = [c.get("name") for c in cases if c.find("failure") is not None]
        skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
        checks += [
            ("JUnit holds one failure, the checker's, with the diagnosis in its message",
             len(failures) == 1 and diagnosis in (cases[[c.get("name") for c in cases].index(failures[0])]
                                                  .find("failure").get("message") or ""),
             "failures: %s" % failures),
            ("JUnit marks the tests that need right numbers skipped", len(skipped) >= 10,
             "%d skipped: %s" % (len(skipped), skipped)),
            ("its last line counts the tests failed, passed and skipped as JUnit has them (ctest's own counts a "
             "skipped test as passed)", lines[-1:] == ["Tests: 1 failed, %d passed, %d skipped (the tests that need "
                                                       "right numbers run once the checker passes)." % (
                                                           len(cases) - 1 - len(skipped), len(skipped))], lines[-1:]),
        ]
    except (OSError, ET.ParseError, ValueError) as e:
        checks.append(("JUnit report", False, "cannot read it: %s" % e))
    if not all(ok for _, ok, _ in checks):
        print("--- the command's whole output ---\n" + run.stdout)
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
