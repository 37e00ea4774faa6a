#!/usr/bin/env python3
"""check_lab.py: checks a build of the lab step by step, and names a known mistake.

usage: check_lab.py [--timeout SECONDS] [--report FILE] LAB [CASE ...]
       check_lab.py --grade [--points P1,...,P7] [--step N] [--gradescope FILE] LAB [CASE ...]
  LAB   a lab04_attention binary: the course's, or a student's edit of it
  CASE  seed,tokens,embed,head, then optionally ,no-scale and/or ,no-mask
        (default: the cases in DEFAULT_CASES, or GRADE_CASES with --grade)
  --timeout SECONDS  how long one run of the lab may take (default 60)
  --report FILE      also write the report to FILE; its first line is OK or NOT OK (the
                     tests read it to skip those that need right numbers)
  --grade            a grade instead: each STEP judged on the lab's own printed inputs
                     (grading.py), its points earned when it is right in every case
  --points P1,...,P7 the points of STEP 1 to 7 (default 1 each)
  --step N           exit 0 only when STEP N earned its points
  --gradescope FILE  also write Gradescope's results.json

For each case the lab runs with --digits 9 --verbose, and what it prints is compared, in the
order of the lesson, with reference_attention.py: x (STEP 1); q, k, v (STEP 2); the scores
(STEP 3); the masked scores (STEP 4); the weights (STEP 5); the output (STEP 6); then the
STEP 7 verdicts and the exit status. A case is OK, or NOT OK with the FIRST step that
differs; later steps follow from it and are not judged. A future filled with a finite number
that softmax turns into a weight of exactly 0 (-1e9, say) is as good as -inf: OK, with a note.

Then the numbers are explained with the known mistakes of mistakes.py (diagnosis.py):
one mistake that explains every case; else two mistakes that change different things; else
one that explains all but one or two cases; else the one that explains the first differing
step. Where a printed tensor equals another tensor of the lesson, that is said too.

Limits, whatever the lab does: a run that prints more than MAX_STDOUT bytes or takes longer
than the time limit is stopped; after a time-out the remaining cases are not run.

Exit status: 0 every case OK (with --grade: full marks, or STEP N's points with --step);
1 some case NOT OK (points lost); 2 bad arguments, a lab that cannot be run, or no Python
here that can import torch; 3 an error of the checker's own.
"""
import importlib.util
import os
import re
import signal
import subprocess
import sys

import sandbox  # the one way to run a student's lab

DEFAULT_CASES = ["3,4,6,6", "7,5,8,3", "42,20,12,4", "0,1,1,1", "11,20,6,9,no-scale",
                 "3,4,6,6,no-mask"]
TIMEOUT = 60.0  # seconds one run of the lab may take (a 4096-token lab takes about 1 s)
MAX_STDOUT = 4 << 20  # bytes of a run's output kept: the default cases print about 40 kB
MAX_STDERR = 256 << 10
ABS_TOL, REL_TOL = 1e-6, 1e-5  # the same LibTorch agrees exactly; this leaves room for a BLAS
SHOW_ALL, SHOW_ENDS = 16, 8  # the lab condenses a matrix past 16 rows or columns to 8 + 8
MAX_SIZE = 4096  # the lab's largest --tokens, --embed and --head

# The tensors in the order of the lesson: (step, name, header of the block that prints it).
TENSORS = [("1", "x", "    x, shape"), ("2", "q", "    q, shape"), ("2", "k", "    k, shape"),
           ("2", "v", "    v, shape"), ("3", "scores", "    scores before the mask, shape"),
           ("4", "masked scores", "    scores after the mask, shape"),
           ("5", "weights", "STEP 3-5:"), ("6", "out", "    out, shape")]


class Usage(Exception):
    """Bad arguments: one line on stderr, exit 2."""


# --- the case and the lab's output -------------------------------------------------------

def parse_case(text):
    fields = text.split(",")
    try:
        seed, tokens, embed, head = (int(f) for f in fields[:4])
    except ValueError:
        fields = []
    flags = fields[4:]
    if (len(fields) < 4 or seed < 0 or not all(1 <= n <= MAX_SIZE for n in (tokens, embed, head))
            or any(f not in ("no-scale", "no-mask") for f in flags)):
        raise Usage("bad case %r: expected seed,tokens,embed,head (sizes 1 to %d) optionally "
                    "followed by ,no-scale and/or ,no-mask" % (text, MAX_SIZE))
    return {"seed": seed, "tokens": tokens, "embed": embed, "head": head,
            "scale": "no-scale" not in flags, "mask": "no-mask" not in flags}


