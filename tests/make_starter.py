#!/usr/bin/env python3
"""make_starter.py: writes the starter repository that students get, made from the lesson.

usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] [--lab-only | --autograder] OUT

  --blank STEPS  the STEPs the student writes, such as 2,3,4,5,6 (default 3,4,5,6: the
                 attention itself; STEP 1 and 2 draw the random numbers in the order the
                 reference needs, and STEP 7 is the lab's own check, so they are given)
  --points P     points for STEP 1 to 7 (default 1 each), for the Classroom workflow and
                 the student's README; the checker takes the same with --grade --points
  --lab FILE     the lesson to blank (default: this project's lab04_attention.cpp)
  --lab-only     write only the lab with its blanks, to the file OUT
  --autograder   write Gradescope's autograder, a zip file OUT: setup.sh and run_autograder
                 (tests/gradescope/) with the files that build and grade a submitted lab
  OUT            the folder to write the starter into: new, or empty

The starter is this project's lab04_attention.cpp with each blanked STEP's code replaced by
a TODO that compiles: the lesson's comments stay (they are the hints), the printing stays,
and the statements that compute the step (those that define or change a tensor) give way to
a call not_written_yet(n, hint), which prints "STEP n: not written yet: <hint>" and exits 4,
and to plain declarations of what the later steps use. Beside it: CMakeLists.txt,
CMakePresets.json, .clang-format and .gitignore as they are here; the checker with its
reference and catalogue; a tests/CMakeLists.txt with one test per STEP; a README for the
student; and .github/workflows/classroom.yml for GitHub Classroom, one graded step per STEP.
Nothing is copied by hand, so the starter follows the lesson whenever it is made again.

Exit status: 0 written; 2 bad arguments, an OUT that is not empty, or a lab whose STEP
comments cannot be found (nothing is written then).
"""
import os
import re
import shutil
import sys

import check_lab
import grading  # the points of the steps are read as the checker reads them

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)
DEFAULT_BLANKS = [3, 4, 5, 6]
COPIED = ["CMakeLists.txt", "CMakePresets.json", ".clang-format", ".gitignore",
          "cmake/cxx_standard.cmake", "cmake/watch.cmake",
          "tests/check_lab.py", "tests/diagnosis.py", "tests/grading.py", "tests/reference_attention.py",
          "tests/mistakes.py", "tests/lab_pch.h", "tests/lab_pch_instances.cpp", "tests/pch_guard.sh",
          "tests/lab_watch.cpp"]
DECLARATION = re.compile(r"^(const\s+)?(torch::Tensor|torch::nn::Linear|bool)\s+(\w+)\b")
CHANGE = re.compile(r"^(if\s*\([^)]*\)\s*)?(\w+)\.\w+\(")  # scores.mul_(...), maybe under an if
EMPTY = {"torch::Tensor": "torch::Tensor {};", "torch::nn::Linear": "torch::nn::Linear {}{{nullptr}};",
         "bool": "bool {} = false;"}


class Usage(Exception):
    """One line on stderr, exit 2, nothing written."""


# --- reading the lesson -------------------------------------------------------------------

