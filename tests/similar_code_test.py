#!/usr/bin/env python3
"""grade_class.py's summary names the labs whose students' own code shares what students who
worked alone would not (lab04/grader/similarity.py): a hint, never a verdict, never a grade changed.

usage: similar_code_test.py BUILD WORK_DIR

A class of 33 made here: the 30 labs of bench/run's class (the lesson seven times, forms of it,
known mistakes made alike by several students, a compile error, a crash, a hang), a student
who handed in the starter as it was given, and two students with code of their own (an integer
mask, where, softmax written out, a broadcast sum), one a copy of the other with every name
changed, its layout and comments changed. Expected, from how the labs were made: exactly that
pair is named, with its shares and the lines it shares side by side; the starter's text and the
labs that share the lesson or a one-line mistake match no one; the grades are those of the class
without the check. Copies behind cheap disguises: a dead statement after each line, statements
reordered, auto and a dead statement before each line, and the renamed copy, all with the
original in one class: one group of the five, no honest student named. The copier graded with
one classmate beside an earlier term that holds the original and the rest of the class: named
with the earlier term's original. A class of three: not compared, and the summary says why.
--no-similarity says the check was left out. Prints OK or NOT OK for each promise.
"""
import csv
import os
import re
import shutil
import subprocess
import sys

import checklist
import make_class

from lab04.instructor import blanking
import project
import written_another_way_test

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")
RENAMED = {"scores": "s_mat", "weights": "attn", "tril": "keep", "e": "num", "out": "result", "q": "qq", "k": "kk",
           "v": "vv", "upper": "above", "sums_ok": "rows_ok", "causal_ok": "no_future"}


def copied(text):
    """The text with every name of RENAMED changed, comments of its own and its layout changed."""
    for old, new in RENAMED.items():
        text = re.sub(r"(?<![.:\w\"])%s\b(?!\")" % old, new, text)  # the variable: not a method, a type, a name in quotes
    text = text.replace("torch::Tensor num = ", "// my own softmax, written out\n    torch::Tensor   num =  ")
    return text.replace("if (opt.mask) ", "if (opt.mask)\n      ")


def in_main(text, change):
    """text with change applied to each line of main()'s body that is a whole statement: it
    ends with ';' and the code line before it ended one too (or opened or closed a block)."""
    start = text.index("int main(")
    end = text.index("} catch", start)
    lines, before = text[start:end].split("\n"), ""
    for i, line in enumerate(lines):
        code = line.split("//", 1)[0].rstrip()
        if re.fullmatch(r" +[^/]*\S;", code) and before.endswith((";", "{", "}")):
            lines[i] = change(code) + line[len(code):]
        if code.strip():
            before = code
    return text[:start] + "\n".join(lines) + text[end:]


def dead_after_each_line(text):
    """A statement that does nothing after each line of main()."""
    return in_main(text, lambda line: line + " (void)0;")


def auto_and_dead_before_each_line(text):
    """auto for every declared type of main(), and a statement that does nothing before each line."""
    text = in_main(text, lambda line: re.sub(r"^( +)", r"\1(void)0; ", line))
    start = text.index("int main(")
    return text[:start] + re.sub(r"\b(?:const )?(?:torch::Tensor|bool) (?=\w+ = )", "auto ", text[start:])


def reordered(text):
    """Two independent statements swapped, and the mask made before the scores."""
    lines = text.split("\n")
    at = {name: next(i for i, l in enumerate(lines) if l.strip().startswith(name)) for name in
          ("const bool sums_ok", "const torch::Tensor upper", "torch::Tensor tril", "torch::Tensor scores")}
    lines[at["const bool sums_ok"]], lines[at["const torch::Tensor upper"]] = \
        lines[at["const torch::Tensor upper"]], lines[at["const bool sums_ok"]]
    tril = lines.pop(at["torch::Tensor tril"])
    lines.insert(at["torch::Tensor scores"], tril)
    return "\n".join(lines)


def write_class(folder, labs):
    for name, text in labs.items():
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(folder, name, "lab04_attention.cpp"), "w") as f:
            f.write(text)


def grade(build, folder, grades, *options):
    """Grades a class: (the finished process, the summary's section on code that looks alike)."""
    command = [sys.executable, GRADE_CLASS, "--draw", "7", "--build", build] + list(options) + [folder, grades]
    done = subprocess.run(command, capture_output=True, text=True)
    section = done.stdout.split("## Code that looks alike", 1)[1].split("\n## ", 1)[0] \
        if "## Code that looks alike" in done.stdout else ""
    return done, section