def shown(n):
    """Indices of n rows (or columns) the lab prints."""
    return list(range(n)) if n <= SHOW_ALL else list(range(SHOW_ENDS)) + list(range(n - SHOW_ENDS, n))


def read_block(lines, header):
    """The tensor printed after the line starting with header, as a dict: shape, rows and
    cols (the indices printed) and values (a float64 tensor, rows x cols); None when no such
    line; or an error text for what cannot be read."""
    import torch
    start = next((n for n, line in enumerate(lines) if line.startswith(header)), None)
    if start is None:
        return None
    m = re.search(r"shape \((\d+), (\d+)\):$", lines[start])
    shape = (int(m.group(1)), int(m.group(2))) if m else None
    indent = "      " if header.startswith(" ") else "  "
    rows = []
    for line in lines[start + 1:]:
        if line.startswith(indent + "... ") and line.endswith("rows not shown ..."):
            continue
        m = re.match("^" + indent + r"t(\d+): \[(.*)\]$", line)
        if not m:
            if line.startswith(indent + "t"):
                return "cannot read the line %r" % line[:80]
            break
        rows.append((int(m.group(1)), m.group(2).split(", ")))
    if not rows:
        return "no rows printed after %r" % lines[start][:80]
    if shape is None:  # the weights: T rows; columns as printed, or T when condensed
        n = rows[-1][0] + 1
        shape = (n, n if "..." in rows[-1][1] else len(rows[-1][1]))
    grid, cols = [], None
    for i, cells in rows:
        cut = cells.index("...") if "..." in cells else len(cells)
        columns = list(range(cut)) + [shape[1] - len(cells) + cut + 1 + k
                                      for k in range(len(cells) - cut - 1)]
        if cols is not None and columns != cols:
            return "row t%d has %d entries, row t%d %d" % (rows[0][0], len(cols), i, len(columns))
        cols = columns
        try:
            grid.append([float(text) for text in cells[:cut] + cells[cut + 1:]])
        except ValueError:
            bad = next(t for t in cells[:cut] + cells[cut + 1:] if not is_number(t))
            return "cannot read the number %r in row t%d" % (bad[:40], i)
    return {"shape": shape, "rows": [i for i, _ in rows], "cols": cols,
            "values": torch.tensor(grid, dtype=torch.float64)}


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def run_lab(lab, case, timeout):
    """Runs the lab on one case: (command, exit status or None, stdout lines, stderr, problem,
    timed_out). At most MAX_STDOUT bytes of output are kept: a lab that prints more, or runs
    past the time limit, is stopped with its whole process group. sandbox.NotStarted when the
    sandbox cannot start it: the grader's failure, never the lab's grade."""
    cmd = [lab, "--seed", str(case["seed"]), "-T", str(case["tokens"]), "-C", str(case["embed"]),
           "--head", str(case["head"]), "--digits", "9", "--verbose"]
    cmd += [] if case["scale"] else ["--no-scale"]
    cmd += [] if case["mask"] else ["--no-mask"]
    # In the sandbox (sandbox.py), whatever the lab tries; with its output line by line
    # (stdbuf), so that a crash or a time-out loses none of what it printed before.
    run = sandbox.for_lab(lab).run(cmd[1:], timeout, MAX_STDOUT, MAX_STDERR)
    if run.stopped == "start":  # the sandbox's failure, not the lab's: no grade at all
        raise sandbox.NotStarted("the sandbox could not start the lab: %s"
                                 % run.err.decode("utf-8", "replace").strip()[:300])
    out, err, status, stopped = run.out, run.err, run.status, run.stopped
    lines = bytes(out[:MAX_STDOUT]).decode("utf-8", "replace").splitlines()
    err = bytes(err[:MAX_STDERR]).decode("utf-8", "replace").strip()
    problem = None
    if stopped == "time":
        problem = "did not finish within %g s and was stopped%s" % (timeout, last_step(lines))
    elif stopped == "size":
        which = "output" if len(out) > MAX_STDOUT else "standard error"
        limit = MAX_STDOUT if which == "output" else MAX_STDERR
        problem = "printed more than %s of %s without finishing and was stopped (a loop that " \
                  "never ends?)%s" % (size_text(limit), which, last_step(lines))
    elif status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        problem = "crashed with %s%s" % (name, last_step(lines))
    elif not lines:
        problem = "printed nothing (exit %d%s)" % (status, ", stderr: " + err.splitlines()[0][:200] if err else "")
    if problem and run.limit:
        problem += " (%s)" % run.limit
    return cmd, status, lines, err, problem, stopped == "time"