def code_of(line):
    """A line without its // comment and with its string literals emptied."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def statements(lines):
    """The region's lines as items: ("text", [line]) for comments and blank lines, or
    ("code", [lines]) for one whole statement (a block counts as one)."""
    items, current, depth = [], [], 0
    for line in lines:
        code = code_of(line).strip()
        if not current and not code:
            items.append(("text", [line]))
            continue
        current.append(line)
        depth += code.count("(") + code.count("{") - code.count(")") - code.count("}")
        if depth == 0 and code.endswith((";", "}")):
            items.append(("code", current))
            current = []
    if current:
        raise Usage("cannot read a statement of lab04_attention.cpp that ends near %r" % current[-1].strip()[:60])
    return items


def lesson_steps(source):
    """{step: (first line, end line)} of each STEP's region in main, and main's last line."""
    lines = source.split("\n")
    start = next((n for n, l in enumerate(lines) if re.match(r"^int main\(", l)), None)
    end = next((n for n in range(start or 0, len(lines)) if lines[n].startswith("} catch")), None)
    if start is None or end is None:
        raise Usage("cannot find main() and its closing '} catch' in lab04_attention.cpp: is it the lesson?")
    marks = {}
    for n in range(start, end):
        m = re.match(r"^\s*// STEP (\d+):", lines[n])
        if m:
            marks.setdefault(int(m.group(1)), n)
    missing = [n for n in range(1, 8) if n not in marks]
    if missing or sorted(marks.values()) != [marks[n] for n in range(1, 8)]:
        raise Usage("cannot find the comments '// STEP 1:' to '// STEP 7:' in order in main() of "
                    "lab04_attention.cpp%s: the lesson was edited beyond recognition" %
                    (" (no STEP %s)" % ", ".join(map(str, missing)) if missing else ""))
    bounds = {n: (marks[n], marks[n + 1] if n < 7 else end) for n in range(1, 8)}
    return lines, bounds, end


def blanked(items):
    """(indices of the statements to blank, names they define with their types, names they change)."""
    cut, defined, changed = [], [], []
    for i, (kind, lines) in enumerate(items):
        if kind != "code":
            continue
        code = " ".join(code_of(l).strip() for l in lines)
        d, c = DECLARATION.match(code), CHANGE.match(code)
        if d:
            cut.append(i)
            defined.append((d.group(2), d.group(3), lines[0]))
        elif c:
            cut.append(i)
            changed.append(c.group(2))
    return cut, defined, changed


def hint_of(defined, changed):
    names = [name for _, name, _ in defined]
    shape = next((m.group(1) for _, _, line in defined
                  for m in [re.search(r"//\s*(\(.*)$", line)] if m), None)
    hint = "define " + ", ".join(names) if names else "write this step"
    if shape:
        hint += " " + shape
    more = [c for c in dict.fromkeys(changed) if c not in names]
    if more:
        hint += "; then change " + ", ".join(more)
    return hint


def blank_step(step, region, rest):
    """The region of a STEP with its computing statements replaced by a TODO; rest is the text
    of main after this region (what it still uses must stay declared)."""
    items = statements(region)
    cut, defined, changed = blanked(items)
    if not cut:
        raise Usage("STEP %d of lab04_attention.cpp has no statement that defines or changes a "
                    "tensor: nothing to blank" % step)
    kept_text = "\n".join(code_of(l) for i, (_, ls) in enumerate(items) if i not in cut for l in ls) + rest
    needed = [(t, name) for t, name, _ in defined if re.search(r"\b%s\b" % name, kept_text)]
    hint = hint_of(defined, changed)
    indent = re.match(r"^\s*", items[cut[0]][1][0]).group(0)
    todo = [indent + "// TODO(STEP %d): your code here, in place of the lines marked TODO(STEP %d)."
            % (step, step),
            indent + 'not_written_yet(%d, "%s");  // TODO(STEP %d)' % (step, hint, step)]
    todo += [indent + EMPTY[t].format(name) + "  // TODO(STEP %d)" % step for t, name in needed]
    out = []
    for i, (_, lines) in enumerate(items):
        if i == cut[0]:
            out += todo
        if i not in cut:
            out += lines
    return out, hint


def make_lab(source, blanks):
    """The lab with the STEPs of blanks left for the student: (text, {step: hint})."""
    lines, bounds, end = lesson_steps(source)
    out, hints, at = [], {}, 0
    for step in range(1, 8):
        first, last = bounds[step]
        out += lines[at:first]
        if step in blanks:
            rest = "\n".join(code_of(l) for l in lines[last:end])
            region, hints[step] = blank_step(step, lines[first:last], rest)
            out += region
        else:
            out += lines[first:last]
        at = last
    out += lines[at:]
    return "\n".join(out), hints


# --- the starter's other files ------------------------------------------------------------

def readme_command(readme, marker):
    lines = readme.split("\n")
    start = lines.index("<!-- %s -->" % marker) + 1
    fence = next(n for n in range(start, len(lines)) if lines[n].startswith("```"))
    end = next(n for n in range(fence + 1, len(lines)) if lines[n].startswith("```"))
    return "\n".join(lines[fence + 1:end])


def student_readme(blanks, hints, points, install, rebuild):
    steps = ", ".join(map(str, blanks))
    rows = "\n".join("| STEP %d | %s | %s |" % (n, grading.fmt(points[n - 1]),
                                               "yours: " + hints[n] if n in hints else "given")
                     for n in range(1, 8))
    return """# Lab 04: self-attention in C++ with LibTorch (starter)

One head of causal self-attention, computed in seven printed steps, in one file:
[`lab04_attention.cpp`](lab04_attention.cpp). STEP {steps} are yours to write. Each stands
in the file as a `TODO(STEP n)`, under the lesson's comments, which say what the step does
and why: they are your hints. Replace the TODO lines of a step with your code; the printing
around them is there already.

