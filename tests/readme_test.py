#!/usr/bin/env python3
"""The README a student reads first fits in 200 lines and explains what the lab and the watch
show: what a case's label means, what a verdict's command runs, what "wrong in themselves"
means, that --once rebuilds build/lab04_attention too (every command after it runs the save), the hint after a
compile error of a habit of Python's, and the count a failed test run ends with. Its example
verdict names the command the watch's verdicts name.

usage: readme_test.py   (reads README.md beside tests/)
"""
import os
import sys

import checklist
import project

MAX_LINES = 200
SAID = [("a case's label: the seed, T, C and HEAD", "is a case: the seed, T, C and HEAD"),
        ("what a verdict's command runs", "runs that case on your lab as it is saved now"),
        ("what 'wrong in themselves' means", "\"Wrong in\nthemselves\" are the STEPs wrong on the numbers your lab gave them"),
        ("that --once rebuilds build/lab04_attention too", "it rebuilds `build/lab04_attention` from the same save"),
        ("the hint after a compile error of a habit of Python's", "ends with a `hint` that says the C++ way"),
        ("the count a failed test run ends with", "a count of the tests\nfailed, passed and skipped"),
        ("the example verdict's command, as the watch names it",
         "command: build/lab04_watch --once --no-check --seed 3")]


def main(argv):
    if argv:
        print("readme_test: usage: readme_test.py", file=sys.stderr)
        return 2
    with open(os.path.join(project.ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    flat = " ".join(text.split())
    checks = [("README.md has at most %d lines (%d)" % (MAX_LINES, len(text.splitlines())),
               len(text.splitlines()) <= MAX_LINES, "%d lines" % len(text.splitlines()))]
    for what, words in SAID:
        checks.append(("README.md says %s" % what, " ".join(words.split()) in flat, "not found: %r" % words))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
