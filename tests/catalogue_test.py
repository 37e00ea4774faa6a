"""The catalogue of known mistakes is unambiguous on the cases check_lab.py runs.

Singles: for every entry of mistakes.py, the numbers the lab would print with that mistake
(at --digits 9, condensed as the lab condenses) must differ from the lesson's in some case,
first at the entry's own STEP, and from every other entry's in some case: otherwise
check_lab.py could not tell it apart and would never name it.

Pairs: for every two entries that change different things, a lab printing the numbers of
both mistakes at once is diagnosed as the checker promises: as that pair ("two mistakes"),
or, where the pair prints the same numbers as a single entry in every case, as a single
entry and never as the pair. Pairs that print the same numbers as each other may be named
together. Prints OK or NOT OK for each entry, or for all pairs.

usage: catalogue_test.py singles|pairs
"""
import itertools
import sys

import torch

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import cases, compare, diagnosis
from lab04.checker.mistakes import MISTAKES


def printed(tensors):
    """The blocks the lab would print for these tensors, in the checker's form: every number
    rounded to 9 decimals, matrices past 16 rows or columns condensed."""
    blocks = {}
    for _, name, _ in cases.TENSORS:
        t = tensors[name]
        rows, cols = cases.shown(t.shape[0]), cases.shown(t.shape[1])
        values = torch.round(t.double()[rows][:, cols] * 1e9) / 1e9
        blocks[name] = compare.Tensor(tuple(t.shape), rows, cols, values)
    return blocks


def simulated_lab(ex, combo):
    """The cases of a lab that makes the mistakes of combo, as compare.judge reports them."""
    found = []
    for text in cases.DEFAULT_CASES:
        blocks = printed(ex.predict(text, combo))
        diff = compare.first_difference(blocks, ex.predict(text, ()))
        found.append(compare.CaseResult.of(text, ok=diff is None, blocks=blocks,
                                        step=diff[0] if diff else None, name=diff[1] if diff else None))
    return found


def singles(ex):
    failed = 0
    for m in MISTAKES:
        problems = []
        lab = simulated_lab(ex, (m,))
        steps = {c.text: c.judgement.step for c in lab if not c.judgement.ok}
        if not steps:
            problems.append("prints the lesson's numbers in every case")
        for text, step in steps.items():
            if step != m["step"]:
                problems.append("case %s: first differs at STEP %s, not STEP %s" % (text, step, m["step"]))
        for other in MISTAKES:
            if other is not m and all(ex.explains(c, (other,)) for c in lab):
                problems.append("prints the same numbers as %s in every case" % other["id"])
        print("%s  %-32s STEP %s, told apart from the lesson in %d of %d cases" % (
            "NOT OK" if problems else "OK    ", m["id"], m["step"], len(steps), len(lab)))
        for p in problems:
            print("        " + p)
        failed += bool(problems)
    return failed


def pairs(ex):
    """Every pair of entries that change different knobs, diagnosed from its own numbers."""
    counts = {"named": 0, "named with others that print the same": 0, "a single entry": 0}
    failed = 0
    for a, b in itertools.combinations(MISTAKES, 2):  # a before b in the catalogue
        if not diagnosis.disjoint(a, b):
            continue
        pair = a["id"] + "+" + b["id"]
        found = diagnosis.diagnose(simulated_lab(ex, (a, b)), MISTAKES, ex)
        lines, diagnosed = found.lines, found.mistakes
        as_single = next((m for m in MISTAKES if ex.same_numbers((a, b), (m,))), None)
        swapped = b["id"] + "+" + a["id"]
        if as_single:
            ok = len(diagnosed) == 1
            what = "a single entry"
        elif diagnosed in ((a["id"], b["id"]), (b["id"], a["id"])):
            ok, what = True, "named"
        else:
            ok = any(pair in line or swapped in line for line in lines if "pairs of known mistakes" in line)
            what = "named with others that print the same"
        if ok:
            counts[what] += 1
            continue
        failed += 1
        print("NOT OK  pair %s (%s): diagnosed as %s" % (
            pair, "same numbers as " + as_single["id"] if as_single else "numbers of its own",
            "+".join(diagnosed) or "nothing"))
        for line in lines:
            print("        " + line)
    total = sum(counts.values()) + failed
    print("%s  %d pairs of mistakes that change different things: %s" % (
        "NOT OK" if failed else "OK    ", total, ", ".join("%d %s" % (n, w) for w, n in counts.items())))
    return failed


def main(argv):
    if argv not in (["singles"], ["pairs"]):
        print("catalogue_test: usage: catalogue_test.py singles|pairs", file=sys.stderr)
        return 2
    ex = diagnosis.Explainer(MISTAKES)
    print("%d known mistakes, cases %s" % (len(MISTAKES), " ".join(cases.DEFAULT_CASES)))
    if argv == ["pairs"]:  # about 20 s: some 660 pairs, each diagnosed as the checker does
        failed = bool(pairs(ex))  # one check: every pair diagnosed as promised
        print("%d passed, %d failed" % (1 - failed, failed))
        return 1 if failed else 0
    failed = 0
    if len(MISTAKES) < 35:
        print("NOT OK  the catalogue has %d entries, fewer than 35" % len(MISTAKES))
        failed += 1
    failed += singles(ex)
    print("%d passed, %d failed" % (len(MISTAKES) + 1 - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