def size_text(n):
    return "%d MB" % (n >> 20) if n >= 1 << 20 else "%d kB" % (n >> 10)


def last_step(lines):
    steps = [line for line in lines if line.startswith("STEP ")]
    return "; the last STEP line it printed: %r" % steps[-1][:120] if steps else "; it printed no STEP line"


# --- comparing --------------------------------------------------------------------------

def agreeing(printed, expected):
    """Entry by entry, whether printed agrees with expected (float64 tensors of one shape):
    within the tolerances; an infinity only with the same infinity; NaN only with NaN."""
    import torch
    close = (printed - expected).abs() <= ABS_TOL + REL_TOL * expected.abs()
    infinite = torch.isinf(printed) | torch.isinf(expected)
    close = torch.where(infinite, printed == expected, close)
    return close | (torch.isnan(printed) & torch.isnan(expected))


def fill_as_good_as_minus_inf(printed, expected, lowest):
    """Entries where the lesson's masked score is -inf and the lab's is a finite number that
    softmax turns into a weight of exactly 0 all the same: exp(fill - any score) is 0 in
    float32 even for the lowest score (lowest) that is not masked."""
    import torch
    if lowest is None:
        return torch.zeros_like(printed, dtype=torch.bool)
    candidates = (expected == float("-inf")) & torch.isfinite(printed)
    return candidates & (torch.exp((printed - lowest).float()) == 0)


def lowest_unmasked(expected):
    import torch
    finite = expected[torch.isfinite(expected)]
    return finite.min().double().item() if finite.numel() else None


def compare(block, expected, name=None, detail=True, e=None):
    """(None, fills) when the printed block agrees with the expected tensor, else (what
    differs, fills); fills are finite numbers in place of -inf that are as good (see
    fill_as_good_as_minus_inf), only for the masked scores. Without detail what differs is
    only "differs"; e, when given, is expected at the printed rows and columns, in float64."""
    import torch
    want = (expected.shape[0], expected.shape[1])
    if block["shape"] != want:
        return "shape (%d, %d), expected (%d, %d)" % (block["shape"] + want), set()
    rows, cols = shown(want[0]), shown(want[1])
    if block["rows"] != rows or block["cols"] != cols:
        return "%d numbers printed, %d expected for shape (%d, %d)" % (
            (block["values"].numel(), len(rows) * len(cols)) + want), set()
    if e is None:
        e = expected.double()[rows][:, cols]
    p = block["values"]
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
        if isinstance(block, str):
            return step, name, block
        problem, fills = compare(block, expected[name], name)
        if names is not None:
            names.update(fills)
        if problem:
            return step, name, problem
    return None


# --- one case, then all ---------------------------------------------------------------

def check_case(lab, text, timeout):
    """Checks one case: a dict with text, ok, lines (the report), step and name (of the first
    difference), blocks (what was read, or None), fills (finite fills as good as -inf) and
    timed_out."""
    import reference_attention
    case = parse_case(text)
    cmd, status, out, err, problem, timed_out = run_lab(lab, case, timeout)
    result = {"text": text, "ok": False, "step": None, "name": None, "blocks": None,
              "fills": set(), "lines": [], "timed_out": timed_out, "out": out, "status": status,
              "problem": problem}
    if problem:
        result["lines"] = ["the lab " + problem]
        result["parsed"] = {name: read_block(out, header) for _, name, header in TENSORS}  # for a grade
        printed = [name for _, name, _ in TENSORS if isinstance(result["parsed"][name], dict)]
        if printed:  # what it printed before it stopped: right, or where it went wrong
            args = (case["seed"], case["tokens"], case["embed"], case["head"])
            expected = reference_attention.attention(*args, scale=case["scale"], mask=case["mask"])
            # Every tensor may have been printed right before a crash or a time-out: then
            # there is no difference, and what it printed is still judged (grading.py).
            step, name, what = first_difference(result["parsed"], expected) or (None, None, "was not printed")
            result["lines"].append("before it stopped: STEP %s: %s: %s" % (step, name, what) if what != "was not printed"
                                   else "before it stopped, what it printed agrees with the reference, up to %s"
                                   % printed[-1])
    else:
        blocks = {name: read_block(out, header) for _, name, header in TENSORS}
        args = (case["seed"], case["tokens"], case["embed"], case["head"])
        expected = reference_attention.attention(*args, scale=case["scale"], mask=case["mask"])
        diff = first_difference(blocks, expected, result["fills"])
        if diff:
            step, name, what = diff
            result.update(step=step, name=name)
            result["lines"] = ["STEP %s: %s: %s" % (step, name, what),
                               "later steps are not judged: they follow from this one"]
            if what == "was not printed" and status not in (0, 1):
                result["lines"].append("the lab exited %d%s" % (status, ": " + err.splitlines()[0][:200] if err else ""))
        else:
            yes = lambda ok: "YES" if ok else "NO"
            verdict = "STEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s" % (
                yes(expected["sums_ok"]), yes(expected["causal_ok"]))
            want_exit = 0 if expected["sums_ok"] and expected["causal_ok"] else 1
            if verdict not in out:
                got = [line for line in out if line.startswith("STEP 7")]
                result["step"] = "7"
                result["lines"] = ["STEP 7: printed %r, expected %r" % (got[0][:120] if got else "no STEP 7 line", verdict)]
            elif status != want_exit:
                result["step"] = "7"
                result["lines"] = ["STEP 7: exit status %d, expected %d%s" % (status, want_exit, " (stderr: %s)" % err.splitlines()[0][:200] if err else "")]
            else:
                result["ok"] = True
        result["parsed"] = blocks
        if any(isinstance(b, dict) for b in blocks.values()):  # something to explain
            result["blocks"] = blocks
    if not result["ok"]:
        result["lines"].append("command: " + " ".join(cmd))
    return result


