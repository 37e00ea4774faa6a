"""A diagnosis leads with the slip, in the student's own terms: the line of their lab that did
it and how to write it, where the lab's source is at hand (the watch, --once, the test run,
the class grader), and the catalogue's words, which name the usual line, where it is not.

For each slip below: the lesson with one edit (the student's line), and the numbers such a lab
prints (the catalogue's prediction, as catalogue_test.py simulates a lab; or, for a product
in the wrong order, the lab's own stop: the line it writes, or LibTorch's); the diagnosis's
first words must be the ones given, with the source and without it. Nothing is compiled or
run: the rules are tested in this process, in a second or two.

usage: slips_test.py
"""
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import cases, compare, diagnosis
from catalogue_test import printed, simulated_lab

from lab04.checker.mistakes import MISTAKES

LESSON = open(project.ROOT + "/lab04_attention.cpp", encoding="utf-8").read()
SCALE = "if (opt.scale) scores.mul_(1.0 / std::sqrt(double(HEAD)));"
MASK = "if (opt.mask) scores.masked_fill_(tril.logical_not(), -INFINITY);"
SCORES = "torch::Tensor scores = q.matmul(k.transpose(-2, -1));"
SOFTMAX = "torch::Tensor weights = torch::softmax(scores, /*dim=*/-1);"
TRIL = "const torch::Tensor tril = torch::ones({T, T}, torch::kBool).tril_();"
OUT = "torch::Tensor out = weights.matmul(v);"

