#!/usr/bin/env python3
"""check_lab.py: checks a build of the lab step by step, and names a known mistake.

usage: check_lab.py [--timeout SECONDS] LAB [CASE ...]
  LAB   a lab04_attention binary: the course's, or a student's edit of it
  CASE  seed,tokens,embed,head, then optionally ,no-scale and/or ,no-mask
        (default: the cases in DEFAULT_CASES)

For each case the lab runs with --digits 9 --verbose, and what it prints is compared, in the
order of the lesson, with reference_attention.py: x (STEP 1); q, k, v (STEP 2); the scores
(STEP 3); the masked scores (STEP 4); the weights (STEP 5); the output (STEP 6); then the
STEP 7 verdicts and the exit status. A case is OK, or NOT OK with the FIRST step that
differs; later steps follow from it and are not judged. Then every known mistake in
mistakes.py is recomputed, and when exactly one of them explains every number the lab
printed, in every case, a "diagnosis:" line names it and says what to change.

Exit status: 0 every case OK; 1 some case NOT OK; 2 bad arguments, a lab that cannot be
run, or no Python here that can import torch; 3 an error of the checker's own.
"""
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys

DEFAULT_CASES = ["3,4,6,6", "7,5,8,3", "42,20,12,4", "0,1,1,1", "11,20,6,9,no-scale",
                 "3,4,6,6,no-mask"]
TIMEOUT = 60.0  # seconds one run of the lab may take (a 4096-token lab takes about 1 s)
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
    """The tensor printed after the line starting with header: (shape or None, {(i, j): value}),
    None when no such line, or an error text for a line that cannot be read."""
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
                return "cannot read the line %r" % line
            break
        rows.append((int(m.group(1)), m.group(2).split(", ")))
    if not rows:
        return "no rows printed after %r" % lines[start]
    if shape is None:  # the weights: T rows; columns as printed, or T when condensed
        n = rows[-1][0] + 1
        shape = (n, n if "..." in rows[-1][1] else len(rows[-1][1]))
    values = {}
    for i, cells in rows:
        cut = cells.index("...") if "..." in cells else len(cells)
        columns = list(range(cut)) + [shape[1] - len(cells) + cut + 1 + k
                                      for k in range(len(cells) - cut - 1)]
        for j, text in zip(columns, cells[:cut] + cells[cut + 1:]):
            try:
                values[(i, j)] = float(text)
            except ValueError:
                return "cannot read the number %r in row t%d" % (text, i)
    return shape, values


def run_lab(lab, case, timeout):
    """Runs the lab on one case: (command, exit status or None, stdout lines, stderr, problem)."""
    cmd = [lab, "--seed", str(case["seed"]), "-T", str(case["tokens"]), "-C", str(case["embed"]),
           "--head", str(case["head"]), "--digits", "9", "--verbose"]
    cmd += [] if case["scale"] else ["--no-scale"]
    cmd += [] if case["mask"] else ["--no-mask"]
    try:
        run = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace").splitlines()
        return cmd, None, out, "", "did not finish within %g s and was stopped%s" % (
            timeout, last_step(out))
    except OSError as e:
        return cmd, None, [], "", "could not be started: %s" % e.strerror
    out = run.stdout.decode("utf-8", "replace").splitlines()
    err = run.stderr.decode("utf-8", "replace").strip()
    problem = None
    if run.returncode < 0:
        try:
            name = signal.Signals(-run.returncode).name
        except ValueError:
            name = "signal %d" % -run.returncode
        problem = "crashed with %s%s" % (name, last_step(out))
    elif not out:
        problem = "printed nothing (exit %d%s)" % (run.returncode, ", stderr: " + err.splitlines()[0] if err else "")
    return cmd, run.returncode, out, err, problem


def last_step(lines):
    steps = [line for line in lines if line.startswith("STEP ")]
    return "; the last STEP line it printed: %r" % steps[-1] if steps else "; it printed no STEP line"


# --- comparing --------------------------------------------------------------------------

