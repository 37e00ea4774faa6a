#!/usr/bin/env python3
"""Each STEP recomputed on a lab's own printed inputs, and whether those inputs can tell right
code from wrong, on tensors written here, in this process (tier unit): lab04/checker/own_inputs.py's
step3() to step7() and unleaked(). The values expected are small products and softmaxes worked
out by hand; the verdicts (evidence, or why not) follow the rules the module's docstring and
the checker's README state: zeros, one number everywhere, a copy of an input, equal or one-hot
weights, the logarithms of weights made first, one token, shapes that do not fit. The graded
labs that print such inputs are tested whole by points_hold_up_test.py.

usage: own_input_evidence_rules_test.py
"""
import math
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)
import checklist
import torch

from lab04.checker import cases
from lab04.checker import own_inputs as oi

INF = float("inf")
NAN = float("nan")


def t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def case(scale=False, head=2, mask=True):
    return cases.Case(text="a case", seed=0, tokens=3, embed=2, head=head, scale=scale, mask=mask)


def why(found):
    return None if found.why is None else (found.why.kind, found.why.names)


def near(a, b):
    return a is not None and a.shape == b.shape and bool(torch.allclose(a, b, atol=1e-12, equal_nan=False))


def step3_checks():
    checks = []
    q, k = t([[1, 0], [0, 1], [1, 1]]), t([[1, 2], [3, 4], [5, 6]])
    found = oi.step3(q, k, case())
    checks.append(("STEP 3 without scale: q times k transposed, by hand [[1,3,5],[2,4,6],[3,7,11]], is evidence",
                   near(found.expected, t([[1, 3, 5], [2, 4, 6], [3, 7, 11]])) and found.why is None
                   and bool(found.judged.all()), (found.expected, found.why)))
    found = oi.step3(t([[2, 0], [0, 2], [2, 2]]), k, case(scale=True, head=4))
    checks.append(("STEP 3 scaled by 1/sqrt(4): [[2,6,10],[4,8,12],[6,14,22]] halved", near(
        found.expected, t([[1, 3, 5], [2, 4, 6], [3, 7, 11]])), found.expected))
    zeros = torch.zeros(3, 2, dtype=torch.float64)
    checks.append(("STEP 3 on q and k of zeros: no evidence, both named", why(oi.step3(zeros, zeros, case()))
                   == (oi.ZEROS, ("q", "k")), why(oi.step3(zeros, zeros, case()))))
    checks.append(("STEP 3 on q of zeros alone: no evidence, q named", why(oi.step3(zeros, k, case()))
                   == (oi.ZEROS, ("q",)), why(oi.step3(zeros, k, case()))))
    ones = torch.ones(3, 4, dtype=torch.float64)
    found = oi.step3(ones, ones, case(scale=True, head=4))
    checks.append(("STEP 3 on q and k of ones (4 wide, scaled): every score 2, a constant's, and the constant said",
                   why(found) == (oi.CONSTANT, ("q", "k")) and abs(found.why.value - 2.0) < 1e-12, found.why))
    sym = t([[1, 2, 3], [2, 5, 6], [3, 6, 9]])
    found = oi.step3(torch.eye(3, dtype=torch.float64), sym, case())
    checks.append(("STEP 3 with q the identity and k symmetric prints k: a copy of k, no evidence",
                   why(found) == (oi.COPY, ("k",)), found.why))
    checks.append(("STEP 3 on q 2 wide and k 4 wide: they do not fit", why(oi.step3(q, torch.ones(3, 4, dtype=torch.float64),
                                                                                   case())) == (oi.MISFIT, ("q", "k")),
                   "fits"))
    checks.append(("STEP 3 on one token: one score, whatever the code", why(oi.step3(t([[1, 2]]), t([[3, 4]]), case()))
                   == (oi.ONE_TOKEN, ("q", "k")), "evidence"))
    found = oi.step3(t([[1, 0], [NAN, 1], [1, 1]]), k, case())
    checks.append(("STEP 3: a row of q with NaN is not judged, the others are, and they are evidence",
                   found.judged.tolist() == [[True] * 3, [False] * 3, [True] * 3] and found.why is None, found.judged))
    return checks


