"""Grades for check_lab.py --grade: each STEP judged on the lab's own printed inputs.

STEP 1 and 2 against the reference (their inputs are random draws the lab does not print);
STEP 3 on the lab's q and k, STEP 4 on its scores, STEP 5 on its masked scores, STEP 6 on its
weights and v; STEP 7: the verdicts it printed are right for the weights it printed, and its
exit status follows them. A step right in every case earns its points.
"""
import json

import torch

import cases
import compare
import files
import reference_attention
from cases import STEP_NAMES


def full(block):
    """The printed tensor as a float64 tensor, when every entry was printed; else None."""
    if not isinstance(block, dict):
        return None
    rows, cols = block["shape"]
    # The shape is what the lab claims: compare counts first, so that a claim of a hundred
    # million rows costs nothing (a list of them would take seconds and gigabytes).
    if len(block["rows"]) != rows or len(block["cols"]) != cols or \
            block["rows"] != list(range(rows)) or block["cols"] != list(range(cols)):
        return None
    return block["values"]


def own_checks(weights):
    """STEP 7's two checks (rows sum to 1, causal) on printed weights (float64), as the lab
    makes them."""
    sums = bool(torch.allclose(weights.sum(-1), torch.ones(weights.shape[0], dtype=torch.float64),
                               rtol=1e-5, atol=1e-6))
    upper = weights.masked_fill(torch.ones(weights.shape, dtype=torch.bool).tril(), 0.0)
    return sums, bool(upper.abs().max().item() < 1e-9)


def judge_steps(result, case):
    """{step: None when right, else what is wrong} for one case of a lab, each step judged on
    the lab's own printed inputs (STEP 1 and 2 against the reference: their inputs are random
    draws the lab does not print), in every head. A step missing from this dict was not judged
    here. The exit status follows the verdicts of every head, and the fused attention's."""
    views = result.get("heads") or [{"out": result["out"], "parsed": result.get("parsed")}]
    weights = [full((v["parsed"] or {}).get("weights")) for v in views]
    checks = [own_checks(w) for w in weights if w is not None]
    whole = result.get("whole_out", result["out"])
    want = 0 if all(a and b for a, b in checks) and not compare.fused_disagrees(whole) else 1
    verdicts = {}
    stopped_in = (result.get("refused") or {}).get("head", len(views))
    if result.get("ended") or result.get("status") not in (0, 1):
        # it stopped (a crash, a hang, a blank of a starter, an error): the heads after the last it
        # printed never ran
        stopped_in = max([h for h, v in enumerate(views) if any(
            isinstance(b, dict) for n, b in (v["parsed"] or {}).items() if n != "x")] or [0])
    for h, view in enumerate(views[:stopped_in + 1]):  # the heads after a refusal never ran
        refused = result.get("refused") if h == stopped_in else None
        for step, problem in judge_head_steps(view["out"], view["parsed"] or {}, case, h, result["status"], want,
                                              compare.fused_disagrees(whole), refused, result.get("said")).items():
            if problem and len(views) > 1:
                problem = "head %d: %s" % (h, problem)
            verdicts[step] = verdicts.get(step) or problem
    return verdicts


def judge_head_steps(out, blocks, case, of_head, status, want, fused_disagrees, refused=None, said=None):
    """judge_steps() for one head: its lines (out), its printed tensors (blocks); refused:
    (step, name) of the tensor the lab stopped on, when it did so in this head (its numbers
    may be right: the step still made a tensor the lesson's code cannot take), and said, the
    line the lab wrote about it."""
    got = {name: blocks.get(name) for _, name, _ in cases.TENSORS}
    ref = reference_attention.attention(case["seed"], case["tokens"], case["embed"], case["head"],
                                        scale=case["scale"], mask=case["mask"], heads=case["heads"],
                                        of_head=of_head)
    verdicts, unprinted = {}, set()

    def judge(step, name, expected, of):  # a step is right when each of its tensors is
        block = got[name]
        if block is None or isinstance(block, str):
            problem = "%s %s" % (name, "was not printed" if block is None else block)
            unprinted.add(step)
        else:
            problem = compare.compare(block, expected, name)[0]
            problem = problem and "%s is not %s: %s" % (name, of, problem)
        verdicts[step] = verdicts.get(step) or problem

    def numbers(step, *names):  # its inputs are numbers where the lesson's are, or it is not judged
        for name in names:
            problem = not_numbers(full(got[name]), ref[name])
            if problem:
                verdicts[step] = verdicts.get(step) or "not judged: its input, the %s printed, %s, so " \
                    "nothing shows whether this step is right on them" % (name, problem)
                return False
        return True

    judge(1, "x", ref["x"], "the reference's")
    for name in ("q", "k", "v"):
        judge(2, name, ref[name], "the reference's")
    q, k, v = (full(got[n]) for n in ("q", "k", "v"))
    if q is not None and k is not None and numbers(3, "q", "k"):
        scores = q @ k.transpose(0, 1)
        if case["scale"]:
            scores = scores * (1.0 / case["head"] ** 0.5)
        judge(3, "scores", scores, "its q times its k transposed%s" % (", scaled" if case["scale"] else ""))
    scores = full(got["scores"])
    if scores is not None and numbers(4, "scores"):
        tril = torch.ones(scores.shape, dtype=torch.bool).tril()
        masked = scores.masked_fill(~tril, float("-inf")) if case["mask"] else scores
        judge(4, "masked scores", masked, "its scores with the future masked" if case["mask"] else "its scores")
    masked = full(got["masked scores"])
    if masked is not None and numbers(5, "masked scores"):
        judge(5, "weights", torch.softmax(masked, dim=-1), "softmax of its masked scores")
    weights = full(got["weights"])
    if weights is not None and v is not None and numbers(6, "weights", "v"):
        judge(6, "out", weights @ v, "its weights times its v")
    if refused:  # its numbers may be right: the step still made what the code after it cannot take
        step = int(refused["step"])
        if not verdicts.get(step) or step in unprinted:
            verdicts[step] = "%s is not what the lesson's code after STEP %d takes, and the lab stopped there: %s" % (
                refused["name"], step, said)
        if not any(line.startswith("STEP 7") for line in out):
            verdicts[7] = "not reached: the lab stopped at STEP %d" % step
    if weights is not None and not (refused and verdicts.get(7)) and numbers(7, "weights"):
        verdict = compare.verdict_line(*own_checks(weights))
        if verdict not in out:
            printed = [l for l in out if l.startswith("STEP 7")]
            verdicts[7] = "printed %r, right for its weights: %r" % (printed[0][:100] if printed else "no STEP 7 line", verdict)
        elif status != want:
            verdicts[7] = "exit status %s, expected %d for its verdicts%s" % (
                status, want, " (its fused attention disagrees)" if fused_disagrees else "")
        else:
            verdicts[7] = None
    return verdicts


