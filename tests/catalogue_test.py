"""The catalogue of known mistakes is unambiguous on the cases check_lab.py runs.

For every entry of mistakes.py, the numbers the lab would print with that mistake (at
--digits 9, condensed as the lab condenses) must differ from the lesson's in some case, first
at the entry's own STEP, and from every other entry's in some case: otherwise check_lab.py
could not tell it apart and would never name it. Prints OK or NOT OK for each entry.
"""
import sys

import check_lab
from mistakes import MISTAKES
from reference_attention import attention


def printed(tensors):
    """The blocks the lab would print for these tensors, in check_lab's form."""
    blocks = {}
    for _, name, _ in check_lab.TENSORS:
        t = tensors[name]
        rows, cols = t.shape
        blocks[name] = ((rows, cols), {(i, j): float("%.9f" % t[i, j].item())
                                       for i in check_lab.shown(rows) for j in check_lab.shown(cols)})
    return blocks


def main():
    cases = check_lab.DEFAULT_CASES
    lesson, made = {}, {m["id"]: {} for m in MISTAKES}
    for text in cases:
        c = check_lab.parse_case(text)
        args = (c["seed"], c["tokens"], c["embed"], c["head"])
        lesson[text] = attention(*args, scale=c["scale"], mask=c["mask"])
        for m in MISTAKES:
            made[m["id"]][text] = attention(*args, scale=c["scale"], mask=c["mask"], mistake=m)
    failed = 0
    print("%d known mistakes, cases %s" % (len(MISTAKES), " ".join(cases)))
    if len(MISTAKES) < 16:
        print("NOT OK  the catalogue has %d entries, fewer than 16" % len(MISTAKES))
        failed += 1
    for m in MISTAKES:
        problems = []
        steps = {}
        for text in cases:
            diff = check_lab.first_difference(printed(made[m["id"]][text]), lesson[text])
            if diff:
                steps[text] = diff[0]
        if not steps:
            problems.append("prints the lesson's numbers in every case")
        for text, step in steps.items():
            if step != m["step"]:
                problems.append("case %s: first differs at STEP %s, not STEP %s" % (text, step, m["step"]))
        for other in MISTAKES:
            if other is not m and all(check_lab.explains(printed(made[m["id"]][t]), made[other["id"]][t])
                                      for t in cases):
                problems.append("prints the same numbers as %s in every case" % other["id"])
        print("%s  %-32s STEP %s, told apart from the lesson in %d of %d cases" % (
            "NOT OK" if problems else "OK    ", m["id"], m["step"], len(steps), len(cases)))
        for p in problems:
            print("        " + p)
        failed += bool(problems)
    print("%d passed, %d failed" % (len(MISTAKES) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
