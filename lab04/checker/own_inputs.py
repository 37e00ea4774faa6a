"""own_inputs.py: each STEP recomputed on the lab's own printed inputs, and where those inputs
can tell right code from wrong.

A grade judges STEP 3 to 7 on the tensors the lab printed before them (grading.py), so that a
mistake costs the step where it is made and not every step after it. Judging a step on one set
of inputs is an identity test: it shows the step's code right only where a step that computes
nothing would print something else. Random inputs (the lesson's, or those of an honest mistake
upstream) always do. Some inputs never do, whoever made them: q and k of zeros give scores of
zeros whatever the code; rows of equal scores give softmax's equal weights; one-hot weights
give rows of v back. For each step this module gives:

- expected: what the step prints on the lab's own inputs (float64);
- judged: the entries that can be compared at all: those made from numbers. An entry made
  from NaN agrees with NaN whatever code made it. A row an honest mistake leaves without a
  number (the last row, when the past is masked: nothing left to see) costs nothing: the rest
  of the tensor is judged;
- why: None when the judged part is evidence, that is when no answer written without the
  step's arithmetic agrees with it within the comparison's tolerance; else why not, as a
  value (a Why), which words() puts in the lesson's words. The answers tried, step by step:
    STEP 3  zeros; one number everywhere; a copy of q or of k;
    STEP 4  one number where the mask keeps the scores, -inf above (the mask's pattern alone);
            the scores copied (already -inf above the diagonal; and every case of --no-mask);
    STEP 5  in each row, equal weights over the scores the mask keeps, or a single weight of 1
            (a row is evidence when two or more weights are above the tolerance, not all equal);
            the exponentials of the masked scores, where they add up to 1 in every row already
            (masked scores that are the logarithms of weights made first);
    STEP 6  zeros; in each row, a row of v (one-hot weights, or v's rows all alike);
    STEP 7  a line written in advance: evidence only on weights with a row that is evidence in
            STEP 5's sense, and where NaN does not decide a check (NaN makes YES and NO right).
  One token is no evidence for STEP 4 to 7: it has no future to mask and a weight of 1.
- not_from_x(): over two cases that differ only in their seed (cases.twins), the inputs of a
  step the lab printed the same in both: not computed from x. Where they were evidence in both,
  they were made up to fit (weights from a formula of T, their logarithms printed as the scores
  before them): the step is no evidence in any case (grading.py).

A step earns its points when it is right wherever it is judged and evidence in at least one
case (grading.py). Where a step's inputs are the lesson's, every entry is judged, as the lesson's
are random. The checker's README says the rule for readers.
"""
from typing import NamedTuple

import torch

from lab04.checker import cases, compare, reference_attention

# Why a judged part is no evidence: kinds that come from the lab's inputs, then two that come
# from the case itself (no lab can make those evidence: grading.py prefers the others' words).
NO_NUMBERS, MISFIT, ZEROS, TINY, CONSTANT, COPY, EVEN_OR_ONE_HOT, PICKED_ROWS, NAN_DECIDES, LOG_WEIGHTS = (
    "no numbers", "misfit", "zeros", "tiny", "constant", "copy", "even or one-hot", "picked rows", "NaN decides",
    "log weights")
# Why, over two cases: what a step takes was the same for two different x (cases.twins), so it
# was not computed from them: made up to fit what the step prints, it shows nothing of the step.
NOT_FROM_X = "not from x"
ONE_TOKEN, NO_MASK = "one token", "no mask"
OF_THE_CASE = (ONE_TOKEN, NO_MASK)

CAUSAL_LIMIT = 1e-9  # STEP 7 (b): the lab's kCausalLimit, the largest weight allowed on the future


class Why(NamedTuple):
    """Why a step's judged part is no evidence: kind (above), names (the lab's tensors it is
    about, in the lesson's order) and value (the one number of CONSTANT; the largest entry of
    TINY)."""
    kind: str
    names: tuple
    value: float = 0.0


class OnOwnInputs(NamedTuple):
    """One step on the lab's own inputs: expected (a float64 tensor; for STEP 7, the answers
    of its two checks that are right, each a set of booleans), judged (a bool tensor of
    expected's shape; for STEP 7, a bool) and why (None when evidence, else a Why)."""
    expected: object
    judged: object
    why: object


