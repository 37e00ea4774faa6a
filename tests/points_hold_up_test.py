#!/usr/bin/env python3
"""A STEP's points hold up (grader/grade_class.py, on a fresh draw of cases): labs that print
inputs made up to fit their outputs earn only what they computed; one honest mistake, a shape
slip among them, costs its own STEP alone; a lab that prints every STEP 7 verdict loses STEP 7.

usage: points_hold_up_test.py BUILD WORK_DIR

Each lab is the lesson (the project's lab04_attention.cpp) with a few lines replaced. The STEPs
each must lose are written here from what its lines do, never from a run of the grader:

- made up: causal weights from a formula of T (row i in proportion to 1, 2, ..., i+1), their
  logarithms printed as the scores and the masked scores, with no scores, mask or softmax
  computed; the same after a right STEP 3; the same with a tiny noise from x added; the same
  with a part of x added that moves them as x moves the lesson's (weights from x then: its
  output and checks are its own work, and earn); the
  lesson's STEP 3 to 6 run on a q and a k made from a formula of T; weights made from x alone
  (its scores are its own formula, their future made up, and softmax is skipped: the output
  and the checks are its own work and earn);
- one mistake each: q transposed instead of k; v times the weights; scores from q + 0.1 (a
  mistake no catalogue names); softmax over dimension 0; a mask that lets one future token
  through; a scale by HEAD; the output from q; no scale; softmax of the scores with the future
  at 0; the rows' sums taken down the columns; a seed of its own (x the same in every case: its
  STEP 1 and 2 are wrong, and the rest computed from its x, as the lesson computes it);
- STEP 7: every verdict line printed, the right one among them; its checks written in advance
  (`sums_ok = true;`), in the lesson, and in a starter with STEP 3 to 7 blank (make_starter.py
  --blank 3,4,5,6,7) whose STEP 3 to 6 are filled with the lesson's lines: on the case whose
  softmax leaks (both checks must say NO there), STEP 7 is lost; a softmax written by hand
  (exp, then divide: LibTorch's softmax is not called, and does not leak) loses nothing;
- bad input: the scores' header claiming another shape than the rows printed; the scores
  printed twice with different numbers: STEP 3 and 4 are not judged, and the feedback says why.

Each row of grades.csv must have exactly its lab's STEPs lost, and the feedback of a lab whose
inputs were made up must say why in plain words. Prints OK or NOT OK for each promise.
"""
import csv
import os
import shutil
import subprocess
import sys

import checklist
import project

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")

SCORES = "torch::Tensor scores = q.matmul(k.transpose(-2, -1));"
SCALE = "if (opt.scale) scores.mul_(1.0 / std::sqrt(double(HEAD)));"
MASK = "if (opt.mask) scores.masked_fill_(tril.logical_not(), -INFINITY);"
SOFTMAX = "torch::Tensor weights = torch::softmax(scores, /*dim=*/-1);"
OUT = "torch::Tensor out = weights.matmul(v);"
PEEK = 'std::printf("    %s, shape (%lld, %lld):\\n", name, (long long)t.size(0), (long long)t.size(1));'
VERDICT = 'std::printf("\\nSTEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s\\n",'
SUMS = "torch::allclose(weights.sum(-1), torch::ones({T}), /*rtol=*/1e-5, /*atol=*/1e-6);"
CAUSAL = "const bool causal_ok = upper.abs().max().item<double>() < kCausalLimit;"
TRIL = "const torch::Tensor tril = torch::ones({T, T}, torch::kBool).tril_();"

# Causal weights from a formula of T: row i in proportion to 1, 2, ..., i+1 (noise: a tiny
# part of x added, so that they are not exactly the same for another x).
FORMULA = ("torch::Tensor made = torch::arange(1, T + 1, torch::kFloat).expand({T, T}).tril()%s; "
           "made = made / made.sum(-1, true);")
NOISE = " * (1 + 1e-4 * x.select(-1, 0).tanh().unsqueeze(0))"
# The scores and masked scores printed for them: their logarithms, the future at -100, then
# -inf where the case masks.
MADE_SCORES = "torch::Tensor scores = made.log().clamp_min(-100);"
MADE_MASK = "if (opt.mask) scores = made.log();"
MADE_WEIGHTS = "torch::Tensor weights = made;"

