#!/usr/bin/env python3
"""The diagnosis names a copy-paste slip whichever of the two tensors is printed first.

usage: same_tensor_test.py

Printed tensors made from the reference (reference_attention.py) for case 3,4,6,6, with a slip
no catalogue lists: q printed equal to the k printed after it, both other than any tensor of
the lesson (k doubled); then the slip the other way (k equal to the v printed after it). Each
must get a "same tensor:" line naming the earlier tensor and the later one it equals; and the
lesson's own tensors must get none.
"""
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import cases, compare, diagnosis, reference_attention
from lab04.checker.mistakes import MISTAKES

CASE = "3,4,6,6"


def printed(tensors):
    """The blocks compare.read_block would read from a lab that printed these tensors."""
    blocks = {}
    for _, name, _ in cases.TENSORS:
        t = tensors[name].double()
        blocks[name] = compare.Tensor(tuple(t.shape), cases.shown(t.shape[0]), cases.shown(t.shape[1]), t)
    return blocks


def lines_for(change):
    lesson = reference_attention.attention(3, 4, 6, 6)
    tensors = dict(lesson, **change(lesson))
    case = compare.CaseResult.of(CASE, blocks=printed(tensors), step=2, name="q")
    return diagnosis.same_tensor_lines(case, diagnosis.Explainer(MISTAKES))


def main():
    checks = []
    for what, change, want in (
            ("q equals the k printed after it", lambda l: {"q": l["k"] * 2, "k": l["k"] * 2},
             "the q printed in case 3,4,6,6 equal the k it printed"),
            ("k equals the v printed after it", lambda l: {"k": l["v"] * 3, "v": l["v"] * 3},
             "the k printed in case 3,4,6,6 equal the v it printed"),
            ("the lesson itself", lambda l: {}, None)):
        lines = lines_for(change)
        ok = any(want in line for line in lines) if want else lines == []
        print("%s  %s: %s" % ("OK    " if ok else "NOT OK", what, "; ".join(lines) or "no same-tensor line"))
        checks.append(ok)
    print("%d passed, %d failed" % (sum(checks), len(checks) - sum(checks)))
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