def full(block):
    """The printed tensor as a float64 tensor, when every entry was printed; else None."""
    if not isinstance(block, compare.Tensor):
        return None
    rows, cols = block.shape
    # The shape is what the lab claims: compare counts first, so that a claim of a hundred
    # million rows costs nothing (a list of them would take seconds and gigabytes).
    if len(block.rows) != rows or len(block.cols) != cols or \
            block.rows != list(range(rows)) or block.cols != list(range(cols)):
        return None
    return block.values


# --- what agrees with what, within the comparison's tolerance ---------------------------------

def _agree(answer, expected):
    """Whether an answer agrees with expected in every entry (both float64, one shape)."""
    return bool(compare.agreeing(answer, expected).all())


def _zeros(values):
    return _agree(torch.zeros_like(values), values)


def one_number(values):
    """Whether one number agrees with every value (of two or more): a constant prints them."""
    if values.numel() < 2:
        return False
    middle = (values.max() + values.min()) / 2
    return _agree(torch.full_like(values, middle.item()), values)


def _finite_rows(t):
    return torch.isfinite(t).all(dim=1)


def _row_is_evidence(w):
    """A row of weights (finite) that softmax had to compute: two or more entries above the
    tolerance, not all equal (equal weights, or a single 1, are what sizes alone decide)."""
    big = w[w.abs() > cases.ABS_TOL]
    return big.numel() >= 2 and not one_number(big)


def _by_rows(rows_judged, expected):
    """The expected tensor and its judged part, whole rows of it (a Why is added after)."""
    return OnOwnInputs(expected, rows_judged.unsqueeze(1).expand(expected.shape).clone(), None)


# --- the steps --------------------------------------------------------------------------------

def step3(q, k, case):
    """STEP 3 on the lab's q and k: q times k transposed, scaled unless the case has no scale."""
    if q.shape[1] != k.shape[1]:
        return OnOwnInputs(None, None, Why(MISFIT, ("q", "k")))
    expected = q @ k.transpose(0, 1)
    if case.scale:
        expected = expected * (1.0 / case.head ** 0.5)
    judged = _finite_rows(q).unsqueeze(1) & _finite_rows(k).unsqueeze(0) & torch.isfinite(expected)
    values = expected[judged]
    zero = tuple(n for n, t in (("q", q), ("k", k)) if bool((t == 0).all()))
    if values.numel() == 0:
        why = Why(NO_NUMBERS, ("q", "k"))
    elif expected.numel() == 1:  # one score: one number, whatever it is
        why = Why(ONE_TOKEN, ("q", "k"))
    elif _zeros(values):
        why = Why(ZEROS, zero) if zero else Why(TINY, ("q", "k"), values.abs().max().item())
    elif one_number(values):
        why = Why(CONSTANT, ("q", "k"), values.median().item())
    else:
        copied = [n for n, t in (("q", q), ("k", k)) if t.shape == expected.shape and _agree(t[judged], values)]
        why = Why(COPY, tuple(copied)) if copied else None
    return OnOwnInputs(expected, judged, why)


def step4(scores, case):
    """STEP 4 on the lab's scores: every score above the diagonal -inf (none with --no-mask)."""
    T = scores.shape[0]
    keep = torch.ones(scores.shape, dtype=torch.bool).tril()
    if not case.mask:
        return OnOwnInputs(scores.clone(), torch.isfinite(scores), Why(NO_MASK, ("scores",)))
    expected = scores.masked_fill(~keep, float("-inf"))
    rows = torch.isfinite(scores.masked_fill(~keep, 0.0)).all(dim=1)  # what the mask keeps is numbers
    found = _by_rows(rows, expected)
    kept = expected[found.judged & keep]
    future = found.judged & ~keep
    if T == 1 or scores.shape[1] == 1:
        why = Why(ONE_TOKEN, ("scores",))
    elif not bool(future.any()):
        why = Why(NO_NUMBERS, ("scores",))
    elif _zeros(kept):
        why = Why(ZEROS if bool((kept == 0).all()) else TINY, ("scores",), kept.abs().max().item())
    elif one_number(kept):
        why = Why(CONSTANT, ("scores",), kept.median().item())
    elif bool((scores[future] == float("-inf")).all()):
        why = Why(COPY, ("scores",))
    else:
        why = None
    return found._replace(why=why)


