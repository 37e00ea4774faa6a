"""--heads N prints what the Python lab with gpt.py's MultiHeadAttention prints, and one head
prints what the lab printed before heads existed.

usage: several_heads_test.py [--memo DIR] [--report REPORT BUILT] LAB [FUSED_MUTANT]

  --memo        keep the reference's outputs in DIR (lab04/checker/memo.py, keyed by
                several_heads_lab.py, the checker and torch): a run of the test that finds
                them there does not load torch

  --report      the checker's report (check_lab.py --report) and the lab's program: when the
                report is newer than the program and says NOT OK, the numbers are known to be
                wrong, and the test says SKIPPED (one mistake, one failed test: the checker's)

  LAB           the lab (or the tests' client of it)
  FUSED_MUTANT  optional: a lab whose STEP 3 is wrong (it scales by sqrt(C)); with several
                heads its fused-attention line must disagree, and it must exit 1

Against several_heads_lab.py (an independent reference written from the Python lab and
gpt.py, not from the C++ lab): every line the lab prints at --digits 9 --verbose, for seeds,
sizes and head counts of its own, with and without the scale and the mask, and the exit
status. --heads 1 against the same run without --heads: the same bytes on stdout and stderr,
the same exit status. Prints OK or NOT OK for each, with the first line that differs.
"""
import os
import subprocess
import sys

import checklist
import project  # puts checker/ on the path

from lab04.checker import memo  # noqa: E402

REFERENCE = os.path.join(project.ROOT, "tests", "several_heads_lab.py")

# (seed, tokens, embed, head or None for C/N, heads, options)
CASES = [(3, 4, 6, None, 2, ()), (7, 5, 12, None, 3, ()), (11, 20, 16, 4, 4, ()),
         (0, 1, 4, None, 4, ()), (5, 9, 8, None, 2, ("no-scale",)), (42, 3, 6, 2, 3, ()),
         (3, 4, 6, 6, 1, ()), (1234, 17, 32, None, 16, ()), (9, 6, 10, 7, 2, ("no-scale",))]
# Runs that must not change when --heads 1 is added.
ONE_HEAD = [[], ["--verbose", "--digits", "9"], ["-T", "20", "--heatmap"], ["--no-mask"], ["-C", "12"],
            ["--seed", "8", "-T", "7", "-C", "5", "--head", "3", "--no-scale", "--digits", "4"]]


class Reference:
    """several_heads_lab.lab_output, whose outputs are kept in a memo folder (None: none)."""

    def __init__(self, folder):
        self.kept = memo.Memo(folder)
        with open(REFERENCE, "rb") as f:
            self.source = f.read()

    def output(self, *args, **options):
        key = self.kept.key("several_heads_lab", self.source, repr(args), repr(sorted(options.items())))
        found = self.kept.get(key, lambda v: isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
                              and isinstance(v[1], int))
        if found is None:
            from several_heads_lab import lab_output  # loads torch
            found = list(lab_output(*args, **options))
            self.kept.put(key, found)
        return found[0], found[1]


def reference_of(reference, args):
    """What the Python lab prints for these options of one head (no --heatmap): its defaults
    are the seed's, and HEAD stays 6 whatever C is."""
    o = dict(seed=3, tokens=4, embed=6, head=6, heads=1, digits=2, verbose=False, scale=True, mask=True)
    names = {"--seed": "seed", "-T": "tokens", "-C": "embed", "--head": "head", "--digits": "digits"}
    words = iter(args)
    for w in words:
        if w in names:
            o[names[w]] = int(next(words))
        else:
            o[{"--verbose": "verbose", "--no-scale": "scale", "--no-mask": "mask"}[w]] = w == "--verbose"
    return reference.output(**o)


def run(lab, args):
    done = subprocess.run([lab] + args, capture_output=True, text=True)
    return done.stdout, done.stderr, done.returncode


