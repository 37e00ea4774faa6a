#!/usr/bin/env python3
"""bench/similarity.py: what the class summary's similarity check costs for a class of N labs.

  bench/similarity.py N     N labs (default 1000): prints the seconds each part took

Each lab is the lesson with its names renamed as a student might (q as query, scores as att,
...) and a dozen lines of its own (a helper, a check, a print), different in each lab; one
pair is a copy with every name renamed again, which the check must find. The two parts are
timed as the class grader runs them: each lab's own code (similarity.own_code, in the workers),
then sim_c++ and the canonical form over the class (similarity.look_alike, once, in the main
process). The own lines are
of four shapes, which sim_c++ (names and numbers alike) finds in many labs: many pairs are listed,
as they would be for a class whose students all wrote the same helpers; the times are the point.
Three lines of each are chains of operations that few labs share, as a student's own lines
mostly are: the canonical form's comparison (names alike, each pair on its own) pairs the labs
that share one, and finds the copy by them where sim_c++ is not installed.
Exit status: 0 when the copy is found, 1 when not.
"""
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "grader"), os.path.join(HERE, "..", "checker")]
import similarity  # noqa: E402

NAMES = ["q", "k", "v", "scores", "weights", "out", "x", "tril"]


def own_lines(rng, n):
    """A dozen lines a student might add, different for each seed."""
    lines = []
    for i in range(12):
        a, b = rng.choice(NAMES), rng.choice(NAMES)
        lines.append(rng.choice([
            "  auto check_%d_%d = %s.sum().item<float>() + %d;" % (n, i, a, rng.randint(0, 999)),
            "  if (%s.size(0) != %s.size(0)) std::printf(\"mismatch %d at %d\\n\");" % (a, b, n, i),
            "  for (int i%d = 0; i%d < %d; ++i%d) %s = %s * %d.0f;" % (i, i, rng.randint(1, 9), i, a, a, rng.randint(1, 5)),
            "  std::printf(\"%s %d: %%f\\n\", %s.mean().item<float>());" % (a, n * 13 + i, b),
        ]))
    ops = ["exp", "sqrt", "t", "sum", "tril", "triu", "isinf", "isnan", "all", "max", "log_softmax", "softmax"]
    for i in range(3):  # chains of operations: few labs write the same one (about 1 in 600 of each)
        a, b = rng.choice(NAMES), rng.choice(NAMES)
        lines.append("  auto chain_%d_%d = %s.%s().%s().%s() + %s.%s().%s();" % (
            n, i, a, rng.choice(ops), rng.choice(ops), rng.choice(ops), b, rng.choice(ops), rng.choice(ops)))
    return lines


def lab(lesson, rng, n):
    renames = {name: "%s_%d" % (name, rng.randint(0, 3)) for name in NAMES}
    text = lesson
    for old, new in renames.items():
        text = text.replace(" %s " % old, " %s " % new)
    cut = text.index("int main")
    return text[:cut] + "void extra_%d() {\n%s\n}\n" % (n, "\n".join(own_lines(rng, n))) + text[cut:]


def main(argv):
    n = int(argv[0]) if argv else 1000
    with open(os.path.join(HERE, "..", "lab04_attention.cpp")) as f:
        lesson = f.read()
    rng = random.Random(20261203)
    labs = [lab(lesson, rng, i) for i in range(n - 1)]
    labs.append(labs[0].replace("extra_0", "my_helper").replace("check_0_", "c_"))  # the copy
    template = similarity.template_keys([lesson])
    start = time.monotonic()
    own = [("lab%04d" % i, similarity.own_code(text, template)) for i, text in enumerate(labs)]
    own_seconds = time.monotonic() - start
    found = similarity.look_alike(own)
    copy = any({p["a"], p["b"]} == {"lab0000", "lab%04d" % (n - 1)} for p in found["pairs"])
    print("%d labs: own code %.2f s, sim_c++ %s, canonical form %.2f s; %d pairs listed; the copy found: %s" % (
        n, own_seconds, "%.2f s" % found["sim_seconds"] if found["by_sim"] else "did not run (%s)" % found["why"],
        found["canonical_seconds"], len(found["pairs"]), "yes" if copy else "NO"))
    return 0 if copy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
