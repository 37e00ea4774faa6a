#!/usr/bin/env python3
"""The cases an instructor's grade draws are of the public grade cases' kinds, the same for a
seed on any machine, and fair: every known mistake loses the same steps on any draw as on the
public cases, and the lesson none.

usage: drawn_cases_test.py [DRAWS]   (default 32: the draws of seeds 0 to 31, and one new draw,
                                      so that each run of the test tries a draw no run tried)

For each draw (cases.draw_grade_cases): one case per public grade case, each of its kind (the
same flags and number of heads; one token where it has one; embed equal to head where it has
them equal; sizes that differ where its sizes differ; 16 tokens where it has 16; every entry
printed), with seeds of their own. Then each entry of mistakes.py is graded on the draw and on
the public cases as the lab with that mistake would print (the reference's numbers, at 9
decimals, through grading.py; a lab whose out is not (T, HEAD) stops after printing it, as the
lab does), and must lose the same steps on both, and on the public cases its own STEP alone
(OWN_STEPS: four lose two); a step after one that stops the lab in some cases is judged in
the others; the lesson loses none; a lab whose q, k and v
carry no information (zeros, ones, one row repeated, entries of 1e-20) earns nothing after STEP
2 on either. The same seed gives the same cases in another Python process (another hash seed).
Prints OK or NOT OK for each promise.
"""
import os
import subprocess
import sys

import torch

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import cases, compare, diagnosis, grading, own_inputs, reference_attention
from catalogue_test import printed

from lab04.checker.mistakes import MISTAKES


def simulated(ex, text, combo):
    """One case of a lab that makes the mistakes of combo, as compare.judge's result has it."""
    return simulated_tensors(text, [ex.predict(text, combo, of_head=h) for h in range(cases.parse_case(text).heads)])


# Labs whose q, k and v carry no information, as a student who wants the points without the
# work prints them, and STEP 3 to 6 as the lesson's code runs them on those: the numbers that
# constants written in their place would print. Each must earn nothing after STEP 2, so no
# more than the untouched starter (STEP 1 and 2), on any draw.
NO_INFORMATION = {"zeros": torch.zeros_like, "ones": torch.ones_like,
                  "one row repeated": lambda t: t[:1].expand(t.shape).clone(), "entries of 1e-20": lambda t: t * 1e-20}


def with_inputs(lesson, case, make):
    """The tensors of one head of the lesson with q, k and v made by make from the lesson's,
    and STEP 3 to 6 computed on them as the lab computes them (float32)."""
    t = dict(lesson)
    q, k, v = (make(lesson[n].float()) for n in ("q", "k", "v"))
    scores = q @ k.transpose(0, 1) * ((1.0 / case.head ** 0.5) if case.scale else 1.0)
    tril = torch.ones(scores.shape, dtype=torch.bool).tril()
    masked = scores.masked_fill(~tril, float("-inf")) if case.mask else scores
    weights = reference_attention.leaky_softmax(masked, -1) if case.leak else torch.softmax(masked, dim=-1)
    t.update(q=q, k=k, v=v, scores=scores, weights=weights, out=weights @ v)
    t["masked scores"] = masked
    return t


def no_information_lost(ex, texts, make):
    tensors = lambda text: [with_inputs(ex.predict(text, (), of_head=h), cases.parse_case(text), make)
                            for h in range(cases.parse_case(text).heads)]
    grades = grading.grade_steps([simulated_tensors(text, tensors(text)) for text in texts])
    return sorted(n for n in range(1, 8) if grades[n] is not None)


def simulated_tensors(text, heads):
    """One case of a lab that prints these tensors (one dict for each head), as compare.judge's
    result has it."""
    case = cases.parse_case(text)
    views, status, refused = [], 0, None
    for h in range(case.heads):
        tensors = heads[h]
        blocks = printed(tensors)
        out = []
        if tuple(tensors["out"].shape) != (case.tokens, case.head):  # the lab stops there
            status, refused = cases.EXIT_NOT_THE_LESSONS_TENSOR, compare.Refusal(h, 6, "out")
        else:
            sums, causal = own_inputs.own_checks(blocks["weights"].values)
            out = [compare.verdict_line(sums, causal)]
            status = status or (0 if sums and causal else 1)
        views.append(compare.HeadView(out, blocks))
        if refused:
            break
    views += [compare.HeadView([], {}) for _ in range(case.heads - len(views))]
    return compare.CaseResult.of(text, out=views[0].out, parsed=views[0].parsed, status=status,
                              heads=views if case.heads > 1 else None, whole_out=[l for v in views for l in v.out],
                              refused=refused)


def lost(ex, texts, combo):
    grades = grading.grade_steps([simulated(ex, t, combo) for t in texts])
    return sorted(n for n in range(1, 8) if grades[n] is not None)


def of_its_kind(public, drawn):
    """What makes drawn not a case of public's kind, or None."""
    p, d = cases.parse_case(public), cases.parse_case(drawn)
    sizes = lambda c: (c.tokens, c.embed, c.head)
    problems = []
    if (p.scale, p.mask, p.heads > 1, p.leak) != (d.scale, d.mask, d.heads > 1, d.leak):
        problems.append("other flags or heads")
    if (p.tokens == 1) != (d.tokens == 1) or (p.tokens == 16) != (d.tokens == 16):
        problems.append("one token or sixteen, where the public case has not, or the other way")
    if (p.embed == p.head) != (d.embed == d.head):
        problems.append("embed and head equal where the public case's differ, or the other way")
    if p.tokens > 1 and (p.tokens == p.head) != (d.tokens == d.head):
        problems.append("tokens as many as the head's size where the public case's differ, or the other way")
    if len(set(sizes(p))) == 3 and len(set(sizes(d))) != 3:
        problems.append("sizes equal where the public case's all differ")
    if not cases.prints_every_entry(d):
        problems.append("a size past %d (not every entry printed)" % cases.SHOW_ALL)
    return "; ".join(problems) or None