LABS = {
    # name: (edits, STEPs lost)
    "made_up_weights": ([(SCORES, FORMULA % "" + " " + MADE_SCORES), (SCALE, ""), (MASK, MADE_MASK),
                         (SOFTMAX, MADE_WEIGHTS)], {3, 4, 5, 6, 7}),
    "made_up_after_a_right_step_3": ([(MASK, FORMULA % "" + " " + MADE_MASK.replace("if (opt.mask) ", "")
                                       + " if (!opt.mask) scores = made.log().clamp_min(-100);"),
                                      (SOFTMAX, MADE_WEIGHTS)], {4, 5, 6, 7}),
    "made_up_weights_with_a_tiny_noise": ([(SCORES, FORMULA % NOISE + " " + MADE_SCORES), (SCALE, ""),
                                           (MASK, MADE_MASK), (SOFTMAX, MADE_WEIGHTS)], {3, 4, 5, 6, 7}),
    "made_up_weights_with_a_part_of_x": ([(SCORES, FORMULA % NOISE.replace("1e-4", "0.5") + " " + MADE_SCORES),
                                          (SCALE, ""), (MASK, MADE_MASK), (SOFTMAX, MADE_WEIGHTS)], {3, 4, 5}),
    "lesson_on_made_up_q_and_k": ([("torch::Tensor q = head.query(x);",
                                    "torch::Tensor q = torch::arange(T * HEAD, torch::kFloat).reshape({T, HEAD}).sin();"),
                                   ("torch::Tensor k = head.key(x);",
                                    "torch::Tensor k = torch::arange(T * HEAD, torch::kFloat).reshape({T, HEAD}).cos();")],
                                  {2, 3, 4, 5, 6, 7}),
    "weights_from_x_alone": ([(SCORES, "torch::Tensor made = (x.abs().sum(-1) + 1).expand({T, T}).tril(); "
                               "made = made / made.sum(-1, true); " + MADE_SCORES), (SCALE, ""), (MASK, MADE_MASK),
                              (SOFTMAX, MADE_WEIGHTS)], {3, 4, 5}),
    "q_transposed_instead_of_k": ([("q.matmul(k.transpose(-2, -1))", "q.transpose(-2, -1).matmul(k)")], {3}),
    "v_times_the_weights": ([(OUT, "torch::Tensor out = v.matmul(weights);")], {6}),
    "scores_from_q_plus_a_tenth": ([("q.matmul(k.transpose(-2, -1))", "(q + 0.1).matmul(k.transpose(-2, -1))")], {3}),
    "softmax_over_dimension_0": ([("/*dim=*/-1);", "/*dim=*/0);")], {5}),
    "a_mask_that_lets_one_future_token_through": ([("torch::kBool).tril_();", "torch::kBool).tril_(1);")], {4}),
    "scale_by_head": ([(SCALE, "if (opt.scale) scores.mul_(1.0 / double(HEAD));")], {3}),
    "the_output_from_q": ([(OUT, "torch::Tensor out = weights.matmul(q);")], {6}),
    "no_scale": ([(SCALE, "")], {3}),
    "softmax_of_the_future_at_0": ([(SOFTMAX, "torch::Tensor weights = torch::softmax(scores.nan_to_num(0.0, 0.0, 0.0), "
                                    "/*dim=*/-1);")], {5}),
    "a_seed_of_its_own": ([("torch::manual_seed(opt.seed);", "torch::manual_seed(42);")], {1, 2}),
    "sums_down_the_columns": ([("torch::allclose(weights.sum(-1),", "torch::allclose(weights.sum(0),")], {7}),
    "sums_written_in_advance": ([(SUMS, "true;")], {7}),
    "both_checks_written_in_advance": ([(SUMS, "true;"), (CAUSAL, "const bool causal_ok = opt.mask;")], {7}),
    "softmax_written_by_hand": ([(SOFTMAX, "torch::Tensor e = (scores - std::get<0>(scores.max(-1, true))).exp(); "
                                  "torch::Tensor weights = e / e.sum(-1, true);")], set()),
    "every_verdict_printed": ([(VERDICT, 'for (const char* a : {"YES", "NO"}) for (const char* b : {"YES", "NO"}) '
                                'std::printf("\\nSTEP 7: weight rows sum to 1: %s | causal (no peeking ahead): %s\\n", '
                                'a, b); ' + VERDICT)], {7}),
    # Bad input: a tensor whose header claims another shape than its rows, a tensor printed
    # twice with different numbers: its STEP, and the one that takes it, are not judged.
    "a_header_that_claims_another_shape": ([(PEEK, PEEK.replace("(long long)t.size(0), (long long)t.size(1)",
                                                                "(long long)t.size(0) + (std::string(name) == "
                                                                "\"scores before the mask\"), (long long)t.size(1)"))],
                                           {3, 4}),
    "the_scores_printed_twice": ([('peek(opt, "scores before the mask", scores);',
                                   'peek(opt, "scores before the mask", scores); '
                                   'peek(opt, "scores before the mask", scores * 2);')], {3, 4}),
    "the_lesson": ([], set()),
}
STARTER = "a_starter_with_step_7_written_in_advance"
MADE_UP = ["made_up_weights", "made_up_after_a_right_step_3", "made_up_weights_with_a_tiny_noise",
           "lesson_on_made_up_q_and_k"]  # the same for another x: each says so