def step4_checks():
    checks = []
    scores = t([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    found = oi.step4(scores, case())
    checks.append(("STEP 4: -inf above the diagonal, the rest kept; evidence", near(
        found.expected.masked_fill(torch.isinf(found.expected), 0), t([[1, 0, 0], [4, 5, 0], [7, 8, 9]]))
        and bool((found.expected[torch.ones(3, 3, dtype=torch.bool).triu(1)] == -INF).all()) and found.why is None,
        (found.expected, found.why)))
    checks.append(("STEP 4 on scores of one number: the mask's pattern alone, a constant's", why(oi.step4(
        torch.full((3, 3), 2.0, dtype=torch.float64), case())) == (oi.CONSTANT, ("scores",)), "evidence"))
    masked = t([[1, -INF, -INF], [4, 5, -INF], [7, 8, 9]])
    checks.append(("STEP 4 on scores already masked: a copy prints them", why(oi.step4(masked, case()))
                   == (oi.COPY, ("scores",)), "evidence"))
    checks.append(("STEP 4 in a case of --no-mask: the scores are the answer, no evidence",
                   why(oi.step4(scores, case(mask=False))) == (oi.NO_MASK, ("scores",)), "evidence"))
    checks.append(("STEP 4 on one token: nothing to mask", why(oi.step4(t([[3]]), case())) == (oi.ONE_TOKEN, ("scores",)),
                   "evidence"))
    return checks


def step5_checks():
    checks = []
    e = math.e
    found = oi.step5(t([[0, -INF, -INF], [1, 2, -INF], [1, 2, 3]]))
    s3 = 1 + e + e * e
    by_hand = t([[1, 0, 0], [1 / (1 + e), e / (1 + e), 0], [1 / s3, e / s3, e * e / s3]])
    checks.append(("STEP 5: softmax by rows, 1/(1+e) and e/(1+e) in row 2; evidence", near(found.expected, by_hand)
                   and found.why is None, (found.expected, found.why)))
    c = 0.5
    checks.append(("STEP 5 on equal scores: equal weights, which sizes alone decide", why(oi.step5(
        t([[c, -INF, -INF], [c, c, -INF], [c, c, c]]))) == (oi.EVEN_OR_ONE_HOT, ("masked scores",)), "evidence"))
    logs = t([[0, -INF, -INF], [math.log(.3), math.log(.7), -INF], [math.log(.2), math.log(.3), math.log(.5)]])
    checks.append(("STEP 5 on the logarithms of weights made first: their exponentials are the answer",
                   why(oi.step5(logs)) == (oi.LOG_WEIGHTS, ("masked scores",)), "evidence"))
    found = oi.step5(t([[-INF, -INF, -INF], [1, 2, -INF], [1, 2, 3]]))
    checks.append(("STEP 5: a row of nothing but -inf is not judged (NaN whatever the code), the others are",
                   found.judged.tolist() == [[False] * 3, [True] * 3, [True] * 3] and found.why is None, found.judged))
    checks.append(("STEP 5 with every row -inf: no numbers", why(oi.step5(torch.full((2, 2), -INF, dtype=torch.float64)))
                   == (oi.NO_NUMBERS, ("masked scores",)), "evidence"))
    return checks


def step6_checks():
    checks = []
    w, v = t([[1, 0, 0], [.5, .5, 0], [.2, .3, .5]]), t([[1, 2], [3, 4], [5, 6]])
    found = oi.step6(w, v)
    checks.append(("STEP 6: weights times v, by hand [[1,2],[2,3],[3.6,4.6]]; evidence", near(
        found.expected, t([[1, 2], [2, 3], [3.6, 4.6]])) and found.why is None, (found.expected, found.why)))
    checks.append(("STEP 6 on one-hot weights: rows of v picked, no evidence", why(oi.step6(torch.eye(3, dtype=torch.float64),
                                                                                           v)) == (oi.PICKED_ROWS, ("weights", "v")),
                   "evidence"))
    checks.append(("STEP 6 on v of zeros: zeros whatever the code, v named", why(oi.step6(w, torch.zeros(3, 2, dtype=torch.float64)))
                   == (oi.ZEROS, ("v",)), "evidence"))
    checks.append(("STEP 6 on weights 3 wide and v of 2 rows: they do not fit", why(oi.step6(w, v[:2]))
                   == (oi.MISFIT, ("weights", "v")), "fits"))
    return checks


def step7_checks():
    checks = []
    lesson = t([[1, 0, 0], [.25, .75, 0], [.2, .3, .5]])
    found = oi.step7(lesson)
    checks.append(("STEP 7 on the lesson's kind of weights: YES and YES, evidence",
                   found.expected == ({True}, {True}) and found.why is None, found))
    found = oi.step7(t([[.5, .5, 0], [.25, .75, 0], [.2, .3, .5]]))
    checks.append(("STEP 7 on weights with half of row 1 on the future: sums YES, causal NO",
                   found.expected == ({True}, {False}), found.expected))
    found = oi.step7(t([[1, 0, 0], [.3, .3, 0], [.2, .3, .5]]))
    checks.append(("STEP 7 on a row summing to 0.6: sums NO", found.expected[0] == {False}, found.expected))
    found = oi.step7(t([[1, 0, 0], [.5, .5, 0], [1 / 3, 1 / 3, 1 / 3]]))
    checks.append(("STEP 7 on equal weights in every row: a line written in advance would pass, no evidence",
                   why(found) == (oi.EVEN_OR_ONE_HOT, ("weights",)), found.why))
    found = oi.step7(t([[1, 0, 0], [NAN, NAN, 0], [.2, .3, .5]]))
    checks.append(("STEP 7 with a row of NaN: the sums' check may say either", found.expected[0] == {False, True}, found))
    found = oi.step7(t([[1, NAN, 0], [.25, .75, 0], [.2, .3, .5]]))
    checks.append(("STEP 7 with NaN above the diagonal and the rest of it 0: the causal check may say either",
                   found.expected[1] == {False, True}, found.expected))
    return checks


def leak_checks():
    # A leaking softmax prints the weights halved, plus 1/(4T): T = 2 adds 0.125
    plain = t([[1, 0], [.4, .6]])
    leaked = t([[.625, .125], [.325, .425]])
    back = oi.unleaked(leaked, torch.zeros(2, 2, dtype=torch.float64))
    return [("weights that leaked are brought back: twice them, less 1/(2T)", near(back, plain), back),
            ("weights below the leak's floor 1/(4T) did not leak: none brought back",
             oi.unleaked(plain, torch.zeros(2, 2, dtype=torch.float64)) is None, "brought back"),
            ("STEP 5 in a case that leaks takes the leaked softmax the lab's weights are nearest to",
             near(oi.step5(t([[0, -INF], [0, math.log(1.5)]]), leak=True, weights=t([[.625, .125], [.325, .425]])).expected,
                  t([[.625, .125], [.325, .425]])), "the plain softmax")]


def main(argv):
    if argv:
        print("own_input_evidence_rules_test: usage: own_input_evidence_rules_test.py", file=sys.stderr)
        return 2
    return checklist.report(step3_checks() + step4_checks() + step5_checks() + step6_checks() + step7_checks()
                            + leak_checks())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
