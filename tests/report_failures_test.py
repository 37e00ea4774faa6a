"""A failed test run's report shows what failed: tools/report_failures.py on JUnit reports
made here, as ctest writes them.

usage: report_failures_test.py WORK_DIR

A failed test whose output is longer than a screen shows its first lines and its last (where
a test built on tests/checklist.py ends with what failed, and a traceback with its error), and
says how many were left out; a short one is shown whole; passing tests are not shown; skipped
tests are counted. The JUnit file's empty <failure> gets the output as its text and the first
line as its message. The checker's test shows the first case NOT OK and the diagnosis, from
the checker's JSON. A missing or unreadable report, or a wrong command line: one line on
stderr, nothing on stdout, exit 2.
"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import checklist
import project

TOOL = os.path.join(project.ROOT, "tools", "report_failures.py")
CHECKER_TEST = "every_step_of_the_lab_matches_the_reference_in_every_case"


def junit(path, cases):
    """A JUnit report as ctest --output-junit writes one: cases are (name, outcome, output),
    outcome "pass", "fail" (an empty <failure message="">) or "skip"."""
    suite = ET.Element("testsuite", name="Linux-c++", tests=str(len(cases)))
    for name, outcome, output in cases:
        case = ET.SubElement(suite, "testcase", name=name, classname=name, time="1.0", status="run")
        if outcome == "fail":
            ET.SubElement(case, "failure", message="")
        elif outcome == "skip":
            ET.SubElement(case, "skipped", message="")
        ET.SubElement(case, "system-out").text = output
    ET.ElementTree(suite).write(path, encoding="UTF-8", xml_declaration=True)


def run(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)


def main(argv):
    if len(argv) != 1:
        print("report_failures_test: usage: report_failures_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = argv[0]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "tests"))
    checks = []

    # A long failure whose check that failed is near its end, as a checklist's report is.
    long_out = ["progress line %d of what the test ran" % i for i in range(1, 41)]
    long_out += ["OK      check %d held" % i for i in range(1, 21)]
    long_out += ["NOT OK  the grader ends within 68 s", "        got: 72.7 s", "20 passed, 1 failed",
                 "NOT OK  the grader ends within 68 s: got 72.7 s"]
    short_out = ["Traceback (most recent call last):", '  File "x.py", line 3, in <module>',
                 "AssertionError: the lesson's lines changed"]
    report = os.path.join(work, "junit.xml")
    junit(report, [("a_long_test_that_failed", "fail", "\n".join(long_out) + "\n"),
                   ("a_short_test_that_failed", "fail", "\n".join(short_out) + "\n"),
                   ("a_test_that_passed", "pass", "PASSED-MARKER everything held\n"),
                   ("a_test_that_was_skipped", "skip", "SKIPPED: needs right numbers\n"),
                   ("another_skipped_test", "skip", "SKIPPED: no namespaces\n")])
    got = run(report)
    out = got.stdout.splitlines()
    checks.append(("it reads the report: exit 0, nothing on stderr", got.returncode == 0 and not got.stderr,
                   "exit %d, stderr %r" % (got.returncode, got.stderr)))
    block = out[out.index("--- a_long_test_that_failed:") + 1:] if "--- a_long_test_that_failed:" in out else []
    block = block[:next((i for i, l in enumerate(block) if not l.startswith("  ")), len(block))]
    checks.append(("a long failure shows its last lines: the check that failed and what came",
                   "  NOT OK  the grader ends within 68 s" in block and "          got: 72.7 s" in block
                   and block[-1] == "  NOT OK  the grader ends within 68 s: got 72.7 s", "\n".join(block)))
    checks.append(("... and its first lines, what it ran", block[:1] == ["  progress line 1 of what the test ran"],
                   "\n".join(block[:3])))
    skipped_lines = len(long_out) - (len(block) - 1)
    checks.append(("... cut to a screenful, saying how many lines were left out (%d)" % skipped_lines,
                   len(block) <= 26 and any(("%d lines left out" % skipped_lines) in l for l in block),
                   "%d lines shown:\n%s" % (len(block), "\n".join(block))))
    checks.append(("a short failure is shown whole", all("  " + l in out for l in short_out), got.stdout))
    checks.append(("a passing test is not shown", "PASSED-MARKER" not in got.stdout
                   and "a_test_that_passed" not in got.stdout, got.stdout))
    checks.append(("where the checker passed, each skipped test is named with its reason (the machine's)",
                   "  a_test_that_was_skipped: SKIPPED: needs right numbers" in out
                   and "  another_skipped_test: SKIPPED: no namespaces" in out
                   and "right numbers run once" not in got.stdout, got.stdout))
    checks.append(("its last line counts the tests failed, passed and skipped (2, 1, 2: ctest's own counts a "
                   "skipped test as passed)", out[-1:] == ["Tests: 2 failed, 1 passed, 2 skipped (on this machine: "
                                                            "see above)."], out[-1:]))
    failures = {c.get("name"): c.find("failure") for c in ET.parse(report).getroot().iter("testcase")}
    long_failure = failures["a_long_test_that_failed"]
    checks.append(("the JUnit file's <failure> gets the whole output and its first line as the message",
                   long_failure.text == "\n".join(long_out) + "\n"
                   and long_failure.get("message") == "progress line 1 of what the test ran",
                   "message %r, text of %d chars" % (long_failure.get("message"), len(long_failure.text or ""))))

    # The checker's test: its first case NOT OK and the diagnosis, from its JSON, shown last.
    checker_report = os.path.join(work, "checker.xml")
    junit(checker_report, [(CHECKER_TEST, "fail", "the checker's whole report\n" * 40)])
    with open(os.path.join(work, "tests", "checker.json"), "w") as f:
        json.dump({"ok": False, "first": ["NOT OK  case 3,4,6,6", "  STEP 4: worst at row 0, column 1"],
                   "ending": ["diagnosis: the mask is inverted", "2 passed, 4 failed"]}, f)
    got = run(checker_report, os.path.join(work, "tests", "checker.json"))
    checks.append(("the checker's failure shows its first case NOT OK, then the diagnosis, last",
                   got.returncode == 0 and got.stdout.rstrip().splitlines()[-5:] == [
                       "  NOT OK  case 3,4,6,6", "    STEP 4: worst at row 0, column 1",
                       "  diagnosis: the mask is inverted", "  2 passed, 4 failed",
                       "Tests: 1 failed, 0 passed, 0 skipped."], got.stdout))
    failure = ET.parse(checker_report).getroot().find("testcase").find("failure")
    checks.append(("... and its <failure> message names the case and the diagnosis",
                   failure.get("message") == "NOT OK  case 3,4,6,6 | STEP 4: worst at row 0, column 1 | "
                   "diagnosis: the mask is inverted | 2 passed, 4 failed", failure.get("message")))
    waiting = os.path.join(work, "waiting.xml")
    junit(waiting, [(CHECKER_TEST, "fail", "the checker's whole report\n"),
                    ("a_test_that_needs_right_numbers", "skip", "SKIPPED: needs right numbers\n")])
    got = run(waiting, os.path.join(work, "tests", "checker.json"))
    checks.append(("while the checker fails, the skipped tests are said to wait for right numbers, not named",
                   got.stdout.rstrip().splitlines()[-1:] == ["Tests: 1 failed, 0 passed, 1 skipped (the tests that "
                                                             "need right numbers run once the checker passes)."]
                   and "a_test_that_needs_right_numbers" not in got.stdout, got.stdout))

    # The build before ctest failed (the README's command then runs the report anyway): a lab
    # saved after the last report, or a build folder with none yet, says no test ran, and shows
    # no old report.
    home, build = os.path.join(work, "project"), os.path.join(work, "project", "build")
    os.makedirs(build)
    with open(os.path.join(build, "CMakeCache.txt"), "w") as f:
        f.write("CMAKE_HOME_DIRECTORY:INTERNAL=%s\n" % home)
    stale = os.path.join(build, "junit.xml")
    junit(stale, [("an_old_failure", "fail", "OLD-MARKER a failure of the run before the edit\n")])
    with open(os.path.join(home, "lab04_attention.cpp"), "w") as f:
        f.write("int main( {}\n")
    os.utime(stale, (1, 1))  # written long before the lab was saved
    for what, path in (("a report older than the lab's last save", stale),
                       ("no report yet", os.path.join(build, "none.xml"))):
        got = run(path)
        checks.append(("%s, in a build folder: it says no test ran and the lab did not build, shows no old "
                       "failure, exit 0" % what, got.returncode == 0 and "No test ran" in got.stdout
                       and "did not build" in got.stdout and "OLD-MARKER" not in got.stdout and not got.stderr,
                       "exit %d, stdout %r, stderr %r" % (got.returncode, got.stdout[-300:], got.stderr[-300:])))
    os.utime(stale, None)  # a run after the save: read as usual
    got = run(stale)
    checks.append(("a report written after the lab's last save is read as usual", "OLD-MARKER" in got.stdout,
                   got.stdout[-300:]))

    # Bad input: one line on stderr, nothing on stdout, exit 2.
    broken = os.path.join(work, "broken.xml")
    with open(broken, "w") as f:
        f.write("<testsuite><testcase name='x'>")
    for what, args in (("no report at that path", [os.path.join(work, "none.xml")]),
                       ("a report that is not XML", [broken]), ("no argument", []),
                       ("three arguments", [report, report, report])):
        got = run(*args)
        checks.append(("%s: one line on stderr, nothing on stdout, exit 2" % what,
                       got.returncode == 2 and not got.stdout and len(got.stderr.splitlines()) == 1
                       and "Traceback" not in got.stderr,
                       "exit %d, stdout %r, stderr %r" % (got.returncode, got.stdout[:200], got.stderr[:300])))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
