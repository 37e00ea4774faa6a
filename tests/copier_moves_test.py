#!/usr/bin/env python3
"""The similarity check's canonical form (lab04/grader/canonical.py) against the copier's moves, one
at a time and all at once, without grading: what similarity.own_code keeps of each lab, weighed
as the class grader weighs it (similarity.look_alike).

usage: copier_moves_test.py

Two students wrote code of their own: orla (einsum, an integer mask, softmax written out, a
broadcast sum: written_another_way_test's forms) and uma (two helper functions of her own, one
for the scaled scores, one for the softmax, called from the STEPs). Each move below, a line of
sed or a minute's editing, is made on a copy, and the copy is compared with the original in a
class of honest labs (thirty students who each wrote STEPs 3 to 6 alone, honest_class.py; the
starter as handed out, the lesson, and the other student). Expected, from how each copy was made: the copy and its original are listed as a
pair, and no one else; and every copy of uma with uma in one class is one group.

Moves seen (docs/instructors.md, "Copies behind disguises"): every name changed; a statement
that does nothing after each line, or before it with auto for each type; statements reordered;
each statement in a block of its own or in a lambda called at once, a declaration split from
its value; LibTorch's spellings of one operation swapped (mm for matmul, t() for transpose,
methods for functions); the starter's own lines put between the copied ones; the helper
functions put in another order under other names. Prints OK or NOT OK for each promise.
"""
import os
import re
import sys

import checklist
import honest_class

from lab04.instructor import blanking
import project
import similar_code_test
import written_another_way_test

SEED = 20261207  # the honest class's draw
from lab04.grader import similarity  # noqa: E402

UMA_HELPERS = """// Scores of every query with every key, scaled by the square root of the head size.
torch::Tensor scaled_scores(const torch::Tensor& q, const torch::Tensor& k, bool scale) {
    torch::Tensor s = torch::matmul(q, k.transpose(0, 1));
    if (scale) s = s / std::sqrt(double(q.size(1)));
    return s;
}

// Each row's softmax, written out: the row's largest entry taken away first, so exp stays finite.
torch::Tensor row_softmax(const torch::Tensor& s) {
    torch::Tensor shifted = s - std::get<0>(s.max(-1, true));
    torch::Tensor e = shifted.exp();
    return e / e.sum(-1, true);
}

"""
UMA_STEPS = {3: ["torch::Tensor scores = scaled_scores(q, k, opt.scale);"],
             4: ["torch::Tensor tril = torch::ones({T, T}).tril();",
                 "if (opt.mask) scores = scores.masked_fill(tril == 0, -INFINITY);"],
             5: ["torch::Tensor weights = row_softmax(scores);"],
             6: ["torch::Tensor out = torch::matmul(weights, v);"]}


def uma(lesson):
    text = written_another_way_test.written(lesson, UMA_STEPS)
    at = text.index("int main(")
    return text[:at] + UMA_HELPERS + text[at:]


def statement_lines(text):
    """The indexes of the text's lines that are one whole statement ending in ';' (outside
    comments), not a return."""
    found = []
    for i, line in enumerate(text.split("\n")):
        code = line.split("//", 1)[0].rstrip()
        if re.fullmatch(r" +[^ /{}].*;", code) and not code.strip().startswith("return"):
            found.append(i)
    return found


def each_own_line(text, own, change):
    """text with change applied to each line of own code (similarity.own_code's line numbers)
    that is one whole statement."""
    lines = text.split("\n")
    numbers = {n - 1 for n, _ in own}
    for i in statement_lines(text):
        if i in numbers:
            lines[i] = change(lines[i])
    return "\n".join(lines)


def in_blocks_and_lambdas(line):
    """A declaration split from its value, the value set in a block; any other statement in a
    lambda called at once."""
    indent, code = re.match(r"( *)(.*)", line).groups()
    declared = re.match(r"(?:const )?((?:torch::Tensor|bool|double|auto)) (\w+) = (.*);$", code)
    if declared:
        kind = "torch::Tensor" if declared.group(1) == "auto" else declared.group(1)
        return "%s%s %s;\n%s{\n%s    %s = %s;\n%s}" % (indent, kind, declared.group(2), indent, indent, declared.group(2),
                                                   declared.group(3), indent)
    return "%s[&] { %s }();" % (indent, code)


def respelled(text):
    """LibTorch's other spellings of the same operations: mm for matmul, t() for transpose,
    a method for a function and a function for a method."""
    text = text.replace("torch::matmul(q, k.transpose(0, 1))", "q.mm(k.t())")
    text = text.replace("torch::matmul(weights, v)", "weights.mm(v)")
    text = text.replace("e / e.sum(-1, true)", "e / torch::sum(e, -1, true)")
    return text.replace("shifted.exp()", "torch::exp(shifted)")