def agree(printed, expected):
    if printed != printed or expected != expected:  # NaN: only another NaN agrees
        return printed != printed and expected != expected
    if printed in (float("inf"), float("-inf")) or expected in (float("inf"), float("-inf")):
        return printed == expected
    return abs(printed - expected) <= ABS_TOL + REL_TOL * abs(expected)


def compare(block, expected):
    """None when the printed block agrees with the expected tensor, else what differs."""
    want = (expected.shape[0], expected.shape[1])
    shape, values = block
    if shape != want:
        return "shape (%d, %d), expected (%d, %d)" % (shape + want)
    cells = [(i, j) for i in shown(want[0]) for j in shown(want[1])]
    if set(values) != set(cells):
        return "%d numbers printed, %d expected for shape (%d, %d)" % ((len(values), len(cells)) + want)
    wrong, worst = [], None
    for i, j in cells:
        e = float("%.9f" % expected[i, j].item())  # the reference rounded as the lab rounds
        p = values[(i, j)]
        if not agree(p, e):
            wrong.append((i, j))
            gap = abs(p - e) if p == p and e == e and abs(p - e) != float("inf") else float("inf")
            if worst is None or gap > worst[0]:
                worst = (gap, i, j, p, e)
    if not wrong:
        return None
    _, i, j, p, e = worst
    return "shape (%d, %d) as expected; %d of %d printed entries differ; worst at row %d, " \
           "column %d: printed %.9f, expected %.9f" % (want + (len(wrong), len(cells), i, j, p, e))


def first_difference(blocks, expected):
    """(step, tensor, what) of the first printed tensor that does not agree, or None."""
    for step, name, _ in TENSORS:
        block = blocks[name]
        if block is None:
            return step, name, "was not printed"
        if isinstance(block, str):
            return step, name, block
        problem = compare(block, expected[name])
        if problem:
            return step, name, problem
    return None


def explains(blocks, predicted):
    """Whether every tensor the lab printed agrees with a (mistaken) computation."""
    return all(not isinstance(blocks[name], str) and (blocks[name] is None or compare(blocks[name], predicted[name]) is None)
               for _, name, _ in TENSORS)


# --- one case, then all ---------------------------------------------------------------

def check_case(lab, text, timeout, mistakes):
    """Checks one case; returns {"ok", "lines" (the report), "step", "fits" (the ids of the
    known mistakes that explain this case's numbers, or None when it tells nothing)}."""
    import reference_attention
    case = parse_case(text)
    cmd, status, out, err, problem = run_lab(lab, case, timeout)
    result = {"ok": False, "step": None, "fits": None, "lines": []}
    if problem:
        result["lines"] = ["the lab " + problem]
    else:
        blocks = {name: read_block(out, header) for _, name, header in TENSORS}
        args = (case["seed"], case["tokens"], case["embed"], case["head"])
        expected = reference_attention.attention(*args, scale=case["scale"], mask=case["mask"])
        diff = first_difference(blocks, expected)
        if diff:
            step, name, what = diff
            result["step"] = step
            result["lines"] = ["STEP %s: %s: %s" % (step, name, what),
                               "later steps are not judged: they follow from this one"]
            if what == "was not printed" and status not in (0, 1):
                result["lines"].append("the lab exited %d%s" % (status, ": " + err.splitlines()[0] if err else ""))
        else:
            yes = lambda ok: "YES" if ok else "NO"
            verdict = "STEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s" % (
                yes(expected["sums_ok"]), yes(expected["causal_ok"]))
            want_exit = 0 if expected["sums_ok"] and expected["causal_ok"] else 1
            if verdict not in out:
                got = [line for line in out if line.startswith("STEP 7")]
                result["step"] = "7"
                result["lines"] = ["STEP 7: printed %r, expected %r" % (got[0] if got else "no STEP 7 line", verdict)]
            elif status != want_exit:
                result["step"] = "7"
                result["lines"] = ["STEP 7: exit status %d, expected %d%s" % (status, want_exit, " (stderr: %s)" % err.splitlines()[0] if err else "")]
            else:
                result["ok"] = True
        if any(block is not None for block in blocks.values()):  # something to explain
            result["fits"] = {m["id"] for m in mistakes
                              if explains(blocks, reference_attention.attention(*args, scale=case["scale"], mask=case["mask"], mistake=m))}
    if not result["ok"]:
        result["lines"].append("command: " + " ".join(cmd))
    return result