# (the slip, the mistakes whose numbers it prints or how the lab stops, the edit: (old, new),
#  the first words with the source, the first words without it)
SLIPS = [
    # the issue's
    ("a scale that ignores --no-scale", ("scale_ignores_no_scale",), (SCALE, SCALE.replace("if (opt.scale) ", "")),
     "your line `scores.mul_(1.0 / std::sqrt(double(HEAD)));` scales the scores with --no-scale too: put it under "
     "if (opt.scale)", "your scale ignores --no-scale"),
    ("scores.mul(...) whose result is dropped", ("no_scale",), (SCALE, SCALE.replace("mul_(", "mul(")),
     "your line `if (opt.scale) scores.mul(1.0 / std::sqrt(double(HEAD)));` returns a new tensor and leaves scores as "
     "they were: write scores.mul_(...)", "STEP 3 left the scores unscaled: a line scores.mul(...)"),
    ("tril_(1)", ("mask_one_diagonal_up",), (TRIL, TRIL.replace("tril_()", "tril_(1)")),
     "your line `%s` keeps one diagonal too many (diagonal 1): write tril_() (diagonal 0)" % TRIL.replace("tril_()",
                                                                                                          "tril_(1)"),
     "tril_(1) (or tril with diagonal 1) keeps one diagonal too many"),
    ("q transposed instead of k", "stops: scores (HEAD, HEAD)", (SCORES, "torch::Tensor scores = q.transpose(-2, -1).matmul(k);"),
     "your line `torch::Tensor scores = q.transpose(-2, -1).matmul(k);` transposes q instead of k: write "
     "q.matmul(k.transpose(-2, -1))", "q was transposed instead of k"),
    ("q times q transposed", ("scores_queries_times_queries",), (SCORES, SCORES.replace("k.transpose", "q.transpose")),
     "your line `torch::Tensor scores = q.matmul(q.transpose(-2, -1));` scores the queries against the queries",
     "q.matmul(q.transpose(-2, -1)) scores the queries against the queries"),
    ("softmax over dimension 0", ("softmax_over_dim_0",), (SOFTMAX, SOFTMAX.replace("-1)", "0)")),
     "your line `torch::Tensor weights = torch::softmax(scores, /*dim=*/0);` makes each column sum to 1",
     "softmax over dimension 0 (torch::softmax(scores, 0)) makes each column sum to 1"),
    ("scores.masked_fill(...) whose result is dropped", ("no_mask",), (MASK, MASK.replace("masked_fill_(", "masked_fill(")),
     "your line `if (opt.mask) scores.masked_fill(tril.logical_not(), -INFINITY);` returns a new tensor",
     "STEP 4 left the future unmasked"),
    ("v times the weights", "LibTorch: shapes", (OUT, "torch::Tensor out = v.matmul(weights);"),
     "your line `torch::Tensor out = v.matmul(weights);` multiplies in the wrong order: write weights.matmul(v)",
     "every number the lab printed is right; then, at STEP 6, LibTorch stopped it"),
    ("scores / ... on a line of its own", ("no_scale",),
     (SCALE, "if (opt.scale) scores / std::sqrt(double(HEAD));"),
     "your line `if (opt.scale) scores / std::sqrt(double(HEAD));` computes a new tensor and drops it: write scores = "
     "scores / std::sqrt(double(HEAD))", "STEP 3 left the scores unscaled"),
    # ten more
    ("1 / HEAD", ("scale_integer_division",), ("1.0 / std::sqrt(double(HEAD))", "1 / HEAD"),
     "your line `if (opt.scale) scores.mul_(1 / HEAD);` divides two integers, which gives 0 in C++",
     "1 / HEAD divides two integers, which gives 0 in C++"),
    ("the future filled with 0", ("mask_filled_with_zero",), (MASK, MASK.replace("-INFINITY", "0")),
     "your line `if (opt.mask) scores.masked_fill_(tril.logical_not(), 0);` fills the future with 0",
     "the future was filled with 0 (masked_fill_(..., 0), or scores.tril(), which zeroes it)"),
    ("scores.tril() for a mask", ("mask_filled_with_zero",), (MASK, "if (opt.mask) scores = scores.tril();"),
     "your line `if (opt.mask) scores = scores.tril();` zeroes the future instead of masking it",
     "the future was filled with 0"),
    ("+INFINITY", ("mask_filled_with_plus_inf",), (MASK, MASK.replace("-INFINITY", "INFINITY")),
     "your line `if (opt.mask) scores.masked_fill_(tril.logical_not(), INFINITY);` fills the future with +inf",
     "INFINITY without its minus sign fills the future with +inf"),
    ("log_softmax", ("log_softmax",), (SOFTMAX, SOFTMAX.replace("torch::softmax", "torch::log_softmax")),
     "your line `torch::Tensor weights = torch::log_softmax(scores, /*dim=*/-1);` gives logarithms of weights",
     "torch::log_softmax where torch::softmax belongs"),
    ("the weights times k", ("weights_times_keys",), (OUT, OUT.replace("(v)", "(k)")),
     "your line `torch::Tensor out = weights.matmul(k);` blends the keys: write weights.matmul(v)",
     "weights.matmul(k) blends the keys"),
    ("the weights times x", ("weights_times_x",), (OUT, OUT.replace("(v)", "(x)")),
     "your line `torch::Tensor out = weights.matmul(x);` blends the input x", "weights.matmul(x) blends the input x"),
    ("k times q transposed", ("scores_keys_times_queries",), (SCORES, "torch::Tensor scores = k.matmul(q.transpose(-2, -1));"),
     "your line `torch::Tensor scores = k.matmul(q.transpose(-2, -1));` scores the keys against the queries",
     "k.matmul(q.transpose(-2, -1)) scores the keys against the queries"),
    ("the past masked", ("mask_past",), (MASK, MASK.replace("tril.logical_not()", "tril")),
     "masked_fill(tril, ...) without .logical_not() masks the past instead of the future",
     "masked_fill(tril, ...) without .logical_not() masks the past instead of the future"),
    ("tril_(-1)", ("mask_one_diagonal_down",), (TRIL, TRIL.replace("tril_()", "tril_(-1)")),
     "your line `%s` keeps one diagonal too few (diagonal -1)" % TRIL.replace("tril_()", "tril_(-1)"),
     "tril_(-1) (or tril with diagonal -1) keeps one diagonal too few"),
    ("a mask of floats, 1 - tril", ("no_mask",), (MASK, MASK.replace("tril.logical_not()", "1 - tril")),
     "your line `if (opt.mask) scores.masked_fill_(1 - tril, -INFINITY);` gives masked_fill a mask of floats (1 - tril)",
     "STEP 4 left the future unmasked"),
    ("a bias on the key layer", ("bias_key",), ("key(torch::nn::LinearOptions(C, HEAD).bias(false))",
                                                "key(torch::nn::LinearOptions(C, HEAD))"),
     "the key layer was made without .bias(false), so it has a bias",
     "the key layer was made without .bias(false), so it has a bias"),
    ("the scale by C", ("scale_by_embed",), ("std::sqrt(double(HEAD))", "std::sqrt(double(C))"),
     "the scale uses C, the embedding size, where it uses HEAD", "the scale uses C, the embedding size, where it uses HEAD"),
]