def first_difference(got, want):
    a, b = got.splitlines(), want.splitlines()
    for n, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "line %d: got %r, expected %r" % (n + 1, x, y)
    return "got %d lines, expected %d" % (len(a), len(b))


def numbers_known_wrong(report, built):
    """As skip_if_numbers_wrong.cmake decides it for the output tests."""
    if not os.path.exists(report) or not os.path.exists(built) or os.path.getmtime(report) <= os.path.getmtime(built):
        return False
    with open(report, errors="replace") as f:
        return f.readline().rstrip("\n") == "NOT OK"


def main(argv):
    folder = None
    if argv[:1] == ["--memo"] and len(argv) >= 2:
        folder, argv = argv[1], argv[2:]
    if argv[:1] == ["--report"] and len(argv) >= 3:
        if numbers_known_wrong(argv[1], argv[2]):
            print("SKIPPED: needs right numbers, and the checker found this lab's wrong: see the test "
                  "every_step_of_the_lab_matches_the_reference_in_every_case, or " + argv[1])
            return 0
        argv = argv[3:]
    if len(argv) not in (1, 2) or not all(os.access(a, os.X_OK) for a in argv):
        print("several_heads_test: usage: several_heads_test.py LAB [FUSED_MUTANT]", file=sys.stderr)
        return 2
    lab = argv[0]
    reference = Reference(folder)
    checks = []
    for seed, tokens, embed, head, heads, options in CASES:
        size = head or embed // heads
        args = ["--seed", str(seed), "-T", str(tokens), "-C", str(embed), "--heads", str(heads),
                "--digits", "9", "--verbose"] + (["--head", str(head)] if head else []) + ["--" + o for o in options]
        out, err, status = run(lab, args)
        want, want_status = reference.output(seed, tokens, embed, size, heads, 9, True, "no-scale" not in options)
        checks.append(("%s prints every number of the Python reference, and exits %d" % (" ".join(args), want_status),
                       out == want and status == want_status and not err,
                       first_difference(out, want) + "; exit %d; stderr %r" % (status, err[:200])))

    # The mask off: STEP 7 fails in every head, and stderr names each; nothing after the heads.
    args = ["--heads", "2", "--no-mask", "--digits", "9", "--verbose"]
    out, err, status = run(lab, args)
    want, _ = reference.output(3, 4, 6, 3, 2, 9, True, True, False)
    named = err.splitlines() == ["lab04_attention: head %d: check (b) failed: a token puts weight on a later "
                                 "token, so it sees the future" % h for h in (0, 1)]
    checks.append(("%s fails STEP 7 in each head, naming it on stderr, and exits 1" % " ".join(args),
                   out == want and status == 1 and named,
                   first_difference(out, want) + "; exit %d; stderr %r" % (status, err[:300])))

    for args in ONE_HEAD:
        before, with_one = run(lab, args), run(lab, args + ["--heads", "1"])
        checks.append(("--heads 1 %s: the same stdout, stderr and exit status as without --heads" % " ".join(args),
                       with_one == before, first_difference(with_one[0], before[0])
                       + "; exit %d against %d" % (with_one[2], before[2])))
        if "--heatmap" not in args:
            want, want_status = reference_of(reference, args)
            checks.append(("%s (one head) prints what the Python lab prints" % (" ".join(args) or "the default run"),
                           before[0] == want and before[2] == want_status, first_difference(before[0], want)))

    if len(argv) == 2:
        out, err, status = run(argv[1], ["--heads", "2", "-C", "12"])
        fused = [l for l in out.splitlines() if l.startswith("LibTorch's fused attention")]
        checks.append(("a lab whose STEP 3 scales by sqrt(C) is caught by the fused attention: its line "
                       "disagrees, stderr says so and it exits 1",
                       status == 1 and len(fused) == 1 and "disagrees" in fused[0]
                       and "fused attention" in err and "You just computed" not in out,
                       "exit %d; its line %r; stderr %r" % (status, fused, err[:200])))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
