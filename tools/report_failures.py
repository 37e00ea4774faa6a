#!/usr/bin/env python3
"""Ends a failed test run with one report: what failed, the checker's diagnosis last.

usage: report_failures.py JUNIT_XML

Run after ctest has failed (the README's test command does). For each failed test it prints
the test's name and its output, cut to a screenful; for the checker's report, only the first
case that is NOT OK, then the diagnosis (and any note), which stand in the last lines. It says
how many tests were skipped because they need right numbers, and where the whole report is.

It also makes the JUnit report readable on CI pages: ctest --output-junit writes a failed
test's output to <system-out> and an empty <failure message="">, and most CI pages show only
the <failure>; this copies the output into the failure's text, and the checker's first NOT OK
line, its STEP and the diagnosis (or the output's first line) into the message.

Exit status: 0 when the report was read, 2 when there is none to read.
"""
import os
import sys
import xml.etree.ElementTree as ET

MAX_LINES = 25  # of a failed test's output that are shown here; the JUnit report has all
CASE_LINES = ("OK ", "NOT OK", "NOT RUN")
DIAGNOSIS = ("note:", "same tensor:", "diagnosis", "  it does not explain", "           and",
             "wrong in themselves")


def checker_summary(lines):
    """From a checker's report: the first NOT OK case with its lines, then the diagnosis and
    the count; None when lines are not a checker's report."""
    first = next((n for n, l in enumerate(lines) if l.startswith("NOT OK")), None)
    if first is None or not any(l.startswith("check_lab: ") for l in lines):
        return None
    end = next((n for n in range(first + 1, len(lines)) if lines[n].startswith(CASE_LINES)
                or lines[n].startswith(DIAGNOSIS)), len(lines))
    tail = [l for l in lines[end:] if l.startswith(DIAGNOSIS)]
    count = [l for l in lines if " passed, " in l and l.split()[0].isdigit()]
    return lines[first:end] + tail + count[-1:]


def main(argv):
    if len(argv) != 1:
        print("report_failures: usage: report_failures.py JUNIT_XML", file=sys.stderr)
        return 2
    try:
        tree = ET.parse(argv[0])
    except (OSError, ET.ParseError) as e:
        print("report_failures: no JUnit report to read at %s (%s): did ctest run?" % (argv[0], e),
              file=sys.stderr)
        return 2
    failed, skipped, checker = [], 0, None
    for case in tree.getroot().iter("testcase"):
        out = case.find("system-out")
        text = out.text if out is not None and out.text else ""
        lines = [l.rstrip() for l in text.splitlines() if l.strip()]
        if case.find("skipped") is not None and "SKIPPED: needs right numbers" in text:
            skipped += 1
        failure = case.find("failure")
        if failure is None:
            continue
        summary = checker_summary(lines)
        if summary:
            message = [l.strip() for l in summary[0:2]] + [l for l in summary if l.startswith("diagnosis")]
        else:
            message = lines[:1]
        failure.set("message", " | ".join(message) or "failed")
        failure.text = text
        if summary and checker is None:
            checker = (case.get("name"), summary)
        else:
            failed.append((case.get("name"), lines))
    tree.write(argv[0], encoding="UTF-8", xml_declaration=True)

    skip = (" (%d tests skipped: they need right numbers, and the checker found the lab's wrong)"
            % skipped if skipped else "")
    print("\n=== what failed%s ===" % skip)
    for name, lines in failed:
        print("--- %s:" % name)
        for line in lines[:MAX_LINES]:
            print("  " + line)
        if len(lines) > MAX_LINES:
            print("  ... %d more lines in the whole report" % (len(lines) - MAX_LINES))
    print("The whole report: %s (each failed test's output is in its <failure>)." % os.path.relpath(argv[0]))
    if checker:
        print("--- %s: the first case NOT OK, then the diagnosis:" % checker[0])
        for line in checker[1]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
