"""Grades for check_lab.py --grade: each STEP judged on the lab's own printed inputs.

STEP 1 and 2 against the reference (their inputs are random draws the lab does not print);
STEP 3 on the lab's q and k, STEP 4 on its scores, STEP 5 on its masked scores, STEP 6 on its
weights and v; STEP 7: the verdicts it printed are right for the weights it printed, and its
exit status follows them. Each is compared where its inputs are numbers, and is evidence only
where they can tell right code from wrong (own_inputs.py): a step right in every case, and
evidence in at least one, earns its points; one never evidence is "not judged", with why.
"""
from typing import NamedTuple

import torch

from lab04.checker import cases, compare, own_inputs, platforms, reference_attention
from lab04.checker.cases import STEP_NAMES


class Judged(NamedTuple):
    """One step in one case (or head): problem (what is wrong, None when right), why (when
    right: None where the step's inputs were evidence, else own_inputs' Why they were not),
    reached (False for a step the run never got to: it stopped before, and problem says where)
    and unreadable (its tensor, or one it takes, printed so that it cannot be read: problem
    says how; the step is not judged, and earns nothing)."""
    problem: object
    why: object = None
    reached: bool = True
    unreadable: bool = False


def judge_steps(result, case):
    """{step: Judged} for one case of a lab, each step judged on the lab's own printed inputs
    (STEP 1 and 2 against the reference: their inputs are random draws the lab does not print),
    in every head: wrong in one head, it is wrong; evidence in one head, it is evidence. A step
    missing from this dict was not judged here. The exit status follows the verdicts of every
    head, and the fused attention's."""
    views = result.evidence.heads or [compare.HeadView(result.run.out, result.evidence.parsed)]
    checks = [accepted_checks(v.out, own_inputs.full((v.parsed or {}).get("weights"))) for v in views]
    whole = result.run.whole_out or result.run.out
    want = 0 if all(a and b for a, b in filter(None, checks)) and not compare.fused_disagrees(whole) else 1
    verdicts = {}
    stopped_in = result.run.refused.head if result.run.refused else len(views)
    if result.run.ended or result.run.status not in (0, 1):
        # it stopped (a crash, a hang, a blank of a starter, an error): the heads after the last it
        # printed never ran
        stopped_in = max([h for h, v in enumerate(views) if any(
            isinstance(b, compare.Tensor) for n, b in (v.parsed or {}).items() if n != "x")] or [0])
    stopped = None  # how the run stopped before its end (a crash, a hang, an error, a refusal)
    if result.run.ended or result.run.status not in (0, 1):
        stopped = result.run.problem or "exited %s%s" % (result.run.status, ": " + result.run.said if result.run.said else "")
    for h, view in enumerate(views[:stopped_in + 1]):  # the heads after a refusal never ran
        refused = result.run.refused if h == stopped_in else None
        for step, judged in judge_head_steps(view.out, view.parsed or {}, case, h, result.run.status, want,
                                             compare.fused_disagrees(whole), refused, result.run.said,
                                             stopped).items():
            if judged.problem and len(views) > 1:
                judged = judged._replace(problem="head %d: %s" % (h, judged.problem))
            before = verdicts.get(step)
            if before is None or (before.problem is None and (judged.problem or (before.why and not judged.why))):
                verdicts[step] = judged
    return verdicts


def accepted_checks(out, weights):
    """STEP 7's two checks as a head of a lab printed them, where they are right for its
    weights; else as the lesson's code makes them; None without weights. The exit status
    follows them."""
    if weights is None:
        return None
    answers = own_inputs.step7(weights).expected
    printed = [line for line in out if line.startswith("STEP 7")]
    for a in answers[0]:
        for b in answers[1]:
            if printed and printed[0] == compare.verdict_line(a, b):
                return a, b
    return own_inputs.own_checks(weights)


