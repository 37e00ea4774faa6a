"""compare.py: what a run of the lab printed, read back and compared with the reference.

read_block() reads one printed tensor; compare() says whether it agrees with the expected
tensor, and where not, how; first_difference() walks the tensors in the order of the lesson;
judge() turns one run of one case (a running.Ran) into a case's result: OK, or NOT OK with the
FIRST step that differs (later steps follow from it and are not judged), or what stopped the
run and how far it got. A result (CaseResult) holds three parts: the run (SeenRun: what the
lab printed and how it ended), the judgement (Judgement: OK or where it first differs, the
report's lines) and the evidence (Evidence: the tensors read, for the diagnosis and the
grade). A future filled with a finite number that softmax turns into a weight
of exactly 0 (-1e9, say) is as good as -inf: OK, with a note (fill_note()).
"""
import re
from dataclasses import dataclass, field
from typing import List, NamedTuple, Optional

import torch

from lab04.checker import cases, reference_attention
from lab04.checker.cases import ABS_TOL, REL_TOL, TENSORS, shown
from lab04.checker.engine import Ending


class Tensor(NamedTuple):
    """A tensor as the lab printed it: shape (what its header claims; the weights' rows and
    columns where it has none), rows and cols (the indices printed: a condensed view skips
    some) and values (a float64 tensor, rows x cols)."""
    shape: tuple
    rows: list
    cols: list
    values: object


class Unreadable(NamedTuple):
    """A printed tensor that cannot be read, with why, in words for the report."""
    why: str


def read_block(lines, header):
    """The tensor printed after the line starting with header, a Tensor; None when no such
    line; or an Unreadable, for what cannot be read: a line that is no row, a header whose
    shape is not what its rows show (every entry printed), the tensor printed twice with
    different numbers (which of them the lab computed cannot be told)."""
    starts = [n for n, line in enumerate(lines) if line.startswith(header)]
    if not starts:
        return None
    blocks = [_block_at(lines, start, header) for start in starts]
    for other in blocks[1:]:
        if not _same_block(blocks[0], other):
            return Unreadable("printed %d times, with different numbers: which one the lab computed cannot be "
                              "told" % len(blocks))
    return blocks[0]