def with_starter_lines(text, starter, own):
    """The starter's own handed-out lines (those not in the lesson) put between the copied ones."""
    handed = [l for l in starter.split("\n") if re.fullmatch(r" +[^ /].*;", l.split("//", 1)[0].rstrip())
              and "TODO" not in l][:12]
    lines = text.split("\n")
    numbers = sorted(n - 1 for n, _ in own)
    for k, i in enumerate(reversed(numbers)):
        if i + 1 < len(lines) and lines[i].rstrip().endswith(";"):
            lines.insert(i + 1, handed[k % len(handed)])
    return "\n".join(lines)


def helpers_swapped_and_renamed(text):
    """The two helpers in the other order, under other names, their parameters renamed."""
    first, second = UMA_HELPERS.split("\n\n")[:2]
    text = text.replace(UMA_HELPERS, second + "\n\n" + first + "\n\n")
    for old, new in (("scaled_scores", "attention_logits"), ("row_softmax", "stable_softmax"), ("shifted", "centered")):
        text = re.sub(r"\b%s\b" % old, new, text)
    return text


def pairs_in(labs, template):
    """The pairs similarity.look_alike names in a class of labs ({name: text}), as the class
    grader makes their own code (similarity.own_code): [({a, b}, {a: a's share, b: b's})]."""
    found = similarity.look_alike([(name, similarity.own_code(text, template)) for name, text in labs.items()],
                                  (), template)
    return [({p["a"], p["b"]}, {p["a"]: p["a_share"], p["b"]: p["b_share"]}) for p in found["pairs"]]


def main(argv):
    if argv:
        print("copier_moves_test: usage: copier_moves_test.py (no arguments)", file=sys.stderr)
        return 2
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        lesson = f.read()
    starter = blanking.make_lab(lesson, blanking.DEFAULT_BLANKS)[0]
    template = similarity.template_keys([lesson, starter])
    orla = written_another_way_test.written(lesson, written_another_way_test.OTHERS["integer_mask_and_other_operations"])
    originals = {"orla": orla, "uma": uma(lesson)}
    honest = honest_class.honest_class(30, SEED)  # thirty students who each wrote STEPs 3 to 6 alone
    honest.update({"starter_as_given": starter, "lesson": lesson})

    found = pairs_in({**honest, **originals}, template)
    checks = [("with no copy in it, the class of honest labs and both originals has no pair listed", found == [], found)]
    own_uma = similarity.own_code(originals["uma"], template)
    own_orla = similarity.own_code(orla, template)
    moves = {
        "every name changed": lambda t, o: similar_code_test.copied(helpers_swapped_and_renamed(t)),
        "a statement that does nothing after each line": lambda t, o: each_own_line(t, o, lambda l: l + " (void)0;"),
        "auto for each type and a statement that does nothing before each line": lambda t, o: each_own_line(
            t, o, lambda l: re.sub(r"^( +)(?:const )?(?:torch::Tensor|bool) (?=\w+ = )", r"\1(void)0; auto ",
                                   re.sub(r"^( +)(?!(?:const )?(?:torch::Tensor|bool) )", r"\1(void)0; ", l))),
        "two statements swapped and the mask made before the scores": lambda t, o: similar_code_test.reordered(t),
        "each statement in a block or a lambda of its own, declarations split from their values":
            lambda t, o: each_own_line(t, o, in_blocks_and_lambdas),
        "LibTorch's other spellings (mm, t(), methods and functions swapped)": lambda t, o: respelled(t),
        "the starter's own lines put between the copied ones": lambda t, o: with_starter_lines(t, starter, o),
        "the helper functions in another order under other names": lambda t, o: helpers_swapped_and_renamed(t),
    }
    copies = {}
    for n, (move, make) in enumerate(moves.items()):
        for original, text, own in (("uma", originals["uma"], own_uma), ("orla", orla, own_orla)):
            copy = make(text, own)
            if copy == text:  # the move changes nothing of this original (orla has no helpers)
                continue
            name = "%s_copy%d" % (original, n)
            if original == "uma":
                copies[name] = copy
            found = pairs_in({**honest, **originals, name: copy}, template)
            checks.append(("%s's copy with %s: listed with %s, three in four of the lines of one of them or more in "
                           "the other's, no one else listed" % (original, move, original),
                           [p for p, _ in found] == [{original, name}] and max(found[0][1].values()) >= 75, found))
    found = pairs_in({**honest, **originals, **copies}, template)
    found = [p for p, _ in found]
    group = set().union(*found) if found else set()
    alone = [c for c in copies if not any(c in p for p in found)]
    checks.append(("all %d copies of uma in one class with her: each named with uma or another copy, one group, no "
                   "honest student in it" % len(copies), group == {"uma"} | set(copies) and not alone
                   and len(similarity.groups([{"a": min(p), "b": max(p)} for p in found])) == 1,
                   sorted(sorted(p) for p in found)))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
