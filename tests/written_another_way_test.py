#!/usr/bin/env python3
"""A step written another way, the Python lab's among them, is judged right everywhere: the
lesson's own code after it takes any equivalent form.

usage: written_another_way_test.py BUILD WORK_DIR LINK_TARGET LINK_RECORD
  BUILD        the project's build folder: each lab is built alone with its compile and link
               commands (built_alone.py)
  WORK_DIR     a folder for the labs (emptied first)
  LINK_TARGET  the build's target whose link writes the lab's link command into LINK_RECORD

Each lab is made the way a student makes it: make_starter.py blanks steps, and the blanks are
written in a form of this file. PYTHON holds each STEP as the course's Python lab writes it
(its code, translated to LibTorch one for one, keeping the lab's --no-scale and --no-mask);
OTHERS, forms of our own (views and copies, in place or not, contiguous or not, masks of bool,
float, integer and byte, other operations). The labs: the lesson with one STEP written the
Python lab's way (STEP 3 to 7: STEP 1, 2 and 6 translate to the lesson's own lines); the
starter (STEP 3 to 6 blank) and a starter with every STEP blank, each written the Python lab's
way; the lesson with the other forms.

Each lab must: compile; pass the checker on its default cases (several heads among them) with
no diagnosis; get the watch's verdict "every STEP matches the reference in all 6 cases"; score
full marks in a grade of the grade cases and of a case of two heads; print the seed's output
and exit 0, and exit 0 with --heads 2. A lab written the Python lab's way must also print, in
every default case, the lesson's bytes: the same operations give the same bits.
"""
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import checklist
import project
from built_alone import build_alone, build_commands

from lab04.checker import cases, diagnosis, running, sandbox, verdict, watch_verdict
from lab04.checker.mistakes import MISTAKES
from lab04.instructor import blanking

# Each STEP as the Python lab (the seed) writes it, in LibTorch: its names (but the mask's, tril,
# which the lesson's other steps use), its operations and its constants.
PYTHON = {
    1: ["torch::Tensor x = torch::randn({T, C});"],  # x = torch.randn(T, C)
    2: ["torch::Tensor q = head.query(x);",  # q = query(x)
        "torch::Tensor k = head.key(x);",
        "torch::Tensor v = head.value(x);"],
    # scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(HEAD))
    3: ["torch::Tensor scores = q.matmul(k.transpose(-2, -1)) * (opt.scale ? 1.0 / std::sqrt(HEAD) : 1.0);"],
    # mask = torch.tril(torch.ones(T, T)); scores = scores.masked_fill(mask == 0, float("-inf"))
    4: ["torch::Tensor tril = torch::tril(torch::ones({T, T}));",
        "if (opt.mask) scores = scores.masked_fill(tril == 0, -INFINITY);"],
    5: ["torch::Tensor weights = torch::softmax(scores, /*dim=*/-1);"],  # F.softmax(scores, dim=-1)
    6: ["torch::Tensor out = weights.matmul(v);"],  # out = weights @ v
    # sums_ok = bool(torch.allclose(weights.sum(dim=-1), torch.ones(T), atol=1e-6))
    # upper = weights * (mask == 0); causal_ok = bool(upper.abs().max().item() < 1e-9)
    7: ["const bool sums_ok = torch::allclose(weights.sum(/*dim=*/-1), torch::ones({T}), 1e-5, 1e-6);",
        "const torch::Tensor upper = weights * (tril == 0);",
        "const bool causal_ok = upper.abs().max().item<double>() < 1e-9;"],
}