def _same_block(a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return (a.shape, a.rows, a.cols) == (b.shape, b.rows, b.cols) and \
            bool(((a.values == b.values) | (torch.isnan(a.values) & torch.isnan(b.values))).all())
    return a == b


def _block_at(lines, start, header):
    claimed = re.search(r"shape \((\d+), (\d+)\):$", lines[start])
    shape = (int(claimed.group(1)), int(claimed.group(2))) if claimed else None
    indent = "      " if header.startswith(" ") else "  "
    rows, condensed = [], False
    for line in lines[start + 1:]:
        if line.startswith(indent + "... ") and line.endswith("rows not shown ..."):
            condensed = True
            continue
        m = re.match("^" + indent + r"t(\d+): \[(.*)\]$", line)
        if not m:
            if line.startswith(indent + "t"):
                return Unreadable("cannot read the line %r" % line[:80])
            break
        rows.append((int(m.group(1)), m.group(2).split(", ")))
    if not rows:
        return Unreadable("no rows printed after %r" % lines[start][:80])
    if shape is None:  # the weights: T rows; columns as printed, or T when condensed
        n = rows[-1][0] + 1
        shape = (n, n if "..." in rows[-1][1] else len(rows[-1][1]))
    grid, cols = [], None
    for i, cells in rows:
        cut = cells.index("...") if "..." in cells else len(cells)
        columns = list(range(cut)) + [shape[1] - len(cells) + cut + 1 + k
                                      for k in range(len(cells) - cut - 1)]
        if cols is not None and columns != cols:
            return Unreadable("row t%d has %d entries, row t%d %d" % (rows[0][0], len(cols), i, len(columns)))
        cols = columns
        try:
            grid.append([float(text) for text in cells[:cut] + cells[cut + 1:]])
        except ValueError:
            bad = next(t for t in cells[:cut] + cells[cut + 1:] if not is_number(t))
            return Unreadable("cannot read the number %r in row t%d" % (bad[:40], i))
    indices = [i for i, _ in rows]
    whole = indices == list(range(len(indices))) and cols == list(range(len(cols)))
    if claimed and whole and not condensed and (len(indices), len(cols)) != shape:
        return Unreadable("its header claims the shape (%d, %d), but %d rows of %d entries were printed" % (
            shape + (len(indices), len(cols))))
    return Tensor(shape, indices, cols, torch.tensor(grid, dtype=torch.float64))


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False



def agreeing(printed, expected):
    """Entry by entry, whether printed agrees with expected (float64 tensors of one shape):
    within the tolerances; an infinity only with the same infinity; NaN only with NaN."""
    close = (printed - expected).abs() <= ABS_TOL + REL_TOL * expected.abs()
    infinite = torch.isinf(printed) | torch.isinf(expected)
    close = torch.where(infinite, printed == expected, close)
    return close | (torch.isnan(printed) & torch.isnan(expected))


def fill_as_good_as_minus_inf(printed, expected, lowest):
    """Entries where the lesson's masked score is -inf and the lab's is a finite number that
    softmax turns into a weight of exactly 0 all the same: exp(fill - any score) is 0 in
    float32 even for the lowest score (lowest) that is not masked."""
    if lowest is None:
        return torch.zeros_like(printed, dtype=torch.bool)
    candidates = (expected == float("-inf")) & torch.isfinite(printed)
    return candidates & (torch.exp((printed - lowest).float()) == 0)


def lowest_unmasked(expected):
    finite = expected[torch.isfinite(expected)]
    return finite.min().double().item() if finite.numel() else None


def compare(block, expected, name=None, detail=True, e=None):
    """(None, fills) when the printed block agrees with the expected tensor, else (what
    differs, fills); fills are finite numbers in place of -inf that are as good (see
    fill_as_good_as_minus_inf), only for the masked scores. Without detail what differs is
    only "differs"; e, when given, is expected at the printed rows and columns, in float64."""
    want = (expected.shape[0], expected.shape[1])
    if block.shape != want:
        return "shape (%d, %d), expected (%d, %d)" % (block.shape + want), set()
    rows, cols = shown(want[0]), shown(want[1])
    if block.rows != rows or block.cols != cols:
        return "%d numbers printed, %d expected for shape (%d, %d)" % (
            (block.values.numel(), len(rows) * len(cols)) + want), set()
    if e is None:
        e = expected.double()[rows][:, cols]
    p = block.values
    if torch.allclose(p, e, rtol=REL_TOL, atol=ABS_TOL, equal_nan=True):  # the usual answer, fast
        return None, set()
    if not detail and name != "masked scores":
        return "differs", set()
    ok = agreeing(p, e)
    fills = set()
    if name == "masked scores" and not bool(ok.all()):
        filled = ~ok & fill_as_good_as_minus_inf(p, e, lowest_unmasked(expected))
        fills = set(p[filled].tolist())
        ok = ok | filled
    if bool(ok.all()):
        return None, fills
    if not detail:
        return "differs", fills
    wrong = (~ok).nonzero().tolist()
    gap = (p - e).abs().nan_to_num(float("inf"), float("inf"))
    a, b = max(wrong, key=lambda ij: gap[ij[0], ij[1]].item())
    return "shape (%d, %d) as expected; %d of %d printed entries differ; worst at row %d, " \
           "column %d: printed %.9f, expected %.9f" % (want + (len(wrong), p.numel(), rows[a],
                                                              cols[b], p[a, b], e[a, b])), fills


def first_difference(blocks, expected, names=None):
    """(step, tensor, what) of the first printed tensor that does not agree, or None; fills
    as good as -inf are added to the set names.fills when given."""
    for step, name, _ in TENSORS:
        block = blocks[name]
        if block is None:
            return step, name, "was not printed"
        if isinstance(block, Unreadable):
            return step, name, block.why
        problem, fills = compare(block, expected[name], name)
        if names is not None:
            names.update(fills)
        if problem:
            return step, name, problem
    return None


# --- one case ------------------------------------------------------------------------

@dataclass(eq=False)
class Refusal:
    """The tensor a lab stopped on, saying it is not what the lesson's code after its STEP takes
    (exit EXIT_NOT_THE_LESSONS_TENSOR): in which head, at which STEP, which tensor of TENSORS."""
    head: int
    step: int
    name: str


@dataclass(eq=False)
class Verdicts:
    """STEP 7's line as the lab printed it (None: it printed none) and as expected."""
    printed: Optional[str]
    expected: str


@dataclass(eq=False)
class ExitStatus:
    """The lab's exit status and the one expected, when only they differ."""
    status: int
    expected: int


@dataclass(eq=False)
class HeadView:
    """One head of a run of several, as a run of that head alone prints it: its lines and the
    tensors read from them (read_block's, by name)."""
    out: List[str]
    parsed: dict


@dataclass(eq=False)
class SeenRun:
    """What the lab's run did, as the case's result keeps it (from running.Ran): out, its lines
    (several heads: the judged head's, as a run of it alone prints them); whole_out, every line
    (several heads); status; ended, how it ended early (an Ending) or None; timed_out; problem,
    in words; said, its first line on stderr; refused, the tensor it stopped on (a Refusal) or None."""
    out: List[str] = field(default_factory=list)
    status: int = 0
    ended: Optional[Ending] = None
    timed_out: bool = False
    problem: Optional[str] = None
    said: str = ""
    refused: Optional[Refusal] = None
    whole_out: Optional[List[str]] = None


@dataclass(eq=False)
class Judgement:
    """What judge() found: ok; of_head, the head judged (several heads: the first NOT OK); step
    and name, the STEP (an int) and tensor of the first difference; lines, the report's lines;
    later_not_judged, the report says so after its first difference; printed_right, every
    tensor printed agrees with the reference (True, False, or None when not judged); verdicts
    (a Verdicts) or exit (an ExitStatus), where the case went wrong after its numbers; fills,
    finite fills as good as -inf."""
    ok: bool = False
    of_head: int = 0
    step: Optional[int] = None
    name: Optional[str] = None
    lines: List[str] = field(default_factory=list)
    later_not_judged: bool = False
    printed_right: Optional[bool] = None
    verdicts: Optional[Verdicts] = None
    exit: Optional[ExitStatus] = None
    fills: set = field(default_factory=set)


@dataclass(eq=False)
class Evidence:
    """The tensors read from the run, for the diagnosis: parsed, every tensor (read_block's, by
    name); blocks, the same where there is something to explain (else None); heads, a HeadView
    each (several heads)."""
    parsed: dict = field(default_factory=dict)
    blocks: Optional[dict] = None
    heads: Optional[List[HeadView]] = None


@dataclass(eq=False)
class CaseResult:
    """The result of one case, made by judge() alone and read by every front end: text, the
    case; run, what the run did (a SeenRun); judgement, what judge() found (a Judgement);
    evidence, the tensors read (an Evidence)."""
    text: str
    run: SeenRun = field(default_factory=SeenRun)
    judgement: Judgement = field(default_factory=Judgement)
    evidence: Evidence = field(default_factory=Evidence)

    @classmethod
    def of(cls, text, **fields):
        """A result made of named fields, each put in its part (tests build results this way)."""
        parts = {part: {} for part in (SeenRun, Judgement, Evidence)}
        for name, value in fields.items():
            part = next((p for p in parts if name in p.__dataclass_fields__), None)
            if part is None:
                raise TypeError("CaseResult has no field %r" % name)
            parts[part][name] = value
        return cls(text, SeenRun(**parts[SeenRun]), Judgement(**parts[Judgement]), Evidence(**parts[Evidence]))


def expected_of(case, of_head=0):
    return reference_attention.attention(case.seed, case.tokens, case.embed, case.head,
                                         scale=case.scale, mask=case.mask, heads=case.heads,
                                         of_head=of_head, leak=case.leak)


def wanted_exit(case):
    """The lesson's exit status for a case: 1 when STEP 7 fails in any head."""
    heads = [expected_of(case, h) for h in range(case.heads)]
    return 0 if all(e["sums_ok"] and e["causal_ok"] for e in heads) else 1


def head_views(lines, heads):
    """A run of several heads as each head's run would print it alone: STEP 1's lines, then the
    head's own, from its "HEAD h of N" line to the next head's (or STEP 8). A head whose line
    is missing gets STEP 1's lines alone."""
    starts = [next((i for i, line in enumerate(lines) if line == "HEAD %d of %d" % (h, heads)), None)
              for h in range(heads)]
    prefix = lines[:min([s for s in starts if s is not None], default=len(lines))]
    views = []
    for start in starts:
        end = start is not None and next((i for i in range(start + 1, len(lines))
                                          if lines[i].startswith(("HEAD ", "STEP 8"))), len(lines))
        views.append(prefix + (lines[start + 1:end] if start is not None else []))
    return views


def judge(case, run):
    """The CaseResult of one case (a cases.Case) from its run (a running.Ran).
    With several heads, each head is judged as a run of its own, and the result is the first
    head's that is NOT OK (of_head says which), with every head's lines and tensors in heads;
    when all are OK, STEP 8 (the heads side by side, projected) is judged too."""
    if case.heads == 1:
        return judge_head(case, run, run.lines, 0)
    views = [judge_head(case, run, lines, h) for h, lines in enumerate(head_views(run.lines, case.heads))]
    if run.ended:  # where it stopped: the first head that went wrong, else the last it reached
        wrong = [v for v in views if v.judgement.printed_right is False]
        reached = [v for v in views if any(isinstance(b, Tensor) and n != "x" for n, b in v.evidence.parsed.items())]
        result = (wrong[:1] or reached[-1:] or views)[0]
    else:
        # the head whose printed numbers differ first; else the first head NOT OK (by the run's
        # exit status, which another head may have caused, or by what it never printed)
        wrong = [v for v in views if not v.judgement.ok]
        differ = [v for v in wrong if v.judgement.name and isinstance(v.evidence.parsed.get(v.judgement.name), Tensor)]
        result = min(differ, key=lambda v: v.judgement.step) if differ else (wrong or views)[0]
    result.evidence.heads = [HeadView(v.run.out, v.evidence.parsed) for v in views]
    result.run.whole_out = run.lines
    if not run.ended and all(v.judgement.ok or (v.judgement.step == 7 and v.judgement.exit) for v in views):
        judge_step_8(case, run, result.judgement)  # before the exit status: a wrong STEP 8 is its cause
    return result


def judge_step_8(case, run, judged):
    """With several heads: the heads' outputs side by side and proj's, against the reference
    (judged: the result's Judgement, changed where they differ)."""
    expected = expected_of(case)
    for name, header in (("joined", "    heads side by side, shape"), ("projected", "    projected, shape")):
        block = read_block(run.lines, header)
        problem = ("was not printed" if block is None else block.why if isinstance(block, Unreadable)
                   else compare(block, expected[name])[0])
        if problem:
            judged.ok, judged.step, judged.name = False, 8, name
            judged.lines = ["STEP 8: %s: %s" % (name, problem), "command: " + " ".join(run.command)]
            return


def judge_head(case, run, out, of_head):
    """judge() for one head, whose lines (as a run of that head alone prints them) are out."""
    seen = SeenRun(out=out, status=run.status, ended=run.ended, timed_out=run.timed_out, problem=run.problem,
                   said=said_line(run.err), refused=refusal(run))
    blocks = {name: read_block(out, header) for _, name, header in TENSORS}
    judged = judge_blocks(case, run, seen, blocks, of_head)
    if not judged.ok:
        judged.lines.append("command: " + " ".join(run.command))
    # something to explain: a tensor printed (a run that stopped early keeps none for the diagnosis)
    explain = not run.ended and any(isinstance(b, Tensor) for b in blocks.values())
    return CaseResult(case.text, seen, judged, Evidence(parsed=blocks, blocks=blocks if explain else None))


def judge_blocks(case, run, seen, blocks, of_head):
    """The Judgement of one head's tensors (blocks, by name) and of how its run ended."""
    judged = Judgement(of_head=of_head)
    status, err, said = run.status, run.err, seen.said
    of = " of head %d" % of_head if case.heads > 1 else ""
    if run.ended:
        judged.lines = ["the lab " + run.problem]
        printed = [name for _, name, _ in TENSORS if isinstance(blocks[name], Tensor)]
        if printed:  # what it printed before it stopped: right, or where it went wrong
            # Every tensor may have been printed right before a crash or a time-out: then
            # there is no difference, and what it printed is still judged (grading.py).
            step, name, what = first_difference(blocks, expected_of(case, of_head)) or (None, None, "was not printed")
            judged.printed_right = what == "was not printed"
            judged.lines.append("before it stopped: STEP %s: %s%s: %s" % (step, name, of, what) if what != "was not printed"
                                else "before it stopped, what it printed agrees with the reference, up to %s%s"
                                % (printed[-1], of))
        return judged
    expected = expected_of(case, of_head)
    diff = first_difference(blocks, expected, judged.fills)
    refused = seen.refused if seen.refused and seen.refused.head == of_head else None
    if refused and (diff is None or (order(diff[1]) >= order(refused.name) and not isinstance(blocks[diff[1]], Tensor))):
        # What it printed is right, and then it stopped on a tensor of the wrong kind.
        judged.step, judged.name, judged.printed_right = refused.step, refused.name, True
        judged.lines = ["STEP %s: %s%s: %s, and the lab stopped there (exit %d): %s" % (
            refused.step, refused.name, of, "its numbers are right" if isinstance(blocks[refused.name], Tensor)
            else "not printed", status, said)]
    elif diff and diff[2] == "was not printed" and blank_step(seen.out):
        # a starter's blank: the run stops at its TODO, before the step's tensor
        blank = blank_step(seen.out)
        judged.step, judged.name, judged.printed_right = blank, diff[1], None
        judged.lines = ["STEP %d: not written yet: the run stops at its TODO(STEP %d) (exit %d)" % (blank, blank, status)]
    elif diff:
        step, name, what = diff
        judged.step, judged.name = step, name
        judged.lines = ["STEP %s: %s%s: %s" % (step, name, of, what)]
        judged.later_not_judged = True  # a report says so after that line (verdict.case_lines)
        if what == "was not printed" and status not in (0, 1):
            judged.lines.append("the lab exited %d%s" % (status, ": " + said if err else ""))
    else:
        judged.printed_right = True
        verdict = verdict_line(expected["sums_ok"], expected["causal_ok"])
        want_exit = wanted_exit(case)
        if seen.refused:
            want_exit = status  # another head stopped the run, on a tensor of its own
        if verdict not in seen.out:
            got = [line for line in seen.out if line.startswith("STEP 7")]
            judged.step = 7
            judged.lines = ["STEP 7%s: printed %r, expected %r" % (of, got[0][:120] if got else "no STEP 7 line", verdict)]
            judged.verdicts = Verdicts(got[0] if got else None, verdict)
        elif status != want_exit:
            judged.step = 7
            judged.lines = ["STEP 7: exit status %d, expected %d%s" % (status, want_exit, " (stderr: %s)" % said if err else "")]
            judged.exit = ExitStatus(status, want_exit)
        else:
            judged.ok = True
    return judged


def said_line(err):
    """The first line the lab wrote on stderr, without its program's name, as a report shows
    it (at most 300 characters); "" when it wrote none."""
    line = err.strip().splitlines()[0] if err.strip() else ""
    return cases.printable(line[len("lab04_attention: "):] if line.startswith("lab04_attention: ") else line)[:300]


# The line the lab writes when it stops on a tensor the lesson's code cannot take (exit
# EXIT_NOT_THE_LESSONS_TENSOR): "lab04_attention: STEP N: VARIABLE is ..." or "... has no
# value ...". Its STEP and variable name the tensor of TENSORS. Labs handed out before this
# lab named the head there too ("head H: STEP N: ..."); now the head is the last one the run
# announced on stdout ("HEAD h of N"), which the lab flushes before it writes the line.
REFUSED = re.compile(r"^lab04_attention: (?:head (\d+): )?STEP (\d): (\w+) (?:is|has no value)")
ANNOUNCED = re.compile(r"^HEAD (\d+) of \d+$")
VARIABLES = {(1, "x"): "x", (2, "q"): "q", (2, "k"): "k", (2, "v"): "v", (3, "scores"): "scores",
             (4, "scores"): "masked scores", (5, "weights"): "weights", (6, "out"): "out"}


def refusal(run):
    """The tensor the lab stopped on, a Refusal, when it exited with EXIT_NOT_THE_LESSONS_TENSOR
    and said which; else None."""
    m = REFUSED.match(run.err.strip()) if run.status == cases.EXIT_NOT_THE_LESSONS_TENSOR and run.err else None
    name = m and VARIABLES.get((int(m.group(2)), m.group(3)))
    if not name:
        return None
    announced = [int(a.group(1)) for line in run.lines for a in [ANNOUNCED.match(line)] if a]
    head = int(m.group(1)) if m.group(1) else (announced[-1] if announced else 0)
    return Refusal(head, int(m.group(2)), name)


def order(name):
    """Where a tensor comes in the lesson (TENSORS)."""
    return [n for _, n, _ in TENSORS].index(name)


def verdict_line(sums_ok, causal_ok):
    """STEP 7's line as the lab prints it, for these two checks."""
    yes = lambda ok: "YES" if ok else "NO"
    return "STEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s" % (yes(sums_ok), yes(causal_ok))


def fused_disagrees(lines):
    """Whether the lab said that LibTorch's fused attention disagrees with its heads (it
    checks that with --verbose, which the checker's runs pass): then it exits 1 however STEP
    7's two checks came out."""
    return any(line.startswith("LibTorch's fused attention disagrees") for line in lines)


def first_blank(results):
    """The first STEP a starter's runs (CaseResults) stopped at, not written yet (an int), or None."""
    return min((b for b in (blank_step(r.run.out) for r in results) if b), default=None)


def blank_step(lines):
    """The STEP a starter's run stopped at, "not written yet" (an int), or None."""
    return min((int(m.group(1)) for line in lines for m in [re.match(r"^STEP (\d): not written yet", line)] if m),
               default=None)


def fill_note(fills):
    shown_fills = ", ".join("%g" % f for f in sorted(fills)[:3])
    return ("note: the lab fills the future with %s where the lesson uses -inf; softmax gives "
            "both a weight of exactly 0 here, so the numbers agree. The lesson uses -inf because "
            "it gives 0 for scores of any size, and a printout shows plainly what is masked."
            % shown_fills)
