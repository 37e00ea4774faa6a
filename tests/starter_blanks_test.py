"""Each STEP of the lesson can be left blank in a starter, and the blank holds nothing of it.

For every STEP n, make_starter.py --blank n --lab-only writes the lab with STEP n blanked.
Then: no line of the code it blanked (the lesson's lines that define or change a tensor in
that step) is left in the starter; and filling the blank with the lesson's own code, the lines
it took out put where its TODO lines stand, gives the lesson back byte for byte, so that the
filled lab builds and grades as the lesson does (full marks: grading_gives_the_lesson_full_marks).
Prints OK or NOT OK for each STEP.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

import project

LESSON = os.path.join(project.ROOT, "lab04_attention.cpp")


def code(line):
    """A line's code: no // comment, no surrounding space."""
    return line.split("//", 1)[0].strip()


# What computes a step, told apart here independently of make_starter.py: a declaration of a
# tensor, a layer or a flag; an in-place tensor method (mul_, masked_fill_); an assignment.
COMPUTES = re.compile(r"^(const )?(torch::Tensor|torch::nn::Linear|bool) \w+|\.\w+_\(|^\w+ = ")


def step_region(lines, step):
    """From a STEP's comment to the next STEP's, to the end of main, or to where the block that
    holds the STEP closes (STEP 2 to 7 run in a loop over the heads)."""
    start = next(n for n, l in enumerate(lines) if l.strip().startswith("// STEP %d:" % step))
    depth = 0
    for n in range(start + 1, len(lines)):
        depth += code(lines[n]).count("{") - code(lines[n]).count("}")
        if l_starts(lines[n], "// STEP %d:" % (step + 1)) or lines[n].startswith("} catch") or depth < 0:
            return lines[start:n]
    return lines[start:]


def l_starts(line, text):
    return line.strip().startswith(text)


def main():
    lesson = open(LESSON).read().split("\n")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for step in range(1, 8):
            out = os.path.join(tmp, "blank_%d.cpp" % step)
            made = subprocess.run([sys.executable, os.path.join(project.INSTRUCTOR, "make_starter.py"), "--blank", str(step),
                                   "--lab-only", out], capture_output=True, text=True)
            problems = []
            if made.returncode != 0:
                problems.append("make_starter.py exited %d: %s" % (made.returncode, made.stderr.strip()))
                starter = []
            else:
                starter = open(out).read().split("\n")
            # What the starter took out of the lesson, and what it put in.
            removed, added = [], []
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, lesson, starter, autojunk=False).get_opcodes():
                if tag != "equal":
                    removed.append(lesson[i1:i2])
                    added.append((j1, j2))
            if starter and len(removed) != 1:
                problems.append("the starter differs from the lesson in %d places, expected one blank" % len(removed))
            taken = [l for block in removed for l in block]
            if starter and not any(code(l) for l in taken):
                problems.append("no code was taken out")
            computing = {code(l) for l in step_region(lesson, step) if COMPUTES.search(code(l))}
            left = computing & {code(l) for l in starter}
            if left:
                problems.append("code that computes STEP %d is still in the starter: %s" % (step, sorted(left)[:3]))
            survivors = {code(l) for l in taken if code(l) and code(l) not in ("}", "{")} & {code(l) for l in starter}
            if survivors:
                problems.append("blanked code is still in the starter: %s" % sorted(survivors)[:3])
            todo = [l for j1, j2 in added for l in starter[j1:j2]]
            if starter and not all("TODO(STEP %d)" % step in l for l in todo):
                problems.append("a line put in is not marked TODO(STEP %d): %r" % (
                    step, next(l for l in todo if "TODO(STEP %d)" % step not in l)))
            if starter and not any(re.search(r"not_written_yet\(%d, \"[^\"]+\"\)" % step, l) for l in todo):
                problems.append("no not_written_yet(%d, hint) in the blank" % step)
            if len(removed) == 1:  # fill the blank with the lesson's own lines
                j1, j2 = added[0]
                filled = starter[:j1] + removed[0] + starter[j2:]
                if filled != lesson:
                    problems.append("filled with the lesson's code, it is not the lesson again")
            print("%s  STEP %d: blanked (%d lines of code taken out, %d TODO lines put in), filled back: %s" % (
                "NOT OK" if problems else "OK    ", step, sum(1 for l in taken if code(l)), len(todo),
                "the lesson" if not problems else "see below"))
            for p in problems:
                print("        " + p)
            failed += bool(problems)
    print("%d passed, %d failed" % (7 - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
