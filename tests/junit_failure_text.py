#!/usr/bin/env python3
"""Puts each failed test's report into its JUnit <failure> element, where CI shows it.

usage: junit_failure_text.py JUNIT_XML

ctest --output-junit writes a failed test's output to <system-out> and an empty
<failure message="">; most CI pages show only the <failure>. This copies the output into the
failure's text, and its first NOT OK line with the line after it (the checker's STEP) and
any diagnosis line (or the output's first line) into the message. Exit status: 0 when the
report was rewritten, 2 when there is none to read.
"""
import sys
import xml.etree.ElementTree as ET


def main(argv):
    if len(argv) != 1:
        print("junit_failure_text: usage: junit_failure_text.py JUNIT_XML", file=sys.stderr)
        return 2
    try:
        tree = ET.parse(argv[0])
    except (OSError, ET.ParseError) as e:
        print("junit_failure_text: no JUnit report to read at %s (%s): did ctest run?" % (argv[0], e),
              file=sys.stderr)
        return 2
    failed = 0
    for case in tree.getroot().iter("testcase"):
        failure, out = case.find("failure"), case.find("system-out")
        if failure is None:
            continue
        failed += 1
        text = out.text if out is not None and out.text else ""
        lines = [l.strip() for l in text.splitlines() if l.strip()]
        first = next((n for n, l in enumerate(lines) if l.startswith("NOT OK")), None)
        finding = [] if first is None else lines[first:first + 2]  # NOT OK and what is wrong
        finding += [l for l in lines if l.startswith("diagnosis:")]
        failure.set("message", " | ".join(finding) or (lines[0] if lines else "failed"))
        failure.text = text
    tree.write(argv[0], encoding="UTF-8", xml_declaration=True)
    print("junit_failure_text: %s: the report of %d failed test(s) copied into <failure>" % (argv[0], failed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
