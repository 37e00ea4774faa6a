#!/usr/bin/env python3
"""Classes of students who each wrote STEPs 3 to 6 on their own, and copies behind disguises:
the similarity check's test data (similarity_test.py) and its benchmark (bench/similarity.py).

Each honest student starts from the lesson and writes each line of STEPs 3 to 6 in one of the
spellings students use, drawn with the weights below (seeded: the same class each time): the
product of q and k (matmul or mm, a method or a function, transpose(-2, -1), t() or
transpose(0, 1)), the scale (a division, a product with its inverse, pow, in place or not,
how HEAD becomes a double), the mask (made as the lesson does or as its comment says, named
tril or mask, applied with logical_not, == 0 or ~), softmax and the output, with auto or the
type, with or without braces. Nothing is copied: any likeness is chance and common habit.

A copier takes one lab and disguises it (disguised()): every name changed, the statements
split over temporaries, an expression moved into a helper, statements reordered, a
TODO(STEP n) comment after each copied line, or all of these at once.

usage: honest_class.py FOLDER [STUDENTS] [SEED]   writes FOLDER/<student>/lab04_attention.cpp
"""
import os
import random
import re
import sys

import project

# (weight, spelling) of each line; {T} is the type a student writes (auto or torch::Tensor),
# {M} the mask's name.
PRODUCT = [(6, "q.matmul(k.transpose(-2, -1))"), (4, "torch::matmul(q, k.transpose(-2, -1))"), (3, "q.matmul(k.t())"),
           (2, "torch::matmul(q, k.t())"), (2, "q.mm(k.t())"), (1, "torch::mm(q, k.t())"),
           (2, "torch::matmul(q, k.transpose(0, 1))"), (1, "q.matmul(k.transpose(0, 1))"),
           (1, "torch::matmul(q, torch::transpose(k, -2, -1))")]
SCALE = [(5, "scores = scores / std::sqrt(double(HEAD));"), (4, "scores = scores / std::sqrt((double)HEAD);"),
         (3, "scores.mul_(1.0 / std::sqrt(double(HEAD)));"), (3, "scores = scores * (1.0 / std::sqrt(HEAD));"),
         (2, "scores /= std::sqrt(static_cast<double>(HEAD));"), (2, "scores = scores * std::pow(HEAD, -0.5);"),
         (2, "scores.div_(std::sqrt(double(HEAD)));"), (1, "scores = scores.div(std::sqrt(double(HEAD)));"),
         (1, "scores = torch::div(scores, std::sqrt(double(HEAD)));"), (1, "scores *= 1.0 / std::sqrt(double(HEAD));")]
MASK = [(5, "{T} {M} = torch::tril(torch::ones({{T, T}}));"), (3, "{T} {M} = torch::ones({{T, T}}).tril();"),
        (3, "{T} {M} = torch::ones({{T, T}}, torch::kBool).tril_();"),
        (2, "{T} {M} = torch::tril(torch::ones({{T, T}}, torch::kBool));"),
        (1, "{T} {M} = torch::ones({{T, T}}, torch::dtype(torch::kBool)).tril();")]
FILL = [(5, "scores = scores.masked_fill({M} == 0, -INFINITY);"), (4, "scores.masked_fill_({M} == 0, -INFINITY);"),
        (2, "scores = scores.masked_fill({M}.logical_not(), -INFINITY);"),
        (2, "scores.masked_fill_({M}.logical_not(), -INFINITY);"),
        (1, "scores = scores.masked_fill({M} == 0, -std::numeric_limits<float>::infinity());"),
        (1, "scores.masked_fill_({M}.eq(0), -INFINITY);"),
        (1, "scores = scores.masked_fill({M} == 0, float(-INFINITY));")]
SOFTMAX = [(5, "torch::softmax(scores, -1)"), (3, "torch::softmax(scores, /*dim=*/-1)"), (3, "scores.softmax(-1)"),
           (2, "torch::softmax(scores, 1)"), (1, "scores.softmax(/*dim=*/1)"), (1, "torch::softmax(scores, -1, torch::kFloat)")]