## Build and run

On Debian 12, 13 or testing (or a recent Ubuntu), this installs what the lab needs, builds it
and runs it:

```sh
{install}
```

After each edit:

```sh
{rebuild}
```

Until a step is written the run stops there, with `STEP n: not written yet: <what it should
define>` and exit status 4. `build/lab04_attention --help` lists the options.

## Check your work

```sh
tests/check_lab.py --grade build/lab04_attention    # your grade, step by step
tests/check_lab.py build/lab04_attention            # the first step that differs, and why
ctest --preset default                               # one test per STEP: step_3_is_right, ...
```

`--grade` judges each step on your own numbers: STEP 4 on the scores your STEP 3 printed,
STEP 5 on your masked scores, and so on, so a mistake costs the step where it is made and
not every step after it. STEP 1 and 2 are compared with the reference (their inputs are
random draws). STEP 7: the verdicts your lab prints must be right for the weights it printed,
and the exit status must follow them. Without `--grade`, the checker reports the first step
that differs in each case and names the mistake when it knows it.

## What to write, and the points

| step | points | what |
| --- | --- | --- |
{rows}

Your repository runs the same grade on every push (`.github/workflows/classroom.yml`).
""".format(steps=steps, install=install, rebuild=rebuild, rows=rows)


def tests_cmake():
    return """# The starter's tests. The first grades the lab (tests/check_lab.py --grade: each STEP
# judged on the lab's own numbers) and passes when it could; then one test per STEP, right
# when the grade gives that step its points. Needs a Python that can import torch (Debian:
# python3-torch); check_lab.py finds one.
set(grade ${CMAKE_CURRENT_BINARY_DIR}/grade.txt)
add_test(NAME the_checker_grades_the_lab
         COMMAND sh -c "\\"$0\\" --grade --report \\"$1\\" \\"$2\\"; test $? -le 1"
                 ${CMAKE_CURRENT_SOURCE_DIR}/check_lab.py ${grade} $<TARGET_FILE:lab04_attention>)
set_tests_properties(the_checker_grades_the_lab PROPERTIES FIXTURES_SETUP grade)
foreach(step RANGE 1 7)
  add_test(NAME step_${step}_is_right
           COMMAND sh -c "grep -q \\"^STEP $0 .*right in every case$\\" \\"$1\\" || { grep \\"^STEP $0 \\" \\"$1\\"; exit 1; }"
                   ${step} ${grade})
  set_tests_properties(step_${step}_is_right PROPERTIES FIXTURES_REQUIRED grade)
endforeach()
"""


def classroom_workflow(points, setup):
    steps = ""
    for n in range(1, 8):
        steps += """      - name: STEP {n}
        id: step-{n}
        if: always()
        uses: education/autograding-command-grader@v1
        with:
          test-name: STEP {n}
          setup-command: ""
          command: grep "^STEP {n} .*right in every case$" grade.txt
          timeout: 1
          max-score: {p}
""".format(n=n, p=grading.fmt(points[n - 1]))
    env = "".join('          STEP-%d_RESULTS: "${{ steps.step-%d.outputs.result }}"\n' % (n, n) for n in range(1, 8))
    return """# GitHub Classroom: grades every push, on Debian 12, 13 and testing. The checker grades the lab
# once (each STEP judged on the lab's own numbers); then one graded step per STEP, whose
# max-score is its points, and the reporter that sums them (for Debian 12's run: one grade).
# They run even when the build fails (a lab that does not compile scores 0). Made by
# make_starter.py from the lab's project.
name: Autograding Tests
on:
  push:
  workflow_dispatch:
  repository_dispatch:
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    strategy:
      fail-fast: false
      matrix:  # Debian 12, 13 and testing: the lab must build with the newest LibTorch too
        debian: [bookworm, trixie, testing]
    runs-on: ubuntu-latest
    container: debian:${{{{ matrix.debian }}}}
    if: github.actor != 'github-classroom[bot]'
    steps:
      - name: Install git, so that checkout makes a real clone
        run: apt-get update && apt-get install -y --no-install-recommends git ca-certificates
      - uses: actions/checkout@v4
      - name: Install LibTorch and build the lab
        run: {setup}
      - name: Grade every STEP
        if: always()
        run: tests/check_lab.py --grade --report grade.txt build/lab04_attention || test $? -eq 1
{steps}      - name: Autograding Reporter
        if: always() && matrix.debian == 'bookworm'
        uses: education/autograding-grading-reporter@v1
        env:
{env}        with:
          runners: {runners}