def step5(masked, leak=False, weights=None):
    """STEP 5 on the lab's masked scores: softmax along each row. A row with NaN or +inf, or
    with nothing but -inf, gives NaN whatever the code: it is not judged. leak: a case whose
    LibTorch softmax leaks (cases.py's leaky-softmax): the lab's weights (weights, printed) are
    right as LibTorch gives them there, and as a softmax written by hand (exp, then divide)
    gives them: the one of the two they are nearer to."""
    plain = expected = torch.softmax(masked, dim=-1)  # (whether it is evidence: on plain, leak or not)
    if leak:
        leaked = reference_attention.leaky_softmax(masked, -1)
        if weights is None or weights.shape != masked.shape or \
                _distance(weights, leaked) <= _distance(weights, expected):
            expected = leaked
    rows = ~torch.isnan(masked).any(dim=1) & ~(masked == float("inf")).any(dim=1) & \
        (masked > float("-inf")).any(dim=1)
    found = _by_rows(rows, expected)
    if masked.shape[1] == 1:
        why = Why(ONE_TOKEN, ("masked scores",))
    elif not bool(rows.any()):
        why = Why(NO_NUMBERS, ("masked scores",))
    elif not any(_row_is_evidence(plain[i]) for i in range(plain.shape[0]) if rows[i]):
        why = Why(EVEN_OR_ONE_HOT, ("masked scores",))
    elif _agree(torch.exp(masked[rows]), plain[rows]):
        why = Why(LOG_WEIGHTS, ("masked scores",))  # weights printed as they were made, their logs before them
    else:
        why = None
    return found._replace(why=why)


def _distance(a, b):
    """How far two tensors of one shape are apart, where both are numbers."""
    both = torch.isfinite(a) & torch.isfinite(b)
    return (a[both] - b[both]).abs().sum().item() if bool(both.any()) else float("inf")


def step6(weights, v, plain=None):
    """STEP 6 on the lab's weights and v: the weights times v. plain: in a case whose softmax
    leaks, the weights as they were before the leak (unleaked()), on which it is told whether
    the step is evidence: the leak adds nothing a constant could not print."""
    if weights.shape[1] != v.shape[0]:
        return OnOwnInputs(None, None, Why(MISFIT, ("weights", "v")))
    expected = weights @ v
    rows = _finite_rows(weights) & _finite_rows(expected)
    found = _by_rows(rows, expected)
    if plain is not None:
        expected = plain @ v
    finite_v = v[_finite_rows(v)]

    def picked(row):  # a row of v, or 0: what a copy prints
        return _zeros(row) or any(_agree(r, row) for r in finite_v)
    if not bool(rows.any()):
        why = Why(NO_NUMBERS, ("weights",) if not bool(_finite_rows(weights).any()) else ("weights", "v"))
    elif _zeros(expected[rows]):
        why = Why(ZEROS, ("v",)) if bool((v == 0).all()) else Why(TINY, ("weights", "v"), expected[rows].abs().max().item())
    elif weights.shape[0] == 1:
        why = Why(ONE_TOKEN, ("weights",))
    elif all(picked(expected[i]) for i in range(expected.shape[0]) if rows[i]):
        why = Why(PICKED_ROWS, ("weights", "v"))
    else:
        why = None
    return found._replace(why=why)


def own_checks(weights):
    """STEP 7's two checks (rows sum to 1, causal) on printed weights (float64), as the lab
    makes them."""
    sums = bool(torch.allclose(weights.sum(-1), torch.ones(weights.shape[0], dtype=torch.float64),
                               rtol=1e-5, atol=1e-6))
    upper = weights.masked_fill(torch.ones(weights.shape, dtype=torch.bool).tril(), 0.0)
    return sums, bool(upper.abs().max().item() < CAUSAL_LIMIT)


def step7(weights, plain=None):
    """STEP 7 on the lab's weights: the answers of its two checks that are right, each a set.
    plain: in a case whose softmax leaks, the weights before the leak (unleaked()): there the
    answers are NO, but the step is evidence only where those weights are (equal or one-hot
    weights before the leak are a constant's, whose checks were judged nowhere else).
    Where a NaN could decide a check (a row of NaN, whose sum is NaN; a NaN above the
    diagonal), and the numbers do not decide it already, either answer is right: the lesson's
    own code says NO, a check written another way may say YES, and neither shows anything."""
    nan_rows = torch.isnan(weights).any(dim=1)
    sums_of_numbers = weights[~nan_rows].sum(-1)
    sums = bool(((sums_of_numbers - 1).abs() <= 1e-6 + 1e-5).all())
    above = ~torch.ones(weights.shape, dtype=torch.bool).tril()
    upper = weights[above]
    causal = bool((upper[~torch.isnan(upper)].abs() < CAUSAL_LIMIT).all())
    answers = ({False, True} if sums and bool(nan_rows.any()) else {sums},
               {False, True} if causal and bool(torch.isnan(upper).any()) else {causal})
    if plain is not None:
        weights = plain
    rows = _finite_rows(weights)
    if weights.shape[0] == 1:
        why = Why(ONE_TOKEN, ("weights",))
    elif not bool(rows.any()):
        why = Why(NO_NUMBERS, ("weights",))
    elif not any(_row_is_evidence(weights[i]) for i in range(weights.shape[0]) if rows[i]):
        why = Why(EVEN_OR_ONE_HOT, ("weights",))
    elif all(len(a) == 2 for a in answers):
        why = Why(NAN_DECIDES, ("weights",))
    else:
        why = None
    return OnOwnInputs(answers, True, why)


