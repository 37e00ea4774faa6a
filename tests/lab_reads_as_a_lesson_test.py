#!/usr/bin/env python3
"""lab04_attention.cpp reads as a lesson: its opening comment says what a run prints (the
headers a default run prints, counted and named, as the lab run here prints them; "HEAD h of N"
and STEP 8 with several heads); its includes stand in one block at the top, each once; no
variable lives outside a function but constants; and what stands before main is the settings,
the layers and the helpers main calls, declared, not defined.

usage: lab_reads_as_a_lesson_test.py LAB   (LAB: the built lab; reads lab04_attention.cpp)
"""
import os
import re
import subprocess
import sys

import checklist
import project

# Declared before main for a starter's main, which calls it where a step is blanked.
FOR_THE_STARTER = {"not_written_yet"}
NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def headers(lab, *args):
    """The headers a run prints: "STEP 1", "STEP 3-5", ..., and "HEAD h of N" lines as "HEAD"."""
    out = subprocess.run([lab, *args], capture_output=True, text=True, timeout=120).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"^(STEP [\d-]+):|^(HEAD) \d+ of \d+$", line)
        if m:
            found.append(m.group(1) or m.group(2))
    return found


def opening_comment(source):
    lines = []
    for line in source.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return " ".join(" ".join(lines).split())


def code_lines(source):
    """The lines outside comments, at file scope or not, without their // comments."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    return [re.sub(r"\s*//.*$", "", line) for line in source.splitlines()]


def global_variables(lines):
    """Variables defined at file scope (column 0, outside any brace) that are not constants."""
    depth, found = 0, []
    for line in lines:
        if depth == 0 and re.match(r"^(?!constexpr\b|const\b|using\b|typedef\b|struct\b|class\b|enum\b|"
                                    r"namespace\b|template\b|return\b|#)[A-Za-z_][\w:<>, *&]*[\s*&]\w+"
                                    r"(\[\w*\])?\s*(=[^(]*|\{[^()]*\})?;\s*$", line):
            found.append(line.strip())
        depth += line.count("{") - line.count("}")
    return found


def before_main(lines):
    """The names of the functions declared or defined before main, and those defined there."""
    start = next(n for n, line in enumerate(lines) if re.match(r"^int main\(", line))
    declared, defined, depth = [], [], 0
    for line in lines[:start]:
        m = depth == 0 and re.match(r"^(?:\[\[noreturn\]\]\s+)?[\w:<>*& ]+?[\s*&](\w+)\(", line)
        if m and not line.startswith(("struct", "#")):
            (declared if "{" not in line else defined).append(m.group(1))
        depth += line.count("{") - line.count("}")
    return declared, defined, start


def main_body(lines, start):
    end = next(n for n in range(start, len(lines)) if lines[n].startswith("#endif"))
    return "\n".join(lines[start:end])


def main(argv):
    if len(argv) != 1:
        print("lab_reads_as_a_lesson_test: usage: lab_reads_as_a_lesson_test.py LAB", file=sys.stderr)
        return 2
    lab = argv[0]
    with open(os.path.join(project.ROOT, "lab04_attention.cpp"), encoding="utf-8") as f:
        source = f.read()
    comment = opening_comment(source)
    default = headers(lab)
    several = headers(lab, "--heads", "2")
    checks = [("a default run prints headers (%s)" % ", ".join(default), len(default) >= 5, default)]
    count = NUMBERS.get(len(default), str(len(default)))
    checks.append(("the opening comment says a run prints %s headers" % count,
                   re.search(r"\b%s headers\b" % count, comment) is not None, comment[:600]))
    for header in default:
        checks.append(("the opening comment names %s" % header, header in comment, comment[:600]))
    checks.append(("a run of two heads prints HEAD lines and STEP 8 (%s)" % ", ".join(several),
                   "HEAD" in several and "STEP 8" in several, several))
    checks.append(("the opening comment says several heads print 'HEAD h of N' and STEP 8",
                   "HEAD h of N" in comment and "STEP 8" in comment, comment[:600]))

    lines = code_lines(source)
    includes = [n for n, line in enumerate(lines) if line.startswith("#include")]
    first_code = next(n for n, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    late = [lines[n] for n in includes if n > first_code]
    checks.append(("every #include stands in the block at the top", not late, late))
    names = [lines[n].strip() for n in includes]
    twice = sorted({name for name in names if names.count(name) > 1})
    checks.append(("each header is included once", not twice, twice))
    variables = global_variables(lines)
    checks.append(("no variable outside a function but constants", not variables, variables))

    declared, defined, start = before_main(lines)
    checks.append(("no function is defined before main, only declared", not defined, defined))
    body = main_body(lines, start)
    unused = [name for name in declared
              if name not in FOR_THE_STARTER and not re.search(r"\b%s\(" % name, body)]
    checks.append(("each function declared before main is called in main (%d)" % len(declared),
                   declared and not unused, unused or declared))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