""".format(setup=setup, steps=steps, env=env, runners=",".join("step-%d" % n for n in range(1, 8)))


def write_autograder(path, files):
    """Gradescope's autograder zip: setup.sh and run_autograder at its root, and the starter's
    files that build and grade a lab (the submission brings lab04_attention.cpp)."""
    import zipfile
    with zipfile.ZipFile(path + ".new", "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            with open(os.path.join(HERE, "gradescope", name)) as f:
                z.writestr(info, f.read())
        for name in COPIED:
            z.write(os.path.join(PROJECT, name), name)  # with its mode: check_lab.py runs
        z.writestr("tests/CMakeLists.txt", files["tests/CMakeLists.txt"])
    os.replace(path + ".new", path)
    print("make_starter: wrote %s: Gradescope's autograder (upload it as the autograder's zip)" % path)
    return 0


# --- the command -----------------------------------------------------------------------------

def parse_args(argv):
    blanks, points, lab_only, out = list(DEFAULT_BLANKS), [1.0] * 7, False, None
    lesson = os.path.join(PROJECT, "lab04_attention.cpp")
    while argv:
        a = argv.pop(0)
        if a == "--blank":
            text = argv.pop(0) if argv else ""
            try:
                blanks = sorted({int(s) for s in text.split(",")})
                assert text and all(1 <= n <= 7 for n in blanks)
            except (ValueError, AssertionError):
                raise Usage("--blank takes STEP numbers from 1 to 7 joined by commas, such as 3,4,5,6, "
                            "not %r" % text[:40])
        elif a == "--points":
            try:
                points = grading.parse_points(argv.pop(0) if argv else "")
            except check_lab.Usage as e:
                raise Usage(str(e))
        elif a == "--lab":
            lesson = argv.pop(0) if argv else ""
            if not os.path.isfile(lesson):
                raise Usage("--lab takes the path of a lab04_attention.cpp, not %r" % lesson[:80])
        elif a in ("--lab-only", "--autograder"):
            lab_only = a[2:]
        elif a.startswith("-") or out is not None:
            raise Usage("usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] "
                        "[--lab-only | --autograder] OUT (unexpected %r)" % a[:40])
        else:
            out = a
    if out is None:
        raise Usage("usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] "
                    "[--lab-only | --autograder] OUT")
    if lab_only:
        if os.path.isdir(out) or not os.path.isdir(os.path.dirname(os.path.abspath(out))):
            raise Usage("--%s writes a file: %r is a folder, or its folder does not exist" % (lab_only, out[:80]))
    elif os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise Usage("%r exists and is not an empty folder: give a new folder for the starter" % out[:80])
    return blanks, points, lab_only, out, lesson


def main(argv):
    try:
        blanks, points, lab_only, out, lesson = parse_args(list(argv))
        with open(lesson) as f:
            lab, hints = make_lab(f.read(), blanks)
        if lab_only == "lab-only":
            with open(out, "w") as f:
                f.write(lab)
            return 0
        with open(os.path.join(PROJECT, "README.md")) as f:
            readme = f.read()
        install = readme_command(readme, "install-build-run")
        rebuild = readme_command(readme, "rebuild-run")
        setup = re.sub(r"\s*&&\s*build/lab04_attention\s*$", "", install).replace("$(command -v sudo) ", "")
        files = {"lab04_attention.cpp": lab,
                 "README.md": student_readme(blanks, hints, points, install, rebuild),
                 "tests/CMakeLists.txt": tests_cmake(),
                 ".github/workflows/classroom.yml": classroom_workflow(points, setup)}
        if lab_only == "autograder":
            return write_autograder(out, files)
        os.makedirs(os.path.join(out, "tests"), exist_ok=True)
        os.makedirs(os.path.join(out, "cmake"), exist_ok=True)
        os.makedirs(os.path.join(out, ".github", "workflows"), exist_ok=True)
        for name in COPIED:
            shutil.copy2(os.path.join(PROJECT, name), os.path.join(out, name))
        for name, text in files.items():
            with open(os.path.join(out, name), "w") as f:
                f.write(text)
        print("make_starter: wrote %s: STEP %s blanked, points %s" % (
            out, ",".join(map(str, blanks)), ",".join(grading.fmt(p) for p in points)))
        return 0
    except Usage as e:
        print("make_starter: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, StopIteration, UnicodeDecodeError) as e:
        print("make_starter: cannot make the starter: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