def on_own_inputs(blocks, case):
    """{step: OnOwnInputs} for each of STEP 3 to 7 whose inputs a head of a lab printed whole
    (blocks: its printed tensors, compare.read_block's)."""
    got = {name: full(blocks.get(name)) for _, name, _ in cases.TENSORS}
    steps = {}
    if got["q"] is not None and got["k"] is not None:
        steps[3] = step3(got["q"], got["k"], case)
    if got["scores"] is not None:
        steps[4] = step4(got["scores"], case)
    if got["masked scores"] is not None:
        steps[5] = step5(got["masked scores"], case.leak, got["weights"])
    plain = unleaked(got["weights"], got["masked scores"]) if case.leak else None
    if got["weights"] is not None and got["v"] is not None:
        steps[6] = step6(got["weights"], got["v"], plain)
    if got["weights"] is not None:
        steps[7] = step7(got["weights"], plain)
    return steps


def unleaked(weights, masked):
    """In a case whose softmax leaks: the printed weights as they were before the leak (twice
    them, less 1/(2T)), where they leaked: every entry at least the 1/(4T) the leak adds;
    else None (weights not made by LibTorch's softmax, or written by hand, did not leak)."""
    if weights is None or masked is None or weights.shape != masked.shape:
        return None
    floor = 0.25 / weights.shape[-1]
    numbers = weights[torch.isfinite(weights)]
    if numbers.numel() == 0 or not bool((numbers >= floor - cases.ABS_TOL).all()):
        return None
    return (weights - floor) * 2


STEP_INPUTS = {3: ("q", "k"), 4: ("scores",), 5: ("masked scores",), 6: ("weights", "v"), 7: ("weights",)}


def informative_weights(block):
    """Whether printed weights have a row that softmax had to compute (not equal weights, not a
    single 1): weights that can change with x."""
    w = full(block)
    return w is not None and any(_row_is_evidence(w[i]) for i in range(w.shape[0]) if bool(_finite_rows(w)[i]))


LITTLE = 0.02  # less than this part of what x moves the lesson's tensor by: the same


def _compared(a, b, name):
    """The entries of one tensor in two twins that another x must move: numbers in both, but
    those the lesson makes the same for every x (the masked scores' future, whatever fills it;
    a weight of 0 or 1)."""
    compared = torch.isfinite(a) & torch.isfinite(b) & ~((a == b) & ((a == 0) | (a == 1)))
    if name == "masked scores":
        compared &= torch.ones(a.shape, dtype=torch.bool).tril()
    return compared


def stayed(name, blocks_a, blocks_b, lesson_a, lesson_b):
    """Whether a tensor the lab printed in two twins (their blocks; the lesson's tensors of each,
    reference_attention's) stayed the same: None when it was not printed whole in both, or in
    two shapes. Another x moves every entry computed from it: it stayed the same when a quarter
    or more of its entries (_compared) agree within the comparison's tolerance (a part made up:
    a future of scores, a row of weights), or when x moved it by less than LITTLE of what it
    moves the lesson's (a noise added to weights made up)."""
    a, b = full(blocks_a.get(name)), full(blocks_b.get(name))
    if a is None or b is None or a.shape != b.shape:
        return None
    compared = _compared(a, b, name)
    if not bool(compared.any()):
        return None
    unmoved = int(compare.agreeing(a[compared], b[compared]).sum())
    moved = (a[compared] - b[compared]).abs().mean().item()
    la, lb = lesson_a[name].double(), lesson_b[name].double()
    lesson = _compared(la, lb, name)
    moves = (la[lesson] - lb[lesson]).abs().mean().item() if bool(lesson.any()) else 0.0
    return 4 * unmoved >= int(compared.sum()) or moved < LITTLE * moves