def check(lab, cases, timeout=TIMEOUT, echo=print):
    """Checks every case and prints the report; returns (all OK, results, diagnosed id or None)."""
    from mistakes import MISTAKES
    results = []
    for text in cases:
        r = check_case(lab, text, timeout, MISTAKES)
        echo("%s  %s" % ("OK    " if r["ok"] else "NOT OK", text))
        for line in r["lines"]:
            echo("        " + line)
        results.append((text, r))
    diagnosed = None
    if not all(r["ok"] for _, r in results):
        fits = [r["fits"] for _, r in results if r["fits"] is not None]
        common = set.intersection(*fits) if fits else set()
        if len(common) == 1:
            diagnosed = common.pop()
            m = next(m for m in MISTAKES if m["id"] == diagnosed)
            echo("diagnosis: %s, %s" % (m["did"], m["fix"]))
        elif common:
            echo("diagnosis: no known mistake matches: %d of them fit these numbers equally (%s)"
                 % (len(common), ", ".join(sorted(common))))
        else:
            echo("diagnosis: no known mistake matches; start from the first STEP reported above")
    passed = sum(1 for _, r in results if r["ok"])
    echo("%d passed, %d failed" % (passed, len(results) - passed))
    return passed == len(results), results, diagnosed


# --- the command ---------------------------------------------------------------------

def python_with_torch():
    """Re-runs this script under a Python that can import torch, if this one cannot: the
    python3 first on PATH may be a pyenv build that does not see Debian's python3-torch."""
    if importlib.util.find_spec("torch") is not None:
        return
    if os.environ.get("CHECK_LAB_SEARCHED") != "1":
        os.environ["CHECK_LAB_SEARCHED"] = "1"
        for candidate in (os.environ.get("LAB_PYTHON"), "/usr/bin/python3", "python3", "python"):
            path = shutil.which(candidate) if candidate else None
            if path and os.path.realpath(path) != os.path.realpath(sys.executable):
                probe = subprocess.run([path, "-c", "import torch"], capture_output=True)
                if probe.returncode == 0:
                    os.execv(path, [path] + sys.argv)
    raise Usage("no Python here can import torch: install python3-torch (Debian), "
                "or name one in LAB_PYTHON")


def parse_args(argv):
    timeout = TIMEOUT
    if argv[:1] == ["--timeout"]:
        try:
            timeout = float(argv[1])
            assert 0 < timeout <= 3600
        except (IndexError, ValueError, AssertionError):
            raise Usage("--timeout takes a number of seconds from 0 to 3600")
        argv = argv[2:]
    if not argv or argv[0].startswith("-"):
        raise Usage("usage: check_lab.py [--timeout SECONDS] LAB [CASE ...] (see the top of the file)")
    lab, cases = argv[0], argv[1:] or DEFAULT_CASES
    if not os.path.isfile(lab):
        raise Usage("no lab at %r: give the path of a built lab04_attention" % lab)
    if not os.access(lab, os.X_OK):
        raise Usage("%r is not executable: give the path of a built lab04_attention" % lab)
    for case in cases:
        parse_case(case)
    return os.path.abspath(lab), cases, timeout


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # "| head" ends the checker quietly
    try:
        lab, cases, timeout = parse_args(argv)
        python_with_torch()
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch
        print("check_lab: %s against the reference (%s, torch %s)" % (lab, sys.executable, torch.__version__))
        ok, _, _ = check(lab, cases, timeout)
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
    sys.exit(main(sys.argv[1:]))