# Forms of our own, each lab a set of them.
OTHERS = {
    # Views and in-place changes, nothing contiguous: the scores transposed back, scaled in
    # place; a float mask that is a transposed view; weights taken from a batch of one; out as
    # the transpose of a product.
    "views_in_place_and_not_contiguous": {
        3: ["torch::Tensor scores = k.matmul(q.transpose(0, 1)).transpose(0, 1);",
            "if (opt.scale) scores.div_(std::sqrt(double(HEAD)));"],
        4: ["torch::Tensor tril = torch::ones({T, T}).triu().t();",
            "if (opt.mask) scores.masked_fill_(tril.logical_not(), -INFINITY);"],
        5: ["torch::Tensor weights = torch::softmax(scores.unsqueeze(0), -1)[0];"],
        6: ["torch::Tensor out = v.t().matmul(weights.t()).t();"],
    },
    # Other operations and an integer mask: einsum, where, softmax written out, a broadcast sum.
    "integer_mask_and_other_operations": {
        3: ["torch::Tensor scores = torch::einsum(\"id,jd->ij\", {q, k});",
            "if (opt.scale) scores = scores / std::sqrt(double(HEAD));"],
        4: ["torch::Tensor tril = torch::ones({T, T}, torch::kLong).tril();",
            "if (opt.mask) scores = torch::where(tril.ne(0), scores, torch::full_like(scores, -INFINITY));"],
        5: ["torch::Tensor e = (scores - std::get<0>(scores.max(/*dim=*/-1, /*keepdim=*/true))).exp();",
            "torch::Tensor weights = e / e.sum(/*dim=*/-1, /*keepdim=*/true);"],
        6: ["torch::Tensor out = (weights.unsqueeze(-1) * v.unsqueeze(0)).sum(1);"],
        7: ["const bool sums_ok = torch::allclose(weights.sum(-1), torch::ones({T}), 1e-5, 1e-6);",
            "const torch::Tensor upper = weights.masked_fill(tril.ne(0), 0.0);",
            "const bool causal_ok = upper.abs().max().item<double>() < 1e-9;"],
    },
    # A bool mask made by comparing positions, in place; a byte mask for STEP 7; method forms.
    "masks_of_positions_and_bytes": {
        4: ["torch::Tensor position = torch::arange(T);",
            "torch::Tensor tril = position.unsqueeze(1) >= position.unsqueeze(0);",
            "if (opt.mask) scores.masked_fill_(~tril, -std::numeric_limits<float>::infinity());"],
        5: ["torch::Tensor weights = scores.softmax(1);"],
        6: ["torch::Tensor out = torch::mm(weights, v);"],
        7: ["torch::Tensor future = torch::ones({T, T}, torch::kByte).triu(1);",
            "const bool sums_ok = weights.sum(1).sub(1).abs().max().item<double>() < 1e-5;",
            "const bool causal_ok = weights.masked_select(future.to(torch::kBool)).abs().sum().item<double>() < 1e-9;"],
    },
}

ALL_RIGHT = "every STEP matches the reference in all %d cases" % len(cases.DEFAULT_CASES)
GRADED = cases.GRADE_CASES + ["7,5,8,3,heads=2"]


def fill(text, step, code):
    """A lab whose STEP's TODO lines (make_starter.py's blank) are replaced by code."""
    lines = text.split("\n")
    marked = [n for n, line in enumerate(lines) if "TODO(STEP %d)" % step in line]
    if not marked or marked != list(range(marked[0], marked[-1] + 1)):
        raise SystemExit("written_another_way: no TODO lines of STEP %d in a row in the blanked lab" % step)
    indent = re.match(r"\s*", lines[marked[0]]).group(0)
    return "\n".join(lines[:marked[0]] + [indent + c for c in code] + lines[marked[-1] + 1:])


def written(lesson, forms):
    """The lesson with each STEP of forms ({step: code}) blanked, as the starter blanks it,
    and written that way."""
    text, _ = blanking.make_lab(lesson, sorted(forms))
    for step, code in forms.items():
        text = fill(text, step, code)
    return text


def labs(lesson):
    """(name, source, whether it must print the lesson's bytes) of each lab to check."""
    made = [("lesson_with_step_%d_as_the_python_lab_writes_it" % n, written(lesson, {n: PYTHON[n]}), True)
            for n in (3, 4, 5, 7)]
    made.append(("starter_written_as_the_python_lab_writes_it",
                 written(lesson, {n: PYTHON[n] for n in blanking.DEFAULT_BLANKS}), True))
    made.append(("starter_with_every_step_blank_written_as_the_python_lab_writes_it", written(lesson, PYTHON), True))
    made += [("lesson_with_" + name, written(lesson, forms), False) for name, forms in OTHERS.items()]
    return made