def judge_head_steps(out, blocks, case, of_head, status, want, fused_disagrees, refused=None, said=None,
                     stopped=None):
    """judge_steps() for one head: its lines (out), its printed tensors (blocks); refused: the
    compare.Refusal of the tensor the lab stopped on, when it did so in this head (its numbers
    may be right: the step still made a tensor the lesson's code cannot take), and said, the
    line the lab wrote about it; stopped: how the run stopped before its end (a crash, a hang,
    an error, a refusal), or None: the step it stopped in is wrong (what stopped it is that step's),
    and the steps after it were not reached, which is not wrong."""
    got = {name: blocks.get(name) for _, name, _ in cases.TENSORS}
    ref = reference_attention.attention(case.seed, case.tokens, case.embed, case.head,
                                        scale=case.scale, mask=case.mask, heads=case.heads,
                                        of_head=of_head, leak=case.leak)
    verdicts, unprinted = {}, set()
    last = max([n for n, t, _ in cases.TENSORS if isinstance(got[t], compare.Tensor)] or [0])
    stop = "the lab stopped at STEP %s" % refused.step if refused else "the run stopped after STEP %d" % last

    def judge(step, name, of, on=None, expected=None):
        """A step is right when each of its tensors is: compared with expected, or with what it
        is on the lab's own inputs (on, an own_inputs.OnOwnInputs), on its judged part."""
        block = got[name]
        why = on.why if on else None
        if block is None and stopped:
            unprinted.add(step)
            if step not in verdicts or verdicts[step].problem is None:
                verdicts[step] = Judged("the lab %s in this step" % stopped) if step == last + 1 and not refused \
                    else Judged(stop, reached=False)
            return
        if isinstance(block, compare.Unreadable):
            verdicts[step] = Judged("its %s: %s" % (name, block.why), unreadable=True)
            unprinted.add(step)
            return
        if block is None:
            problem = "%s was not printed" % name
            unprinted.add(step)
        elif on and (on.judged is None or not bool(on.judged.any())):
            problem = None  # nothing it printed can be compared (or computed): no evidence either way
        else:
            expected = on.expected if on else expected
            if on and tuple(block.values.shape) == tuple(expected.shape):
                expected = torch.where(on.judged, expected, block.values)  # the rest agrees with itself
            problem = compare.compare(block, expected, name)[0]
            problem = problem and "%s is not %s: %s" % (name, of, problem)
        if problem or step not in verdicts:
            verdicts[step] = Judged(problem, None if problem else why)

    judge(1, "x", "the reference's", expected=ref["x"])
    for name in ("q", "k", "v"):
        judge(2, name, "the reference's", expected=ref[name])
    on = own_inputs.on_own_inputs(got, case)
    for step, name, of in ((3, "scores", "its q times its k transposed%s" % (", scaled" if case.scale else "")),
                           (4, "masked scores", "its scores with the future masked" if case.mask else "its scores"),
                           (5, "weights", "softmax of its masked scores"), (6, "out", "its weights times its v")):
        if step in on:
            judge(step, name, of, on[step])
    if refused:  # its numbers may be right: the step still made what the code after it cannot take
        step = refused.step
        if not (verdicts.get(step) and verdicts[step].problem) or step in unprinted:
            verdicts[step] = Judged("%s is not what the lesson's code after STEP %d takes, and the lab stopped there: %s"
                                    % (refused.name, step, said))
        if not any(line.startswith("STEP 7") for line in out):
            verdicts[7] = Judged(stop, reached=False)
    for step, names in own_inputs.STEP_INPUTS.items():  # what it takes cannot be read: not judged
        unread = [n for n in names if isinstance(got[n], compare.Unreadable)]
        if unread and not (verdicts.get(step) and verdicts[step].problem):
            verdicts[step] = Judged("the %s it takes: %s" % (unread[0], got[unread[0]].why), unreadable=True)
    if 7 in on and not (refused and verdicts.get(7)) and not (verdicts.get(7) and verdicts[7].unreadable):
        if stopped and not any(line.startswith("STEP 7") for line in out):  # it stopped in STEP 6
            verdicts[7] = Judged(stop, reached=False)
        else:
            verdicts[7] = judge_step_7(out, on[7], status, want, fused_disagrees, case.leak)
    if stopped:  # what it never got to
        for step in cases.STEP_NUMBERS:
            verdicts.setdefault(step, Judged(stop, reached=False))
    return verdicts


# Said with a wrong STEP 7 in a case whose softmax leaks (cases.py's leaky-softmax).
LEAKS = " (in this case the grader made LibTorch's softmax leak: the weights it printed do not add up to 1 " \
        "and give weight to the future, and checks computed from them say so)"


def judge_step_7(out, on, status, want, fused_disagrees, leak=False):
    """STEP 7: the verdicts printed are right for the weights printed (on: own_inputs.step7),
    and the exit status follows every head's. leak: the case's softmax leaks (LEAKS)."""
    right = [compare.verdict_line(a, b) for a in sorted(on.expected[0], reverse=True)
             for b in sorted(on.expected[1], reverse=True)]
    printed = [line for line in out if line.startswith("STEP 7")]
    if len(set(printed)) > 1:  # every verdict printed: one of them is right whatever the weights
        return Judged("printed %d different STEP 7 lines (%s), where one head has one verdict" % (
            len(set(printed)), " and ".join(repr(line[:100]) for line in sorted(set(printed))[:2])))
    if not any(line in out for line in right):
        return Judged("printed %r, right for its weights: %s%s" % (
            printed[0][:100] if printed else "no STEP 7 line", " or ".join(repr(line) for line in right),
            LEAKS if leak and right != [compare.verdict_line(True, True)] else ""))
    if status != want:
        return Judged("exit status %s, expected %d for its verdicts%s" % (
            status, want, " (its fused attention disagrees)" if fused_disagrees else ""))
    return Judged(None, on.why)


