"""Grades for check_lab.py --grade: each STEP judged on the lab's own printed inputs.

STEP 1 and 2 against the reference (their inputs are random draws the lab does not print);
STEP 3 on the lab's q and k, STEP 4 on its scores, STEP 5 on its masked scores, STEP 6 on its
weights and v; STEP 7: the verdicts it printed are right for the weights it printed, and its
exit status follows them. A step right in every case earns its points.
"""
import os
import re

import check_lab


# The cases of a grade print every entry (no size above 16), so that each step can be
# recomputed from what the lab printed for the step before it.
GRADE_CASES = ["3,4,6,6", "7,5,8,3", "0,1,1,1", "11,12,6,9,no-scale", "3,4,6,6,no-mask", "42,16,12,4"]
STEP_NAMES = {1: "the input x", 2: "query, key and value", 3: "the scores", 4: "the causal mask",
              5: "softmax", 6: "the output", 7: "the two checks and the exit status"}


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


def judge_steps(result, case):
    """{step: None when right, else what is wrong} for one case of a lab, each step judged on
    the lab's own printed inputs (STEP 1 and 2 against the reference: their inputs are random
    draws the lab does not print). A step missing from this dict was not judged here."""
    import torch
    import reference_attention
    out, blocks = result["out"], result.get("parsed") or {}
    got = {name: blocks.get(name) for _, name, _ in check_lab.TENSORS}
    ref = reference_attention.attention(case["seed"], case["tokens"], case["embed"], case["head"],
                                        scale=case["scale"], mask=case["mask"])
    verdicts = {}

    def judge(step, name, expected, of):  # a step is right when each of its tensors is
        block = got[name]
        if block is None or isinstance(block, str):
            problem = "%s %s" % (name, "was not printed" if block is None else block)
        else:
            problem = check_lab.compare(block, expected, name)[0]
            problem = problem and "%s is not %s: %s" % (name, of, problem)
        verdicts[step] = verdicts.get(step) or problem

    judge(1, "x", ref["x"], "the reference's")
    for name in ("q", "k", "v"):
        judge(2, name, ref[name], "the reference's")
    q, k, v = (full(got[n]) for n in ("q", "k", "v"))
    if q is not None and k is not None:
        scores = q @ k.transpose(0, 1)
        if case["scale"]:
            scores = scores * (1.0 / case["head"] ** 0.5)
        judge(3, "scores", scores, "its q times its k transposed%s" % (", scaled" if case["scale"] else ""))
    scores = full(got["scores"])
    if scores is not None:
        tril = torch.ones(scores.shape, dtype=torch.bool).tril()
        masked = scores.masked_fill(~tril, float("-inf")) if case["mask"] else scores
        judge(4, "masked scores", masked, "its scores with the future masked" if case["mask"] else "its scores")
    masked = full(got["masked scores"])
    if masked is not None:
        judge(5, "weights", torch.softmax(masked, dim=-1), "softmax of its masked scores")
    weights = full(got["weights"])
    if weights is not None and v is not None:
        judge(6, "out", weights @ v, "its weights times its v")
    if weights is not None:
        sums = bool(torch.allclose(weights.sum(-1), torch.ones(weights.shape[0], dtype=torch.float64),
                                   rtol=1e-5, atol=1e-6))
        upper = weights.masked_fill(torch.ones(weights.shape, dtype=torch.bool).tril(), 0.0)
        causal = bool(upper.abs().max().item() < 1e-9)
        yes = lambda ok: "YES" if ok else "NO"
        verdict = "STEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s" % (yes(sums), yes(causal))
        want = 0 if sums and causal else 1
        if verdict not in out:
            printed = [l for l in out if l.startswith("STEP 7")]
            verdicts[7] = "printed %r, right for its weights: %r" % (printed[0][:100] if printed else "no STEP 7 line", verdict)
        elif result["status"] != want:
            verdicts[7] = "exit status %s, expected %d for its verdicts" % (result["status"], want)
        else:
            verdicts[7] = None
    return verdicts