OUT = [(6, "weights.matmul(v)"), (4, "torch::matmul(weights, v)"), (2, "weights.mm(v)"), (1, "torch::mm(weights, v)")]
# The lesson's lines of STEPs 3 to 6 that a student writes (one of each, or the two of the scale)
LESSON = {"product": "    torch::Tensor scores = q.matmul(k.transpose(-2, -1));",
          "scale": "    if (opt.scale) scores.mul_(1.0 / std::sqrt(double(HEAD)));",
          "mask": "    const torch::Tensor tril = torch::ones({T, T}, torch::kBool).tril_();",
          "fill": "    if (opt.mask) scores.masked_fill_(tril.logical_not(), -INFINITY);",
          "softmax": "    torch::Tensor weights = torch::softmax(scores, /*dim=*/-1);",
          "out": "    torch::Tensor out = weights.matmul(v);"}


def lesson():
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        return f.read()


def pick(rng, weighted):
    return rng.choices([s for _, s in weighted], [w for w, _ in weighted])[0]


def guarded(rng, condition, statement, braces):
    """`if (opt.scale) statement` in one of the shapes students write it."""
    if braces:
        return ["    if (%s) {" % condition, "      " + statement, "    }"]
    return ["    if (%s) %s" % (condition, statement)] if rng.random() < 0.8 else \
        ["    if (%s)" % condition, "      " + statement]


def honest_lab(rng, text):
    """The lesson with STEPs 3 to 6 written by one student: their spelling of each line."""
    typ = "auto" if rng.random() < 0.4 else "torch::Tensor"
    const = "const " if rng.random() < 0.2 else ""
    braces = rng.random() < 0.3
    mask = "tril" if rng.random() < 0.7 else "mask"
    lines = {"product": ["    %s scores = %s;" % (typ, pick(rng, PRODUCT))],
             "scale": guarded(rng, "opt.scale", pick(rng, SCALE), braces),
             "mask": ["    " + const + pick(rng, MASK).format(T=typ, M=mask)],
             "fill": guarded(rng, "opt.mask", pick(rng, FILL).format(M=mask), braces),
             "softmax": ["    %s%s weights = %s;" % (const, typ, pick(rng, SOFTMAX))],
             "out": ["    %s%s out = %s;" % (const, typ, pick(rng, OUT))]}
    for part, line in LESSON.items():
        text = replace_line(text, line, "\n".join(lines[part]))
    return text


def replace_line(text, start, new):
    """text with its line that starts with start (a trailing comment or not) replaced by new."""
    out, done = [], False
    for line in text.split("\n"):
        if not done and line.rstrip().startswith(start.rstrip()):
            out.append(new)
            done = True
        else:
            out.append(line)
    if not done:
        raise ValueError("the lesson has no line %r" % start)
    return "\n".join(out)


def honest_class(students, seed):
    """{name: lab text} of a class of students who each worked alone."""
    rng = random.Random(seed)
    text = lesson()
    return {"student%03d" % i: honest_lab(rng, text) for i in range(students)}


# --- copies -------------------------------------------------------------------------------
STEPS = ("product", "scale", "mask", "fill", "softmax", "out")
NAMES = {"scores": "att", "weights": "probs", "tril": "lower", "mask": "causal", "out": "result"}


def renamed(text):
    """Every name the student chose changed, where main uses it from STEP 3 to STEP 6 (in code,
    not in its comments or strings)."""
    lines = text.split("\n")
    first = next(i for i, l in enumerate(lines) if "// STEP 3:" in l)
    last = next(i for i, l in enumerate(lines) if "// STEP 7:" in l and i > first)
    names = re.compile(r"(?<![\w.:])(%s)\b" % "|".join(NAMES))
    for i in range(first, last):
        code, comment = (lines[i].split("//", 1) + [None])[:2] if '"' not in lines[i] else (lines[i], None)
        parts = re.split(r'("(?:[^"\\]|\\.)*")', code)  # strings kept as they are
        code = "".join(p if p.startswith('"') else names.sub(lambda m: NAMES[m.group(1)], p) for p in parts)
        lines[i] = code + ("//" + comment if comment is not None else "")
    return "\n".join(lines)


def with_todo_comments(text, original):
    """A `// TODO(STEP n)` comment after each line that is not the lesson's (the starter's words)."""
    lesson_lines = set(original.split("\n"))
    out = []
    for line in text.split("\n"):
        if line.strip() and line not in lesson_lines and not line.strip().startswith("//"):
            line += "  // TODO(STEP %d)" % step_of(line)
        out.append(line)
    return "\n".join(out)


