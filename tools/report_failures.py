#!/usr/bin/python3
"""Ends a failed test run with one report: what failed, the checker's diagnosis last.

usage: report_failures.py JUNIT_XML [CHECKER_JSON]

Run after ctest has failed (the README's test command does). For each failed test it prints
the test's name and its output, cut to a screenful (its first lines and its last, where a
test ends with what failed and a traceback with its error); for the checker's test, only the first
case that is NOT OK, then the diagnosis (and any note), which stand in the last lines. Its last
line counts the tests failed, passed and skipped (ctest's own counts a skipped test as passed;
those that need right numbers are skipped while the checker finds the lab's wrong; where the
checker passed, a skip is the machine's, and each skipped test is named with its last line,
its reason), and it says where the whole report is.

It reads values, not wording: which tests failed or were skipped from the JUnit report, and
the checker's first case NOT OK and its diagnosis from the verdict's parts that the checker's
test writes (check_lab.py --json: CHECKER_JSON, by default tests/check_lab_report.json in the
build folder that holds JUNIT_XML).

It also makes the JUnit report readable on CI pages: ctest --output-junit writes a failed
test's output to <system-out> and an empty <failure message="">, and most CI pages show only
the <failure>; this copies the output into the failure's text, and the checker's first NOT OK
line, its STEP and the diagnosis (or the output's first line) into the message.

When the lab was saved after the report was written (or none was: the build before ctest
failed), it says that no test ran and the lab did not build, and shows no old report.

Exit status: 0 when the report was read (or no test ran), 2 when there is none to read.

It runs under the system's Python (/usr/bin/python3; it needs only the standard library), not
the first python3 on PATH: where that is a version manager's shim (pyenv's), finding the
interpreter cost a failing test run a fifth of a second before the report's first line.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

MAX_LINES = 25  # of a failed test's output that are shown here; the JUnit report has all
HEAD_LINES = 6  # of those, from its start (what it ran); the rest from its end (what failed)
CHECKER_TEST = "every_step_of_the_lab_matches_the_reference_in_every_case"  # tests/CMakeLists.txt's


def checker_summary(path):
    """The checker's first case NOT OK and what follows the cases (check_lab.py --json), or
    None when there is no such file or the checker found nothing wrong."""
    try:
        with open(path) as f:
            data = json.load(f)
        return None if data["ok"] else (list(data["first"]), list(data["ending"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def shown(lines):
    """A failed test's output cut to MAX_LINES: its first HEAD_LINES and its last, with a line
    that says how many were left out between them."""
    if len(lines) <= MAX_LINES:
        return lines
    tail = MAX_LINES - HEAD_LINES - 1
    return lines[:HEAD_LINES] + ["... %d lines left out here, in the whole report" % (len(lines) - HEAD_LINES - tail)] \
        + lines[-tail:]


def lab_source(build):
    """The lab's source file of a build folder (its CMakeCache.txt names the project's folder),
    or None."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            home = next((l.split("=", 1)[1].strip() for l in f if l.startswith("CMAKE_HOME_DIRECTORY:")), None)
    except OSError:
        return None
    return home and os.path.join(home, "lab04_attention.cpp")


def not_built(junit):
    """Whether no test ran since the lab was last saved: the build before ctest failed (the
    README's command then runs this on the report of the run before the edit, or on none)."""
    source = lab_source(os.path.dirname(os.path.abspath(junit)))
    if not source or not os.path.exists(source):
        return False
    return not os.path.exists(junit) or os.path.getmtime(source) > os.path.getmtime(junit)


def main(argv):
    if len(argv) not in (1, 2):
        print("report_failures: usage: report_failures.py JUNIT_XML [CHECKER_JSON]", file=sys.stderr)
        return 2
    if not_built(argv[0]):
        print("\nNo test ran since lab04_attention.cpp was saved: the lab did not build. The compiler's messages "
              "are above; fix what they say, then run this again.")
        return 0
    try:
        tree = ET.parse(argv[0])
    except (OSError, ET.ParseError) as e:
        print("report_failures: no JUnit report to read at %s (%s): did ctest run?" % (argv[0], e),
              file=sys.stderr)
        return 2
    failed, skipped, checker, total = [], [], None, 0
    for case in tree.getroot().iter("testcase"):
        total += 1
        out = case.find("system-out")
        text = out.text if out is not None and out.text else ""
        lines = [l.rstrip() for l in text.splitlines() if l.strip()]
        if case.find("skipped") is not None:
            skipped.append((case.get("name"), lines[-1:]))
        failure = case.find("failure")
        if failure is None:
            continue
        summary = checker_summary(argv[1] if len(argv) > 1 else os.path.join(
            os.path.dirname(argv[0]), "tests", "check_lab_report.json")) if case.get("name") == CHECKER_TEST else None
        if summary:
            message = [l.strip() for l in summary[0][0:2]] + summary[1]
            summary = summary[0] + summary[1]
        else:
            message = lines[:1]
        failure.set("message", " | ".join(message) or "failed")
        failure.text = text
        if summary and checker is None:
            checker = (case.get("name"), summary)
        else:
            failed.append((case.get("name"), lines))
    tree.write(argv[0], encoding="UTF-8", xml_declaration=True)

    # Why tests were skipped, from a value: while the checker's test fails, those that need right
    # numbers wait for it; when it passed, a skip is the machine's (each test's last line says why).
    waiting = bool(checker) and bool(skipped)
    skip = (" (%d tests skipped: those that need right numbers are, while the checker finds the lab's wrong)"
            % len(skipped) if waiting else "")
    print("\n=== what failed%s ===" % skip)
    for name, lines in failed:
        print("--- %s:" % name)
        for line in shown(lines):
            print("  " + line)
    print("The whole report: %s (each failed test's output is in its <failure>)." % os.path.relpath(argv[0]))
    if checker:
        print("--- %s: the first case NOT OK, then the diagnosis:" % checker[0])
        for line in checker[1]:
            print("  " + line)
    if skipped and not waiting:
        print("--- skipped on this machine (%d): what each needs that it lacks" % len(skipped))
        for name, last in skipped:
            print("  %s: %s" % (name, last[0][:300] if last else "(no reason printed)"))
    # ctest's own last line counts a skipped test as passed ("95% tests passed"): this one does not
    n_failed = len(failed) + (1 if checker else 0)
    print("Tests: %d failed, %d passed, %d skipped%s." % (
        n_failed, total - n_failed - len(skipped), len(skipped),
        " (the tests that need right numbers run once the checker passes)" if waiting else
        " (on this machine: see above)" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