def starter_with_step_7_written_in_advance(work):
    """A starter with STEP 3 to 7 blank, filled as a student who wants STEP 7's point without
    its work fills it: STEP 3 to 6 with the lesson's lines, STEP 7's checks written in advance."""
    made = os.path.join(work, "starter.cpp")
    subprocess.run([sys.executable, os.path.join(project.ROOT, "instructor", "make_starter.py"), "--blank",
                    "3,4,5,6,7", "--lab-only", made], check=True, capture_output=True)
    fills = {3: SCORES + " " + SCALE, 4: TRIL + " " + MASK, 5: SOFTMAX, 6: OUT, 7: ""}
    lines = []
    for line in open(made).read().splitlines():
        step = next((n for n in fills if "not_written_yet(%d," % n in line), None)
        if step:
            lines.append("    " + fills[step])
        elif line.strip() in ("torch::Tensor scores;  // TODO(STEP 3)", "torch::Tensor weights;  // TODO(STEP 5)",
                              "torch::Tensor out;  // TODO(STEP 6)"):
            continue
        else:
            lines.append(line.replace("bool sums_ok = false;  // TODO(STEP 7)", "bool sums_ok = true;")
                         .replace("bool causal_ok = false;  // TODO(STEP 7)", "bool causal_ok = opt.mask;"))
    text = "\n".join(lines) + "\n"
    if "not_written_yet(" in text.split("int main(")[1].split("// The machinery")[0] or "sums_ok = true;" not in text:
        raise SystemExit("points_hold_up_test: the starter's blanks are not where this test fills them")
    return text


def lab_text(lesson, edits):
    text = lesson
    for old, new in edits:
        if old not in text:
            raise SystemExit("points_hold_up_test: the lesson has no line %r to edit" % old)
        text = text.replace(old, new, 1)
    return text


def main(argv):
    if len(argv) != 2:
        print("points_hold_up_test: usage: points_hold_up_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    build, work = (os.path.abspath(a) for a in argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "class"))
    os.chmod(work, 0o755)
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        lesson = f.read()
    texts = {name: lab_text(lesson, edits) for name, (edits, _) in LABS.items()}
    texts[STARTER] = starter_with_step_7_written_in_advance(work)
    for name, text in texts.items():
        os.makedirs(os.path.join(work, "class", name))
        with open(os.path.join(work, "class", name, "lab04_attention.cpp"), "w") as f:
            f.write(text)
    grades = os.path.join(work, "grades")
    # No --draw: a fresh draw, as an instructor grades (the summary names its seed).
    done = subprocess.run([sys.executable, GRADE_CLASS, "--build", build, "--no-similarity",
                           os.path.join(work, "class"), grades], capture_output=True, text=True)
    seed = [line for line in done.stdout.splitlines() if "--draw" in line][:1]
    checks = [("the class of %d labs is graded (exit 0) on a fresh draw (%s)" % (len(texts), "; ".join(seed)),
               done.returncode == 0, done.stderr[-1500:])]
    rows = {}
    if os.path.exists(os.path.join(grades, "grades.csv")):
        with open(os.path.join(grades, "grades.csv"), newline="") as f:
            rows = {row["student"]: row for row in csv.DictReader(f)}

    def lost(name):
        row = rows.get(name)
        return None if row is None else {n for n in range(1, 8) if float(row["STEP %d" % n]) == 0}

    def feedback(name):
        path = os.path.join(grades, "feedback", name + ".txt")
        return open(path, encoding="utf-8").read() if os.path.exists(path) else ""

    for name, (_, expected) in list(LABS.items()) + [(STARTER, (None, {7}))]:
        got = lost(name)
        what = "made up inputs" if name in MADE_UP + ["weights_from_x_alone", "made_up_weights_with_a_part_of_x"] else \
            "one mistake" if expected else "no mistake"
        checks.append(("%s (%s) loses STEP %s" % (name, what, sorted(expected) or "none"), got == expected,
                       "lost STEP %s\n%s" % (sorted(got) if got is not None else "(no row)", feedback(name)[-1800:])))
    for name in MADE_UP:
        checks.append(("%s's feedback says its inputs were the same for two different inputs x" % name,
                       "the same in two cases with different inputs x" in feedback(name), feedback(name)[-1200:]))
    for name, said in (("a_header_that_claims_another_shape", "its header claims the shape"),
                       ("the_scores_printed_twice", "printed 2 times, with different numbers")):
        checks.append(("%s's feedback says why STEP 3 and 4 are not judged (%s)" % (name, said),
                       feedback(name).count(said) == 2 and "not judged: in case" in feedback(name),
                       feedback(name)[-1200:]))
    for name in ("sums_written_in_advance", STARTER):
        checks.append(("%s's feedback names the case whose softmax leaks, where both checks say NO" % name,
                       "leaky-softmax" in feedback(name) and "NO | causal (no peeking ahead): NO" in feedback(name),
                       feedback(name)[-1200:]))
    checks.append(("every_verdict_printed's feedback says one head has one verdict",
                   "where one head has one verdict" in feedback("every_verdict_printed"),
                   feedback("every_verdict_printed")[-800:]))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