def fill_note(fills):
    shown_fills = ", ".join("%g" % f for f in sorted(fills)[:3])
    return ("note: the lab fills the future with %s where the lesson uses -inf; softmax gives "
            "both a weight of exactly 0 here, so the numbers agree. The lesson uses -inf because "
            "it gives 0 for scores of any size, and a printout shows plainly what is masked."
            % shown_fills)


def check(lab, cases, timeout=TIMEOUT, echo=print):
    """Checks every case and prints the report; returns (all OK, results, diagnosed or None).
    After a case runs out of time the remaining cases are not run: each would wait as long."""
    import diagnosis
    import grading
    from mistakes import MISTAKES
    results = []
    for n, text in enumerate(cases):
        r = check_case(lab, text, timeout)
        echo("%s  %s" % ("OK    " if r["ok"] else "NOT OK", text))
        for line in r["lines"]:
            echo("        " + line)
        results.append((text, r))
        if r["timed_out"] and n + 1 < len(cases):
            echo("NOT RUN %s: the lab ran out of time in case %s, and would again"
                 % (" ".join(cases[n + 1:]), text))
            break
    fills = set().union(*(r["fills"] for _, r in results))
    if fills:
        echo(fill_note(fills))
    diagnosed = None
    if not all(r["ok"] for _, r in results):
        lines, diagnosed = diagnosis.diagnose([r for _, r in results], MISTAKES)
        for line in lines:
            echo(line)
        wrong = grading.steps_wrong_in_themselves([r for _, r in results])
        if wrong:
            echo("wrong in themselves (judged on the lab's own inputs): %s" % ", ".join("STEP %d" % n for n in wrong))
    passed = sum(1 for _, r in results if r["ok"])
    not_run = len(cases) - len(results)
    echo("%d passed, %d failed%s" % (passed, len(results) - passed,
                                     ", %d not run" % not_run if not_run else ""))
    return passed == len(cases), results, diagnosed


# --- the command ---------------------------------------------------------------------

def python_with_torch():
    """Re-runs this script under a Python that can import torch, if this one cannot: the
    python3 first on PATH may be a pyenv build that does not see Debian's python3-torch.
    find_torch_python (beside this file) chooses it, as it does for the tests and bench/run."""
    if importlib.util.find_spec("torch") is not None:
        return
    if os.environ.get("CHECK_LAB_SEARCHED") != "1":
        os.environ["CHECK_LAB_SEARCHED"] = "1"
        found = subprocess.run(["sh", os.path.join(os.path.dirname(os.path.abspath(__file__)), "find_torch_python")],
                               capture_output=True, text=True)
        path = found.stdout.split(" ", 1)[0]
        if found.returncode == 0 and os.path.realpath(path) != os.path.realpath(sys.executable):
            os.execv(path, [path] + sys.argv)
    raise Usage("no Python here can import torch: install python3-torch (Debian), "
                "or name one in LAB_PYTHON")