def step_of(line):
    for word, step in (("softmax", 5), ("out", 6), ("fill", 4), ("tril", 4), ("ones", 4)):
        if word in line:
            return step
    return 3


def split_over_temporaries(text):
    """Each call's arguments computed first into temporaries: `auto kt = k.transpose(-2, -1);
    auto scores = q.matmul(kt);`, and the scale's divisor named."""
    out = []
    for line in text.split("\n"):
        m = re.match(r"^(\s*)((?:const )?(?:auto|torch::Tensor)) (\w+) = (.*)\((.*)\);$", line)
        inner = m and re.search(r"(\w+\.(?:transpose|t)\([^()]*\)|torch::transpose\([^()]*\)|torch::ones\([^;]*\}\)"
                                r"|torch::ones\(\{T, T\}[^;]*?\)(?=\.tril))", line)
        if m and inner:
            temp = "tmp_" + m.group(3)
            out.append("%sauto %s = %s;" % (m.group(1), temp, inner.group(1)))
            out.append(line.replace(inner.group(1), temp))
            continue
        s = re.match(r"^(\s*)(.*)std::sqrt\(([^()]*(?:\([^()]*\))?[^()]*)\)(.*)$", line)
        if s and "scores" in line:
            at = len(out) - 1 if out and re.match(r"^\s*if \(opt\.scale\)( \{)?$", out[-1]) else len(out)
            indent = re.match(r"^\s*", out[at]).group(0) if at < len(out) else s.group(1)
            out.insert(at, "%sconst double root = std::sqrt(%s);" % (indent, s.group(3)))  # before its if
            out.append("%s%sroot%s" % (s.group(1), s.group(2), s.group(4)))
            continue
        out.append(line)
    return "\n".join(out)


def into_helper(text):
    """The product of q and k moved into a helper of the student's own, called from STEP 3."""
    m = re.search(r"^(\s*)((?:const )?(?:auto|torch::Tensor)) (\w+) = (.*(?:matmul|mm|einsum).*\(q.*);$", text, re.M)
    if not m:
        return text
    helper = ("torch::Tensor scores_of(const torch::Tensor& q, const torch::Tensor& k) {\n"
              "  return %s;\n}\n\n" % m.group(4))
    text = text.replace(m.group(0), "%s%s %s = scores_of(q, k);" % (m.group(1), m.group(2), m.group(3)))
    at = text.index("int main(")
    return text[:at] + helper + text[at:]


def reordered(text):
    """The mask made before the scores (a line moved up), and the output's type spelled anew."""
    lines = text.split("\n")
    mask = next((i for i, l in enumerate(lines) if re.search(r"\b(?:tril|mask|lower|causal) = ", l)), None)
    first = next((i for i, l in enumerate(lines) if re.search(r"\bscores = |\batt = ", l)), None)
    if mask is None or first is None or mask < first:
        return text
    line = lines.pop(mask)
    lines.insert(first, line)
    return "\n".join(lines)


DISGUISES = {"renamed": lambda t, o: renamed(t),
             "split over temporaries": lambda t, o: split_over_temporaries(t),
             "moved into a helper": lambda t, o: into_helper(t),
             "reordered": lambda t, o: reordered(t),
             "a TODO(STEP n) comment on each copied line": with_todo_comments,
             "all at once": lambda t, o: with_todo_comments(renamed(reordered(split_over_temporaries(into_helper(t)))), o)}


def disguised(text, original):
    """{disguise: the copy of text behind it} (original: the lesson, for the TODO comments)."""
    return {name: make(text, original) for name, make in DISGUISES.items()}


def main(argv):
    if not 1 <= len(argv) <= 3 or not all(a.isdigit() for a in argv[1:]):
        print("honest_class: usage: honest_class.py FOLDER [STUDENTS] [SEED]", file=sys.stderr)
        return 2
    students = int(argv[1]) if len(argv) > 1 else 30
    seed = int(argv[2]) if len(argv) > 2 else 1
    for name, text in honest_class(students, seed).items():
        os.makedirs(os.path.join(argv[0], name), exist_ok=True)
        with open(os.path.join(argv[0], name, "lab04_attention.cpp"), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