def not_numbers(printed, lesson):
    """What makes a printed tensor (float64, every entry) no input to judge a step on, in
    words, or None: NaN, or an infinity, where the lesson's tensor has a number (where the
    lesson's has an infinity, the masked future, the same infinity or any number is fine).
    NaN agrees with NaN whatever code made it, so a step judged on NaN would always be right."""
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


# A step's grade that names no case: where it is wrong in every case, and why as a value.
EVERY_CASE, NEVER_PRINTED = "every case", "never printed"


def grade_steps(results):
    """{step: None when right in every case it was judged in, else (case, what is wrong)}
    over the results of compare.judge; a step judged in no case is "never printed"."""
    grades = {}
    for r in results:
        case = cases.parse_case(r["text"])
        for step, problem in judge_steps(r, case).items():
            if problem and grades.get(step) is None:  # the first case where it is wrong
                grades[step] = (r["text"], problem)
            else:
                grades.setdefault(step, None)
    for step in cases.STEP_NUMBERS:
        if step not in grades:
            grades[step] = (EVERY_CASE, NEVER_PRINTED)
    # A starter's blank: the run stops at the first step not written yet.
    blank = min((b for b in (compare.blank_step(r["out"]) for r in results) if b), default=None)
    if blank:
        for step in range(blank, cases.STEPS + 1):
            if grades[step] is not None:
                grades[step] = (EVERY_CASE, "not written yet" if step == blank else
                                "not reached: the run stops at STEP %d, not written yet" % blank)
    return grades


def steps_wrong_in_themselves(results):
    """The steps that are wrong on the lab's own inputs, in the cases that print every entry."""
    whole = [r for r in results if r["blocks"] is not None and cases.prints_every_entry(cases.parse_case(r["text"]))]
    if not whole:
        return []
    grades = grade_steps(whole)
    return [n for n in cases.STEP_NUMBERS if grades[n] is not None and grades[n][1] != NEVER_PRINTED]


def verdict_text(g):
    """A step's grade (grade_steps()) in words."""
    return "right in every case" if g is None else "wrong in case %s: %s" % g if g[0] != EVERY_CASE else g[1]


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


def gradescope_results(score, grades, parts, points, path, isolation, problems=()):
    """Writes Gradescope's results.json: a test per STEP (score, max_score, status, output:
    that step's line of the report), the total score, and how the lab was isolated; and, for
    other readers (grade_summary.py), each step's verdict and the cases that did not run to
    their end (problems) as values, in Gradescope's extra_data."""
    tests = [{"name": "STEP %d: %s" % (n, STEP_NAMES[n]), "number": str(n),
              "score": float(points[n - 1]) if grades[n] is None else 0.0, "max_score": float(points[n - 1]),
              "status": "passed" if grades[n] is None else "failed", "output": cases.printable(parts[n]),
              "extra_data": {"step": n, "what": STEP_NAMES[n], "verdict": cases.printable(verdict_text(grades[n]))}}
             for n in cases.STEP_NUMBERS]
    data = {"score": float(score), "output": "score: %s/%s\n%s" % (cases.fmt(score), cases.fmt(sum(points)), isolation),
            "stdout_visibility": "visible", "tests": tests,
            "extra_data": {"max_score": float(sum(points)), "problems": [cases.printable(p) for p in problems]}}
    with files.written(path) as f:
        json.dump(data, f, indent=2)