def main(argv):
    if len(argv) != 2:
        print("similar_code_test: usage: similar_code_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    build, work = (os.path.abspath(a) for a in argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        lesson = f.read()
    own = written_another_way_test.written(lesson, written_another_way_test.OTHERS["integer_mask_and_other_operations"])
    labs = {"student%02d" % n: make_class.lab_text(kind) for n, kind in enumerate(make_class.BENCH)}
    labs["starter_as_given"] = blanking.make_lab(lesson, blanking.DEFAULT_BLANKS)[0]
    labs["orla"], labs["otto"] = own, copied(own)
    write_class(os.path.join(work, "class"), labs)
    done, section = grade(build, os.path.join(work, "class"), os.path.join(work, "grades"))
    pairs = re.findall(r"^- (\S+) and (\S+)( \(an earlier term's\))?: (.*)$", section, re.M)
    checks = [("the class of %d is graded (exit 0)" % len(labs), done.returncode == 0, done.stderr[-800:]),
              ("exactly one pair is named: orla and otto (the copy with every name changed), with the share of "
               "each one's own lines in the other's and the lines they share side by side",
               [set(p[:2]) for p in pairs] == [{"orla", "otto"}] and re.search(r"\d+% of \w+'s own lines", section)
               and re.search(r"^    - orla line \d+ `.+` \| otto line \d+ `.+` \(", section, re.M) is not None,
               section or done.stdout[-1500:]),
              ("the section says it is a hint, never a verdict, and that grades are not changed",
               "never a verdict" in section and "not changed" in section, section)]
    page = os.path.join(work, "grades", "similar.html")
    text = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
    checks.append(("GRADES/similar.html names the pair, orla's and otto's shared lines side by side",
                   re.search(r"<h2[^>]*>(orla and otto|otto and orla)", text) is not None and text.count("<tr") > 2,
                   text[:600] or "no similar.html"))
    with open(os.path.join(work, "grades", "grades.csv"), newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    checks.append(("orla and otto are graded as any lab (7/7: their code is right), the starter as given 2/7",
                   rows.get("orla", {}).get("score") == "7" and rows.get("otto", {}).get("score") == "7"
                   and rows.get("starter_as_given", {}).get("score") == "2", {n: rows.get(n) for n in ("orla", "otto")}))

    # Copies behind cheap disguises, each a line of sed: every one is listed with the original or
    # another copy, all of them as one group, and no honest student with them.
    disguised = dict((n, t) for n, t in labs.items() if n not in ("otto",))
    disguised.update({"otto": copied(own), "pip": dead_after_each_line(own), "rex": reordered(own),
                      "sal": auto_and_dead_before_each_line(own)})
    write_class(os.path.join(work, "disguised"), disguised)
    done, section = grade(build, os.path.join(work, "disguised"), os.path.join(work, "grades-disguised"))
    group = re.findall(r"^- a group of (\d+) labs.*: (.*)$", section, re.M)
    named = set(re.findall(r"\b(student\d\d|starter_as_given|orla|otto|pip|rex|sal)\b", section))
    checks.append(("four copies behind disguises (every name changed; a dead statement after each line; statements "
                   "reordered; auto and a dead statement before each line) and the original: one group of the five, "
                   "and no honest student named", done.returncode == 0 and len(group) == 1
                   and set(group[0][1].split(", ")) == {"orla", "otto", "pip", "rex", "sal"}
                   and named == {"orla", "otto", "pip", "rex", "sal"}, section or done.stderr[-800:]))
    with open(os.path.join(work, "grades-disguised", "grades.csv"), newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    checks.append(("the disguised copies compile and are graded as any lab (7/7)",
                   all(rows.get(n, {}).get("score") == "7" for n in ("pip", "rex", "sal")),
                   {n: rows.get(n, {}).get("status") for n in ("pip", "rex", "sal")}))
    # Three labs: too few to tell what is rare among students who work alone.
    write_class(os.path.join(work, "three"), {"orla": own, "pip": disguised["pip"], "hal": lesson})
    done, section = grade(build, os.path.join(work, "three"), os.path.join(work, "grades-three"))
    checks.append(("a class of three: graded, and the summary says the labs were not compared, too few to tell what is "
                   "rare", done.returncode == 0 and "Not checked" in section and "too few" in section,
                   section or done.stderr[-800:]))

    # An earlier term that holds the original and the rest of the class; this term, the copier
    # and one classmate.
    write_class(os.path.join(work, "earlier"), {n: t for n, t in labs.items() if n != "otto"})
    write_class(os.path.join(work, "term2"), {"otto": copied(own), "hal": lesson})
    done, section = grade(build, os.path.join(work, "term2"), os.path.join(work, "grades2"), "--similar-to",
                          os.path.join(work, "earlier"))
    checks.append(("beside an earlier term's labs (--similar-to), the copier is named with the earlier term's "
                   "original", done.returncode == 0 and re.search(r"^- (otto and orla \(earlier\)|orla \(earlier\) and "
                                                                  r"otto) \(an earlier term's\)", section, re.M)
                   is not None, section or done.stderr[-800:]))
    done, section = grade(build, os.path.join(work, "term2"), os.path.join(work, "grades3"), "--no-similarity")
    checks.append(("--no-similarity: graded, and the summary says the check was left out",
                   done.returncode == 0 and "Not checked (--no-similarity)." in section, section or done.stderr[-800:]))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