def not_numbers(printed, lesson):
    """What makes a printed tensor (float64, every entry) hold no numbers to compare with
    another lab's, in words, or None: NaN, or an infinity, where the lesson's tensor has a
    number (where the lesson's has an infinity, the masked future, the same infinity or any
    number is fine). NaN agrees with NaN whatever code made it."""
    lesson = lesson.double()
    if printed.shape != lesson.shape:  # no entry to pair with the lesson's: each must be a number
        finite = torch.ones(printed.shape, dtype=torch.bool)
    else:
        finite = torch.isfinite(lesson)
    other = ~torch.isfinite(printed) & ~finite & (printed != lesson) if printed.shape == lesson.shape else finite & False
    bad = (finite & ~torch.isfinite(printed)) | other
    if not bool(bad.any()):
        return None
    nans = int(torch.isnan(printed[bad]).sum())
    infs = int(bad.sum()) - nans
    held = " and ".join(p for p in ("%d NaN" % nans if nans else "", "%d infinit%s" % (infs, "y" if infs == 1 else "ies")
                                    if infs else "") if p)
    return "holds %s where the lesson's are numbers%s" % (held, " (or the mask's -inf)" if bool(other.any()) else "")


# Why a step lost its points, as a value: wrong in a case; not reached in a case (the run
# stopped before it); not judged (its inputs were no evidence in any case); never printed; not
# written yet (a starter's blank, or after it).
WRONG, NOT_REACHED, NOT_JUDGED, NEVER_PRINTED, NOT_WRITTEN = (
    "wrong", "not reached", "not judged", "never printed", "not written")
EVERY_CASE = "every case"  # the case of a Lost that names none


class Lost(NamedTuple):
    """A step's points lost: case (the first case where it is wrong, or EVERY_CASE), what (in
    words) and kind (WRONG, NOT_JUDGED, NEVER_PRINTED or NOT_WRITTEN)."""
    case: str
    what: str
    kind: str


def grade_steps(results):
    """{step: None when it earns its points, else a Lost} over the results of compare.judge.
    A step earns them when it is right in every case it was judged in, reached in one case at
    least, and its inputs were evidence (own_inputs.py) in at least one of them, and never made
    up: the same in a pair of twins (cases.twins: the same sizes, another x) where they were
    evidence. Where they never were evidence, or were made up, it is "not judged", with why (in
    the words of the first case whose inputs, not the case itself, say why). Wrong in a case
    comes first; then never reached (the run stopped before it in every case: a step after a
    shape slip is judged where the lab ran to it); a step judged in no case was "never
    printed"."""
    grades, evidence, whys, unreached, reached = {}, set(), {}, {}, set()
    evidence_in = [set() for _ in results]  # the steps each case was evidence for
    for i, r in enumerate(results):
        case = cases.parse_case(r.text)
        for step, judged in judge_steps(r, case).items():
            if judged.problem and judged.unreadable:  # not judged there, and so not earned
                if grades.get(step) is None:  # the first case that costs it the points says why
                    grades[step] = Lost(r.text, "not judged: in case %s, %s" % (r.text, judged.problem), NOT_JUDGED)
                continue
            if judged.problem and judged.reached:
                if grades.get(step) is None:  # the first case where it is wrong
                    grades[step] = Lost(r.text, judged.problem, WRONG)
                continue
            if grades.get(step) is None:
                grades[step] = None
            if judged.problem:
                unreached.setdefault(step, Lost(r.text, judged.problem, NOT_REACHED))
                continue
            reached.add(step)
            if judged.why is None:
                evidence.add(step)
                evidence_in[i].add(step)
            elif step not in whys or (whys[step].kind in own_inputs.OF_THE_CASE
                                      and judged.why.kind not in own_inputs.OF_THE_CASE):
                whys[step] = judged.why
    made_up = inputs_made_up(results, evidence_in)
    for step in cases.STEP_NUMBERS:
        if step not in grades:
            grades[step] = Lost(EVERY_CASE, NEVER_PRINTED, NEVER_PRINTED)
        elif grades[step] is None and step not in reached and step in unreached:
            grades[step] = unreached[step]
        elif grades[step] is None and step in made_up:
            grades[step] = Lost(EVERY_CASE, "not judged: %s" % own_inputs.words(step, made_up[step]), NOT_JUDGED)
        elif grades[step] is None and step not in evidence:
            grades[step] = Lost(EVERY_CASE, "not judged: %s" % own_inputs.words(step, whys[step]), NOT_JUDGED)
    # A starter's blank: the run stops at the first step not written yet.
    blank = compare.first_blank(results)
    if blank:
        for step in range(blank, cases.STEPS + 1):
            if grades[step] is not None:
                grades[step] = Lost(EVERY_CASE, "not written yet" if step == blank else
                                    "not reached: the run stops at STEP %d, not written yet" % blank, NOT_WRITTEN)
    return grades