def parse_args(argv):
    """The command line as a dict: lab, cases, timeout, report, grade, points, step, gradescope."""
    import grading
    args = {"timeout": TIMEOUT, "report": None, "grade": False, "points": [1.0] * 7, "step": None,
            "gradescope": None}
    while argv[:1] and argv[0] in ("--timeout", "--report", "--grade", "--points", "--step", "--gradescope"):
        option, value = argv[0], argv[1] if len(argv) > 1 else None
        if option == "--grade":
            args["grade"] = True
            argv = argv[1:]
            continue
        if option == "--timeout":
            try:
                args["timeout"] = float(value)
                assert 0 < args["timeout"] <= 3600
            except (TypeError, ValueError, AssertionError):
                raise Usage("--timeout takes a number of seconds from 0 to 3600")
        elif option == "--points":
            args["points"] = grading.parse_points(value or "")
        elif option == "--step":
            if value not in [str(n) for n in range(1, 8)]:
                raise Usage("--step takes a STEP number from 1 to 7, not %r" % (value or "")[:20])
            args["step"] = int(value)
        else:  # --report, --gradescope: a file to write
            if not value or os.path.isdir(value) or not os.path.isdir(os.path.dirname(os.path.abspath(value))):
                raise Usage("%s takes the path of a file to write the report to, in a folder that "
                            "exists%s" % (option, ", not %r" % value[:80] if value else ""))
            args[option[2:]] = value
        argv = argv[2:]
    if (args["step"] or args["gradescope"] or args["points"] != [1.0] * 7) and not args["grade"]:
        raise Usage("--points, --step and --gradescope go with --grade")
    if not argv or argv[0].startswith("-"):
        raise Usage("usage: check_lab.py [--timeout SECONDS] [--report FILE] [--grade [--points "
                    "P1,...,P7] [--step N] [--gradescope FILE]] LAB [CASE ...] (see the top of the file)")
    lab, cases = argv[0], argv[1:] or (grading.GRADE_CASES if args["grade"] else DEFAULT_CASES)
    if not os.path.isfile(lab):
        raise Usage("no lab at %r: give the path of a built lab04_attention" % lab)
    if not os.access(lab, os.X_OK):
        raise Usage("%r is not executable: give the path of a built lab04_attention" % lab)
    for case in cases:
        parse_case(case)
    args.update(lab=os.path.abspath(lab), cases=cases)
    return args


def printable(text):
    """Text with its control characters (ESC, BEL, CR, ...: a terminal would obey them) shown
    as \\xNN; tabs and line breaks kept."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: "\\x%02x" % ord(m.group()), text)


def write_report(path, ok, lines):
    """The report in a file, first line OK or NOT OK, written whole or not at all."""
    with open(path + ".new", "w") as f:
        f.write("%s\n%s\n" % ("OK" if ok else "NOT OK", "\n".join(lines)))
    os.replace(path + ".new", path)


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # "| head" ends the checker quietly
    try:
        args = parse_args(argv)
        if args["report"] and os.path.exists(args["report"]):
            os.remove(args["report"])  # no verdict stays behind from an earlier lab
        python_with_torch()
        import torch
        import grading
        try:
            box = sandbox.for_lab(args["lab"])
        except sandbox.Refused as e:
            raise Usage(str(e))
        lines = ["check_lab: %s %s against the reference (%s, torch %s)" % (
            "grading" if args["grade"] else "checking", args["lab"], sys.executable, torch.__version__),
            "check_lab: " + box.isolation]
        print("\n".join(lines), flush=True)

        def echo(line):  # the lab's own text in a line (its stderr, a name) is shown, never obeyed
            line = printable(line)
            lines.append(line)
            print(line, flush=True)
        if args["grade"]:
            score, total, grades, parts = grading.grade(args["lab"], args["cases"], args["timeout"],
                                                        args["points"], echo)
            if args["gradescope"]:
                grading.gradescope_results(score, grades, parts, args["points"], args["gradescope"], box.isolation)
            ok = grades[args["step"]] is None if args["step"] else score == total
        else:
            ok, _, _ = check(args["lab"], args["cases"], args["timeout"], echo)
        if args["report"]:
            write_report(args["report"], ok, lines)
        return 0 if ok else 1
    except Usage as e:
        print("check_lab: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of the checker's own: one line, never a traceback
        print("check_lab: internal error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3


if __name__ == "__main__":
    import check_lab  # one copy of this module: the one that diagnosis.py and grading.py use
    sys.exit(check_lab.main(sys.argv[1:]))