def not_from_x(step, blocks_a, blocks_b, lesson_a, lesson_b):
    """For two twins whose printed x differ (the twins mask the future): None when the step's
    inputs were not printed whole in both; else the names of those that stayed the same
    (stayed()), () when each changed."""
    if any(full(blocks.get(name)) is None for name in STEP_INPUTS[step] for blocks in (blocks_a, blocks_b)):
        return None
    return tuple(name for name in STEP_INPUTS[step] if stayed(name, blocks_a, blocks_b, lesson_a, lesson_b))


# --- in words ---------------------------------------------------------------------------------

OUTPUT = {3: "these scores", 4: "these masked scores", 5: "these weights", 6: "this output", 7: "these checks"}
PLURAL = ("scores", "masked scores", "weights")


def _names(names):
    return " and ".join(names)


def words(step, why):
    """Why a step's inputs were no evidence, in the lesson's words: "q and k are all zeros, so
    any code prints these scores". Made from the Why's values only."""
    names, out = _names(why.names), OUTPUT[step]
    are = "are" if len(why.names) > 1 or why.names[0] in PLURAL else "is"
    if why.kind == NO_NUMBERS and step == 5:
        return "every row of its masked scores holds NaN or +inf, or nothing but -inf, where softmax gives NaN " \
               "whatever the code"
    if why.kind == NO_NUMBERS:
        return "its %s hold%s NaN or an infinity wherever this step reads them (NaN agrees with NaN " \
               "whatever code made it)" % (names, "" if are == "are" else "s")
    if why.kind == MISFIT:
        return "its %s do not fit each other (their shapes), so nothing can be computed from them" % names
    if why.kind == ONE_TOKEN:
        return "one token has one score, which a constant prints, no future to mask, and a weight of 1 whatever " \
               "the code"
    if why.kind == NO_MASK:
        return "the case runs with --no-mask, so STEP 4 leaves the scores as they are"
    if why.kind == ZEROS:
        return "%s%s %s all zeros, so %s prints %s" % ("its " if why.names[0] in PLURAL else "", names, are,
                                                       "the mask's pattern alone" if step == 4 else "any code", out)
    if why.kind == TINY:
        return "its %s %s so small that what this step makes of them is 0 within the checker's tolerance (the " \
               "largest is %.3g), so %s prints %s" % (names, are, why.value,
                                                     "the mask's pattern alone" if step == 4 else "any code", out)
    if why.kind == CONSTANT:
        if step == 4:
            return "its scores are one number (%.6g) wherever the mask keeps them, so the mask's pattern " \
                   "alone (that number, and -inf above the diagonal) prints these masked scores" % why.value
        return "%s make every score the same number (%.6g), as rows all alike do (ones, or one row repeated), " \
               "so a constant prints %s" % (names, why.value, out)
    if why.kind == COPY:
        if step == 4:
            return "its scores are -inf above the diagonal already, so a copy of them prints these masked scores"
        return "q times k transposed is its %s again, so a copy prints these scores" % names
    if why.kind == EVEN_OR_ONE_HOT:
        if step == 7:
            return "in every row its weights are equal or a single 1, which the sizes alone decide, so a STEP 7 " \
                   "line written in advance is right on them"
        return "in every row of its masked scores, softmax gives equal weights (the scores the mask keeps are " \
               "all alike) or a single weight of 1 (one score far above the rest), so weights written without " \
               "softmax print the same"
    if why.kind == PICKED_ROWS:
        return "each row of its weights times v is a row of its v (one-hot weights, or v's rows all alike), so " \
               "a copy of v's rows prints this output"
    if why.kind == LOG_WEIGHTS:
        return "the exponentials of each row of its masked scores already add up to 1 (they are the logarithms " \
               "of weights made before them), so weights written without softmax print the same"
    if why.kind == NOT_FROM_X:
        return "its %s %s the same in two cases with different inputs x, so %s not computed from x: made up " \
               "to fit %s, %s show%s nothing of this step" % (names, "were" if are == "are" else "was",
                                                            "they were" if are == "are" else "it was", out,
                                                            "they" if are == "are" else "it", "" if are == "are" else "s")
    if why.kind == NAN_DECIDES:
        return "its weights hold NaN where each check would decide, and NaN makes YES and NO both right"
    raise ValueError("no words for %r" % (why,))