def inputs_made_up(results, evidence_in):
    """{step: an own_inputs.Why of NOT_FROM_X} for each of STEP 3 to 7 whose inputs were the
    same in a pair of twins (cases.twins) where, in both, they were evidence: inputs that can
    tell right code from wrong do not stay the same for another x unless they were made up to
    fit, whatever the step printed from them. (Inputs that are no evidence, such as the scores
    of zeros that an honest mistake makes for every x, are no sign of it; nor is anything of a
    lab whose own printed x stayed the same, as a seed of its own makes it.) evidence_in: for
    each result, the steps it was evidence for."""
    blocks = [(r.evidence.heads[0].parsed if r.evidence.heads else r.evidence.parsed) or {} for r in results]
    found = {}
    for a, b in cases.twins([r.text for r in results]):
        lesson = [reference_attention.attention(c.seed, c.tokens, c.embed, c.head, scale=c.scale,
                                                mask=c.mask, heads=c.heads, of_head=0, leak=c.leak)
                  for c in (cases.parse_case(results[a].text), cases.parse_case(results[b].text))]
        if own_inputs.stayed("x", blocks[a], blocks[b], *lesson) is not False:
            continue  # the lab's own x is the same in both (a seed of its own): nothing to tell
        for step in own_inputs.STEP_INPUTS:
            if step in found or step not in evidence_in[a] & evidence_in[b]:
                continue
            if step == 6 and not (own_inputs.informative_weights(blocks[a].get("weights"))
                                  and own_inputs.informative_weights(blocks[b].get("weights"))):
                continue  # equal or one-hot weights are the same for every x, whoever made them
            names = own_inputs.not_from_x(step, blocks[a], blocks[b], *lesson)
            if names:
                found[step] = own_inputs.Why(own_inputs.NOT_FROM_X, names)
    return found


def steps_wrong_in_themselves(results):
    """The steps that are wrong on the lab's own inputs, in the cases that print every entry."""
    whole = [r for r in results if r.evidence.blocks is not None and cases.prints_every_entry(cases.parse_case(r.text))]
    if not whole:
        return []
    grades = grade_steps(whole)
    return [n for n in cases.STEP_NUMBERS if grades[n] is not None and grades[n].kind == WRONG]


def verdict_text(g):
    """A step's grade (grade_steps()) in words."""
    if g is None:
        return "right in every case"
    return "%s in case %s: %s" % (g.kind, g.case, g.what) if g.kind in (WRONG, NOT_REACHED) else g.what


def grade(results, points):
    """Grades a lab from the results of its cases (compare.judge): every STEP right in every
    case earns its points. Returns (score, total, grades, parts: STEP n's line of the report)."""
    grades = grade_steps(results)
    score, total, parts = 0.0, sum(points), {}
    for step in cases.STEP_NUMBERS:
        earned = points[step - 1] if grades[step] is None else 0.0
        score += earned
        parts[step] = "STEP %d  %-36s %s/%s  %s" % (step, STEP_NAMES[step], cases.fmt(earned),
                                                   cases.fmt(points[step - 1]), verdict_text(grades[step]))
    return score, total, grades, parts


def platform_grade(score, grades, parts, points, isolation, problems=()):
    """The grade as the platforms' files take it (platforms.Grade): each step's points, its
    verdict and its line of the report (parts), the total and how the lab was isolated as the
    output; and, for other readers (grade_summary.py), the cases that did not run to their end
    (problems) as values."""
    return platforms.Grade(
        score=float(score), points=list(points), right=[grades[n] is None for n in cases.STEP_NUMBERS],
        earned=[float(points[n - 1]) if grades[n] is None else 0.0 for n in cases.STEP_NUMBERS],
        lines={n: cases.printable(parts[n]) for n in cases.STEP_NUMBERS},
        verdicts={n: cases.printable(verdict_text(grades[n])) for n in cases.STEP_NUMBERS},
        output="score: %s/%s\n%s" % (cases.fmt(score), cases.fmt(sum(points)), isolation),
        extra={"max_score": float(sum(points)), "problems": [cases.printable(p) for p in problems]})
