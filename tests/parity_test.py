"""Parity test: the lab's weights and output against the Python reference.

usage: parity_test.py LAB CASE [CASE ...]
  CASE is seed,tokens,embed,head optionally followed by ,no-scale and/or ,no-mask

For each case the lab runs with --digits 9 --verbose. Every weight it prints in
STEP 3-5 and every number of the "out" tensor must match reference_attention.py
within TOLERANCE, the STEP 7 line must give the reference's verdicts, and the
exit status must be 0 when both checks hold and 1 otherwise. Prints OK or NOT OK
with the largest difference for each case; exits 1 if any case is NOT OK.
"""
import re
import subprocess
import sys

import torch

from reference_attention import attention

TOLERANCE = 1e-6  # the same LibTorch gives 0; this leaves room for another BLAS
SHOW_ALL, SHOW_ENDS = 16, 8  # the lab condenses matrices past 16 rows or columns


def parse_rows(lines, indent):
    """{(row, col): value} from lines "<indent>t<i>: [a, b, ..., y, z]" (a condensed row
    keeps its first and last columns around "...")."""
    pattern = re.compile("^" + indent + r"t(\d+): \[(.*)\]$")
    values = {}
    for line in lines:
        m = pattern.match(line)
        if not m:
            break
        row = int(m.group(1))
        cells = m.group(2).split(", ")
        cut = cells.index("...") if "..." in cells else len(cells)
        for j, text in enumerate(cells[:cut]):
            values[(row, j)] = float(text)
        for j, text in enumerate(reversed(cells[cut + 1:])):
            values[(row, -1 - j)] = float(text)
    return values


def block_after(lines, header, indent):
    for n, line in enumerate(lines):
        if line.startswith(header):
            body = [l for l in lines[n + 1:] if "rows not shown" not in l]
            return parse_rows(body, indent)
    return {}


def shown(n):
    return min(n, SHOW_ALL)


def compare(name, printed, expected, problems):
    """Largest difference between the printed entries and the reference tensor."""
    rows, cols = expected.shape
    if len(printed) != shown(rows) * shown(cols):
        problems.append("%s: %d numbers printed, %d expected" % (name, len(printed), shown(rows) * shown(cols)))
    worst = 0.0
    for (i, j), value in printed.items():
        # against the reference rounded as the lab rounds: 0 when the floats are the same
        worst = max(worst, abs(value - float("%.9f" % expected[i, j].item())))
    if worst > TOLERANCE:
        problems.append("%s differs from the reference by up to %.3g" % (name, worst))
    return worst


def run_case(lab, case):
    fields = case.split(",")
    seed, tokens, embed, head = (int(f) for f in fields[:4])
    flags = ["--" + f for f in fields[4:]]
    ref = attention(seed, tokens, embed, head, scale="--no-scale" not in flags, mask="--no-mask" not in flags)
    cmd = [lab, "--seed", str(seed), "-T", str(tokens), "-C", str(embed), "--head", str(head),
           "--digits", "9", "--verbose"] + flags
    run = subprocess.run(cmd, capture_output=True, text=True)
    lines = run.stdout.splitlines()
    problems = []
    worst = max(compare("weights", block_after(lines, "STEP 3-5", "  "), ref["weights"], problems),
                compare("out", block_after(lines, "    out, shape", "      "), ref["out"], problems))
    yes = lambda ok: "YES" if ok else "NO"
    verdict = "STEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s" % (
        yes(ref["sums_ok"]), yes(ref["causal_ok"]))
    if verdict not in lines:
        problems.append("expected the line %r" % verdict)
    want_exit = 0 if ref["sums_ok"] and ref["causal_ok"] else 1
    if run.returncode != want_exit:
        problems.append("exit status %d, expected %d (stderr: %s)" % (run.returncode, want_exit, run.stderr.strip()))
    print("%s  %-28s max difference %.3g" % ("OK    " if not problems else "NOT OK", case, worst))
    for p in problems:
        print("        " + p)
    if problems:
        print("        command: " + " ".join(cmd))
    return not problems


def main():
    lab, cases = sys.argv[1], sys.argv[2:]
    print("reference: %s, torch %s" % (sys.executable, torch.__version__))
    results = [run_case(lab, case) for case in cases]
    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if cases and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