def stopped_lab(ex, how):
    """The cases of a lab whose numbers are right up to a product in the wrong order, which
    stops it: on the lab's own line (scores of (HEAD, HEAD), exit 5) or LibTorch's (exit 3)."""
    found = []
    for text in cases.DEFAULT_CASES:
        c = cases.parse_case(text)
        right = ex.predict(text, ())
        blocks = printed(right)
        if how.startswith("stops"):  # the lab's line, as lab04_attention.cpp's not_the_lessons() writes it
            shape, keep, step, name = (c.head, c.head), ("x", "q", "k", "v"), 3, "scores"
            said = ("STEP 3: scores is a (%d, %d) tensor of Float; the lesson's code after STEP 3 takes (T, T) = "
                    "(%d, %d), of Float" % (shape + (c.tokens, c.tokens)))
            status, refused = cases.EXIT_NOT_THE_LESSONS_TENSOR, compare.Refusal(0, step, name)
            if c.tokens == c.head:  # square: the product runs, and its numbers differ
                continue
        else:  # LibTorch's error, as the lab's stopped_by() says it
            keep, step, name, refused, status = ("x", "q", "k", "v", "scores", "masked scores", "weights"), 6, "out", None, 3
            said = ("LibTorch error: mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                    % (c.tokens, c.head, c.tokens, c.tokens))
        blocks = {n: (b if n in keep else None) for n, b in blocks.items()}
        # (as compare.judge has them: a lab stopped on its own line printed right what it printed; one
        # LibTorch stopped misses the tensor of the STEP it stopped in)
        found.append(compare.CaseResult.of(text, ok=False, blocks=blocks, parsed=blocks, step=step, name=name,
                                        status=status, refused=refused, said=said,
                                        printed_right=True if refused else None))
    return found


def main(argv):
    if argv:
        print("slips_test: usage: slips_test.py", file=sys.stderr)
        return 2
    ex = diagnosis.Explainer(MISTAKES)
    failed = 0
    for what, numbers, (old, new), with_source, without in SLIPS:
        assert LESSON.count(old) >= 1, old
        source = LESSON.replace(old, new, 1)
        results = stopped_lab(ex, numbers) if isinstance(numbers, str) else simulated_lab(
            ex, tuple(m for i in numbers for m in MISTAKES if m["id"] == i))
        for given, words in ((source, with_source), (None, without)):
            said = diagnosis.diagnose(results, MISTAKES, ex, given).lines
            first = said[0] if said else ""
            ok = first.startswith("diagnosis: " + words)
            failed += not ok
            print("%s  %s, %s: the diagnosis starts %r%s" % ("OK    " if ok else "NOT OK", what,
                                                              "its source at hand" if given else "no source", words,
                                                              "" if ok else "\n        got: %s" % " | ".join(said)[:600]))
    # A student's line is shown, never obeyed: a control character in it is quoted as \xNN.
    from lab04.checker import slips
    said = slips.lead("no_scale", LESSON.replace(SCALE, SCALE.replace("mul_(", "mul(").replace("));", ") /*\x1b[2J*/);")))
    ok = said is not None and "\x1b" not in said and "\\x1b[2J" in said
    failed += not ok
    print("%s  a quoted line's control characters are shown as \\xNN%s" % ("OK    " if ok else "NOT OK",
                                                                          "" if ok else "\n        got: %r" % said))
    print("%d passed, %d failed" % (2 * len(SLIPS) + 1 - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