# The steps each known mistake loses on the public cases: its own STEP, where its numbers first
# go wrong, but for these, which are wrong in two steps. (weights_times_x makes out (T, C): the
# lab stops at STEP 6 where C is not HEAD, and STEP 7 is judged where it is.)
OWN_STEPS = {
    "x_uniform": [1, 2], "x_after_layers": [1, 2],  # the layers' random numbers change with x's draw
    "scale_after_softmax": [3, 5], "mask_after_softmax": [4, 5],  # a step moved past softmax: both are wrong
}


def main(argv):
    draws = int(argv[0]) if argv and argv[0].isdigit() else 32
    ex = diagnosis.Explainer(MISTAKES)
    torch.set_num_threads(1)
    public = {m["id"]: lost(ex, cases.GRADE_CASES, (m,)) for m in MISTAKES}
    checks = [("the lesson loses no step on the public cases", lost(ex, cases.GRADE_CASES, ()) == [], "")]
    own = ["%s loses STEP %s, expected %s" % (m["id"], public[m["id"]], OWN_STEPS.get(m["id"], [int(m["step"])]))
           for m in MISTAKES if public[m["id"]] != OWN_STEPS.get(m["id"], [int(m["step"])])]
    checks.append(("each of the %d known mistakes loses its own STEP alone on the public cases (%s: two steps, "
                   "as they are wrong in two or stop the lab)" % (len(MISTAKES), ", ".join(OWN_STEPS)), not own,
                   "\n".join(own)))
    seeds = list(range(draws)) + [cases.new_draw()]
    kinds, unfair, lesson, gained = [], [], [], []
    for kind, make in NO_INFORMATION.items():
        steps = no_information_lost(ex, cases.GRADE_CASES, make)
        if not set(range(3, 8)) <= set(steps):
            gained.append("the public cases: q, k and v of %s earn STEP %s" % (kind, sorted(set(range(3, 8)) - set(steps))))
    for seed in seeds:
        drawn = cases.draw_grade_cases(seed)
        if len(drawn) != len(cases.GRADE_CASES) or drawn != cases.draw_grade_cases(seed):
            kinds.append("draw %d: %s" % (seed, drawn))
        for p, d in zip(cases.GRADE_CASES, drawn):
            problem = of_its_kind(p, d)
            if problem:
                kinds.append("draw %d: %s is no case of %s's kind: %s" % (seed, d, p, problem))
        if [sorted(pair) for pair in cases.twins(drawn)] != [sorted(pair) for pair in cases.twins(cases.GRADE_CASES)]:
            kinds.append("draw %d: its twins (the same sizes, another seed) are cases %s, the public cases' %s" % (
                seed, cases.twins(drawn), cases.twins(cases.GRADE_CASES)))
        if lost(ex, drawn, ()):
            lesson.append("draw %d: the lesson loses %s" % (seed, lost(ex, drawn, ())))
        for kind, make in NO_INFORMATION.items():
            steps = no_information_lost(ex, drawn, make)
            if not set(range(3, 8)) <= set(steps):
                gained.append("draw %d (%s): q, k and v of %s earn STEP %s" % (
                    seed, " ".join(drawn), kind, sorted(set(range(3, 8)) - set(steps))))
        for m in MISTAKES:
            steps = lost(ex, drawn, (m,))
            if steps != public[m["id"]]:
                unfair.append("draw %d (%s): %s loses STEP %s, on the public cases STEP %s" % (
                    seed, " ".join(drawn), m["id"], steps, public[m["id"]]))
    checks.append(("each of %d draws is a case of each public case's kind, with the same twins, the same for its "
                   "seed" % len(seeds),
                   not kinds, "\n".join(kinds[:10])))
    checks.append(("the lesson loses no step on any of %d draws" % len(seeds), not lesson, "\n".join(lesson[:10])))
    checks.append(("a lab whose q, k and v are %s, the lesson's STEP 3 to 6 run on them, earns nothing after STEP 2 "
                   "on the public cases and on each of %d draws" % (", ".join(NO_INFORMATION), len(seeds)),
                   not gained, "\n".join(gained[:20])))
    checks.append(("each of the %d known mistakes loses the same steps on each of %d draws as on the public cases"
                   % (len(MISTAKES), len(seeds)), not unfair, "\n".join(unfair[:20])))
    code = ("import sys; sys.path.insert(0, %r); from lab04.checker import cases; print(cases.draw_grade_cases(%d))"
            % (project.ROOT, 12345))
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONHASHSEED="97"))
    checks.append(("another process (another hash seed) draws the same cases for a seed",
                   other.stdout.strip() == str(cases.draw_grade_cases(12345)), other.stdout + other.stderr))
    for what, held, got in checks:
        print("%s  %s" % ("OK    " if held else "NOT OK", what))
        if not held:
            print("        " + str(got).replace("\n", "\n        "))
    failed = sum(1 for _, held, _ in checks if not held)
    print("%d passed, %d failed" % (len(checks) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