def runs_of(box, lab, texts):
    """{case: running.Ran} of the lab's run of each case."""
    return {text: running.run_case(box, cases.parse_case(text), cases.TIMEOUT, lab) for text in texts}


def check_lab(lab, same_bytes, lesson_runs, explainer):
    """The checks of one built lab: (what, held, what came)."""
    box = sandbox.Sandbox(lab)
    try:
        runs = runs_of(box, lab, cases.DEFAULT_CASES + GRADED)
    finally:
        box.close()
    results, not_run = verdict.run_cases(lambda case: runs[case.text], cases.DEFAULT_CASES)
    lines, ok, diagnosed = verdict.check_lines(results, not_run, explainer)
    said = [line for r in results if not r.judgement.ok for line in verdict.case_lines(r)] + lines
    watch = watch_verdict.judged(runs, explainer)
    graded, g_not_run = verdict.run_cases(lambda case: runs[case.text], GRADED)
    score, total, _, parts, _ = verdict.grade_lines(graded, g_not_run, [1.0] * 7)
    checks = [("every default case OK, no diagnosis", ok and not diagnosed and
               not any(line.startswith("diagnosis") for line in lines), "\n".join(said)),
              ("the watch's verdict: " + ALL_RIGHT, watch[:1] == [ALL_RIGHT], "\n".join(watch)),
              ("full marks on the grade cases and two heads", score == total,
               "%g/%g\n%s" % (score, total, "\n".join(parts[n] for n in range(1, 8))))]
    if same_bytes:
        differ = [text for text in cases.DEFAULT_CASES if runs[text].lines != lesson_runs[text].lines]
        checks.append(("the lesson's bytes in every default case", not differ, "they differ in " + ", ".join(differ)))
    with open(project.GOLDEN) as f:
        golden = f.read()
    plain = subprocess.run([lab], capture_output=True, text=True)
    heads = subprocess.run([lab, "--heads", "2"], capture_output=True, text=True)
    checks.append(("a default run prints the seed's output, exit 0", plain.stdout == golden and plain.returncode == 0,
                   "exit %d, stderr %r" % (plain.returncode, plain.stderr[:300])))
    checks.append(("--heads 2 exits 0", heads.returncode == 0, "exit %d: %s" % (heads.returncode, heads.stderr[:300])))
    return checks


def main(argv):
    if len(argv) != 4:
        print("written_another_way_test: usage: written_another_way_test.py BUILD WORK_DIR LINK_TARGET LINK_RECORD",
              file=sys.stderr)
        return 2
    build, work = argv[0], os.path.abspath(argv[1])
    commands = build_commands(build, argv[2], os.path.abspath(argv[3]))
    if isinstance(commands, str):
        print("NOT OK  the build's commands: " + commands)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        lesson = f.read()
    explainer = diagnosis.Explainer(MISTAKES)
    lesson_lab = os.path.join(work, "lesson")
    built = {}

    def build(item):
        name, text, _ = item
        source = os.path.join(work, name + ".cpp")
        with open(source, "w") as f:
            f.write(text)
        built[name] = build_alone(commands, source, os.path.join(work, name))

    items = labs(lesson) + [("lesson", lesson, False)]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(build, items))
    if not built["lesson"]:
        print("NOT OK  the lesson, built alone with the build's commands, does not compile")
        return 1
    box = sandbox.Sandbox(lesson_lab)
    try:
        lesson_runs = runs_of(box, lesson_lab, cases.DEFAULT_CASES)
    finally:
        box.close()
    def checked(item):
        name, _, same_bytes = item
        if not built[name]:
            return [("%s: compiles" % name, False, "see %s.cpp" % os.path.join(work, name))]
        return [("%s: %s" % (name, what), held, got)
                for what, held, got in check_lab(os.path.join(work, name), same_bytes, lesson_runs, explainer)]
    with ThreadPoolExecutor(2) as pool:  # two labs at a time: each run waits for LibTorch to load
        checks = [check for each in pool.map(checked, items[:-1]) for check in each]
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