def grade_steps(results):
    """{step: None when right in every case it was judged in, else (case, what is wrong)}
    over the results of check_lab.check_case; a step judged in no case is "never printed"."""
    grades = {}
    for r in results:
        case = check_lab.parse_case(r["text"])
        for step, problem in judge_steps(r, case).items():
            if problem and grades.get(step) is None:  # the first case where it is wrong
                grades[step] = (r["text"], problem)
            else:
                grades.setdefault(step, None)
    for step in range(1, 8):
        if step not in grades:
            grades[step] = ("every case", "never printed")
    # A starter's blank: the run stops at the first step not written yet.
    blank = min((int(m.group(1)) for r in results for l in r["out"]
                 for m in [re.match(r"^STEP (\d): not written yet", l)] if m), default=None)
    if blank:
        for step in range(blank, 8):
            if grades[step] is not None:
                grades[step] = ("every case", "not written yet" if step == blank else
                                "not reached: the run stops at STEP %d, not written yet" % blank)
    return grades


def steps_wrong_in_themselves(results):
    """The steps that are wrong on the lab's own inputs, in the cases that print every entry."""
    whole = [r for r in results if r["blocks"] is not None
             and all(n <= check_lab.SHOW_ALL for n in list(check_lab.parse_case(r["text"]).values())[1:4])]
    if not whole:
        return []
    grades = grade_steps(whole)
    return [n for n in range(1, 8) if grades[n] is not None and grades[n][1] not in ("never printed",)]


def parse_points(text):
    try:
        points = [float(p) for p in text.split(",")]
        assert len(points) == 7 and all(0 <= p <= 1000 for p in points) and sum(points) > 0
    except (ValueError, AssertionError):
        raise check_lab.Usage("--points takes 7 numbers from 0 to 1000, one for each STEP, joined by commas "
                    "(such as 1,1,2,2,2,1,1), not %r" % text[:80])
    return points


def grade(lab, cases, timeout, points, echo=print, results=None):
    """Grades the lab: every STEP right in every case earns its points. Returns (score,
    total, grades, per-step report lines); results, a list, gets check_case's result of each
    case run (for a diagnosis)."""
    results = [] if results is None else results
    for n, text in enumerate(cases):
        r = check_lab.check_case(lab, text, timeout)
        results.append(r)
        if r["problem"]:
            echo("case %s: the lab %s" % (text, r["problem"]))
        if r["timed_out"] and n + 1 < len(cases):
            echo("NOT RUN %s: the lab ran out of time in case %s, and would again" % (" ".join(cases[n + 1:]), text))
            break
    grades = grade_steps(results)
    score, total, parts = 0.0, sum(points), {}
    for step in range(1, 8):
        g = grades[step]
        earned = points[step - 1] if g is None else 0.0
        score += earned
        line = "STEP %d  %-36s %s/%s  %s" % (step, STEP_NAMES[step], fmt(earned), fmt(points[step - 1]),
                                            "right in every case" if g is None else "wrong in case %s: %s" % g
                                            if g[0] != "every case" else g[1])
        parts[step] = line
        echo(line)
    echo("score: %s/%s" % (fmt(score), fmt(total)))
    return score, total, grades, parts


def fmt(x):
    return ("%g" % x)


def gradescope_results(score, grades, parts, points, path, isolation):
    """Writes Gradescope's results.json: a test per STEP (score, max_score, output: that
    step's line of the report), the total score, and how the lab was isolated."""
    import json
    tests = [{"name": "STEP %d: %s" % (n, STEP_NAMES[n]), "number": str(n),
              "score": float(points[n - 1]) if grades[n] is None else 0.0,
              "max_score": float(points[n - 1]), "output": check_lab.printable(parts[n])} for n in range(1, 8)]
    data = {"score": float(score), "output": "score: %s/%s\n%s" % (fmt(score), fmt(sum(points)), isolation),
            "stdout_visibility": "visible", "tests": tests}
    with open(path + ".new", "w") as f:
        json.dump(data, f, indent=2)
    os.replace(path + ".new", path)
