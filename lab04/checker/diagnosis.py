"""The diagnosis of check_lab.py's report: which known mistakes explain a lab's numbers.

One entry of mistakes.py that explains every case; else two that change different things
(found together, and reported only when their numbers differ from every single entry's on
the default cases); else one that explains all cases but one or two; else the one that
explains the first differing step. Before the pairs: where what the lab printed leaves later
steps nothing to be judged on (own_inputs.py: zeros, rows all alike, one-hot weights), that
is said, with why and where its numbers first differ. Where a printed tensor equals another
tensor of the lesson, or another one the lab printed, a "same tensor" line says so.
"""
import re

import torch

from lab04.checker import cases, compare, own_inputs, reference_attention, slips
from lab04.checker.cases import parse_case
from lab04.checker.mistakes import TRAPS

SHAPES_TRAP = next(t for t in TRAPS if t[0] == "shapes cannot be multiplied")  # a product's order, maybe


class Explainer:
    """Recomputes the lab with known mistakes (one, or two at once) and says which of them
    print what the lab printed. Predictions are cached: a diagnosis asks for hundreds."""

    def __init__(self, mistakes):
        self.mistakes = mistakes
        self.cache = {}

    def predict(self, text, combo, of_head=0):
        """The tensors that the lesson with the mistakes of combo (a tuple of entries) prints
        (in head of_head, for a case of several heads: a mistake is made in every head)."""
        key = (text, tuple(m["id"] for m in combo), of_head)
        if key not in self.cache:
            c = cases.parse_case(text)
            change = {}
            for m in combo:
                change.update(m["change"])
            self.cache[key] = reference_attention.attention(
                c.seed, c.tokens, c.embed, c.head, scale=c.scale, mask=c.mask,
                mistake={"change": change} if combo else None, heads=c.heads, of_head=of_head, leak=c.leak)
        return self.cache[key]

    def shown(self, text, combo, name, of_head=0):
        """The prediction of one tensor at the rows and columns the lab prints, in float64."""
        key = (text, tuple(m["id"] for m in combo), name, of_head)
        if key not in self.cache:
            t = self.predict(text, combo, of_head)[name]
            self.cache[key] = t.double()[cases.shown(t.shape[0])][:, cases.shown(t.shape[1])]
        return self.cache[key]

    def explains(self, case, combo, upto=None):
        """Whether every tensor the lab printed in case (up to the tensor named upto) agrees
        with the lesson made with the mistakes of combo."""
        of_head = case.judgement.of_head
        predicted = self.predict(case.text, combo, of_head)
        for _, name, _ in cases.TENSORS:
            block = case.evidence.blocks[name]
            if isinstance(block, compare.Unreadable):
                return False
            if block is not None and compare.compare(block, predicted[name], name, detail=False,
                                              e=self.shown(case.text, combo, name, of_head))[0] is not None:
                return False
            if name == upto:
                break
        return True

    def same_numbers(self, combo, other):
        """Whether two combos print the same numbers in every default case."""
        for text in cases.DEFAULT_CASES:
            a, b = self.predict(text, combo), self.predict(text, other)
            for _, name, _ in cases.TENSORS:
                if a[name].shape != b[name].shape or not torch.allclose(
                        self.shown(text, combo, name), self.shown(text, other, name),
                        rtol=cases.REL_TOL, atol=cases.ABS_TOL, equal_nan=True):
                    return False
        return True


def disjoint(a, b):
    """Two mistakes that change different knobs of the lesson."""
    return not set(a["change"]) & set(b["change"])


def said(m, source=None):
    """A mistake in words, its slip first: the student's own line where the source is at hand
    and a line of it matches (slips.py), else the catalogue's words."""
    return slips.lead(m["id"], source) or "%s; %s" % (m["did"], m["fix"])


class Diagnosis:
    """A diagnosis, as values: body (its lines, the first after its label), mistakes (what was
    diagnosed: the known mistakes' ids, one or two, or () for none), same_tensor (lines naming a printed
    tensor equal to another one, said before it) and label ("diagnosis", or "diagnosis (all
    cases but N)"). lines is what a report prints; said, the diagnosis in one line (a
    gradebook's column: without the plain label)."""

    def __init__(self, body, mistakes=(), same_tensor=(), label="diagnosis"):
        self.body, self.mistakes, self.same_tensor, self.label = list(body), tuple(mistakes), list(same_tensor), label

    @property
    def lines(self):
        return self.same_tensor + ["%s: %s" % (self.label, self.body[0])] + self.body[1:]

    @property
    def said(self):
        text = " ".join(" ".join(line.split()) for line in self.body)
        return text if self.label == "diagnosis" else "%s: %s" % (self.label, text)


def diagnose(cases, mistakes, explainer=None, source=None):
    """The diagnosis of a report, a Diagnosis. cases: each case's compare.CaseResult; source:
    the lab's C++ where it is at hand, whose lines a diagnosis then quotes (slips.py)."""
    ex = explainer or Explainer(mistakes)
    judged = [c for c in cases if c.evidence.blocks is not None]
    failing = [c for c in judged if not c.judgement.ok]
    blank = compare.first_blank(cases)
    if blank:  # a starter's blank: only a mistake before it can explain what was printed
        if all(ex.explains(c, ()) for c in judged):
            return Diagnosis(["STEP %d is not written yet: the run stops at its TODO(STEP %d), and every number it "
                              "printed before is right; write the step, rebuild, and check again" % (blank, blank)])
        mistakes = [m for m in mistakes if m["step"] < blank]
    if cases and all(c.judgement.printed_right for c in cases) and not all(c.judgement.ok for c in cases):
        stopped_on = next(c for c in cases if not c.judgement.ok)
        slip = (slips.order_slip(source) or shape_slip_of(stopped_on)) if stopped_on.run.refused else None
        if slip:  # a product in the wrong order, which the next step cannot take: the slip first
            return Diagnosis([slip, "           (the lab stopped at STEP %s, saying: %s)" % (
                stopped_on.run.refused.step, stopped_on.run.said)])
        return Diagnosis(after_right_numbers(cases))  # every number it printed is the lesson's
    stopped = next((c for c in failing if c.run.status == 3 and c.run.said.startswith("LibTorch error:")),
                   None)
    if stopped and all(ex.explains(c, ()) for c in judged):  # right numbers, then LibTorch refused a step
        return Diagnosis(libtorch_error_lines(stopped, source))
    if not failing:
        return Diagnosis(["the lab printed no numbers that can be compared; start from the first NOT OK case above"])
    singles = [m for m in mistakes if all(ex.explains(c, (m,)) for c in judged)]
    if len(singles) == 1:
        return Diagnosis([said(singles[0], source)], (singles[0]["id"],))
    if singles:
        return Diagnosis(["no known mistake matches: %d of them fit these numbers equally (%s)"
                          % (len(singles), ", ".join(m["id"] for m in singles))])

    first = min(failing, key=lambda c: c.judgement.step or 9)
    same = same_tensor_lines(first, ex)
    refused = first.run.refused
    if refused and refused.step == first.judgement.step:  # its own line says what is wrong
        slip = slips.order_slip(source) or shape_slip_of(first)
        if slip:  # a product in the wrong order: the slip first, then what the lab said
            return Diagnosis([slip, "           (the lab stopped at STEP %s, saying: %s)" % (first.judgement.step, first.run.said)],
                             (), same)
        return Diagnosis(["STEP %s made %s a tensor the lesson's code after it cannot take, and the lab stopped "
                          "there, saying: %s" % (first.judgement.step, refused.name, first.run.said),
                          "           the comment on each line of the lesson gives its tensor's shape: (T, HEAD) "
                          "for q, k, v and the output, (T, T) for the scores and the weights"], (), same)
    unjudged = without_evidence(judged)
    if unjudged:
        return Diagnosis(nothing_to_judge_lines(unjudged, first), (), same)
    # Two mistakes: one acts at the first STEP that differs, the other there or later.
    pairs = []
    for i, a in enumerate(mistakes):
        if a["step"] != first.judgement.step:
            continue
        for j, b in enumerate(mistakes):
            if b["step"] < a["step"] or (b["step"] == a["step"] and j <= i) or not disjoint(a, b):
                continue
            if ex.explains(first, (a, b)) and all(ex.explains(c, (a, b)) for c in judged):
                if not any(ex.same_numbers((a, b), (m,)) for m in mistakes):
                    pairs.append((a, b))
    if len(pairs) == 1:
        a, b = pairs[0]
        return Diagnosis(["two mistakes: %s;" % said(a, source), "           and %s" % said(b, source)],
                         (a["id"], b["id"]), same)
    if pairs:
        return Diagnosis(["two mistakes, but %d pairs of known mistakes fit these numbers equally (%s)"
                          % (len(pairs), ", ".join(a["id"] + "+" + b["id"] for a, b in pairs))], (), same)

    # Most cases: one mistake explains every case but one or two.
    near = []
    for m in mistakes:
        missed = [c for c in judged if not ex.explains(c, (m,))]
        if 1 <= len(missed) <= 2 and len([c for c in failing if c not in missed]) > len(missed):
            near.append((len(missed), m, missed))
    near.sort(key=lambda t: t[0])
    if near and (len(near) == 1 or near[1][0] > near[0][0]):
        _, m, missed = near[0]
        body = [said(m, source)]
        for c in missed:
            diff = compare.first_difference(c.evidence.blocks, ex.predict(c.text, (m,), c.judgement.of_head))
            where = "STEP %s: %s: %s" % diff if diff else "the same numbers, other STEP 7 verdicts"
            body.append("  it does not explain case %s, where %s" % (c.text, where))
        return Diagnosis(body, (m["id"],), same, "diagnosis (all cases but %d)" % len(missed))

    # Step by step: which mistake explains the first differing step's tensor.
    upto = first.judgement.name
    fits = [m for m in mistakes if ex.explains(first, (m,), upto=upto)] if upto else []
    if fits:
        return Diagnosis(["STEP %s's %s in case %s are those of a known mistake: %s; the steps after it differ in "
                          "other ways too: there is another mistake"
                          % (first.judgement.step, upto, first.text, " OR ".join(said(m, source) for m in fits[:2]))], (), same)
    return Diagnosis(["no known mistake matches; start from the first STEP reported above"], (), same)


SHAPE = re.compile(r" is a \((\d+), (\d+)\) tensor")


def shape_slip_of(case):
    """What a tensor of a shape only a slip of order gives says (slips.shape_slip), from the
    line the lab stopped with, or None."""
    m = SHAPE.search(case.run.said or "")
    return m and slips.shape_slip(case.judgement.name, (int(m.group(1)), int(m.group(2))), cases.parse_case(case.text))


def without_evidence(results):
    """{step: (case, own_inputs.Why)} of the steps whose inputs, as the lab printed them, were
    evidence (own_inputs.py) in no case and no head, and, in some case, for a reason of the
    lab's own, not of the case (one token, --no-mask)."""
    evidence, whys = set(), {}
    for r in results:
        case = cases.parse_case(r.text)
        for parsed in [v.parsed for v in r.evidence.heads] if r.evidence.heads else [r.evidence.parsed]:
            for step, on in own_inputs.on_own_inputs(parsed or {}, case).items():
                if on.why is None:
                    evidence.add(step)
                elif on.why.kind not in own_inputs.OF_THE_CASE:
                    whys.setdefault(step, (r.text, on.why))
    return {step: why for step, why in sorted(whys.items()) if step not in evidence}


def steps_text(steps):
    """STEP 3, STEP 3 and 6, STEP 5 to 7."""
    if len(steps) > 2 and steps == list(range(steps[0], steps[-1] + 1)):
        return "STEP %d to %d" % (steps[0], steps[-1])
    if len(steps) == 1:
        return "STEP %d" % steps[0]
    return "STEP %s and %d" % (", ".join(map(str, steps[:-1])), steps[-1])


def nothing_to_judge_lines(unjudged, first):
    """The diagnosis of a lab whose printed numbers leave later steps nothing to be judged on:
    which steps, why (the first one's), and where its numbers first differ from the lesson's."""
    steps = sorted(unjudged)
    text, why = unjudged[steps[0]]
    lines = ["%s cannot be judged on what the lab printed before them, and earn%s nothing: STEP %d: %s (case %s)"
             % (steps_text(steps), "s" if len(steps) == 1 else "", steps[0], own_inputs.words(steps[0], why), text)]
    if first.judgement.step and first.judgement.name:
        lines.append("           its numbers first differ from the lesson's at STEP %s (%s): compute each STEP from the "
                     "one before it, as the lesson does; a STEP earns its points only on numbers that can tell right "
                     "code from wrong" % (first.judgement.step, first.judgement.name))
    return lines


def libtorch_error_lines(case, source=None):
    """The diagnosis of a lab whose numbers are right as far as they go, stopped by an error of
    LibTorch's: a product written in the wrong order where the source shows one (slips.py),
    else the step, LibTorch's words, and what they mean where a trap of mistakes.py's TRAPS
    explains them."""
    step = case.judgement.step or "?"
    trap = next((t for t in TRAPS if t[0] in case.run.said), None)
    slip = slips.order_slip(source) if trap is SHAPES_TRAP else None
    if slip:
        return [slip, "           (LibTorch stopped the lab at STEP %s, saying: %s)" % (step, case.run.said.removeprefix("LibTorch error: "))]
    lines = ["every number the lab printed is right; then, at STEP %s, LibTorch stopped it (exit 3), saying: %s"
             % (step, case.run.said.removeprefix("LibTorch error: "))]
    if trap:
        lines.append("           that is: %s; %s" % (trap[1], trap[2]))
    return lines


def after_right_numbers(cases):
    """The body of the diagnosis of a lab whose every printed number is the lesson's, in every case: what
    goes wrong comes after them, in the code that takes them on. Said of the first case NOT
    OK, from the values compare.judge() keeps: how the run ended, the tensor the lab stopped
    on, STEP 7's verdicts, the exit status."""
    c = next(c for c in cases if not c.judgement.ok)
    right = "every number the lab printed is right, in every case; "
    if c.run.ended:
        return ["what the lab printed is right as far as it went; then, in case %s, it %s: what runs "
                "after the last tensor it printed stops it" % (c.text, c.run.problem)]
    if c.run.refused and c.judgement.step == c.run.refused.step:
        return [right + "but STEP %s made %s something the lesson's code after it cannot take, and the lab stopped "
                "there, saying: %s" % (c.judgement.step, c.judgement.name, c.run.said),
                "           compute it as you did, and give it the shape and type that line names"]
    if c.judgement.verdicts:
        printed, expected = c.judgement.verdicts.printed, c.judgement.verdicts.expected
        if printed is None:
            return [right + "but it printed no STEP 7 line: STEP 7 prints its two checks, as the lesson does"]
        wrong = [(name, got, want) for name, got, want in zip(("(a), rows sum to 1,", "(b), causal,"),
                                                              verdict_words(printed), verdict_words(expected))
                 if got != want]
        said = " and ".join("%s said %s where these weights give %s" % w for w in wrong) or "printed another line"
        if parse_case(c.text).leak:
            return [right + "what goes wrong is STEP 7: its check %s, so it did not judge the weights your steps made"
                    % said,
                    "           in case %s the grader made LibTorch's softmax leak: its weights do not add up to 1 and "
                    "give weight to the future, and checks computed from the weights, as the lesson's are, say NO "
                    "there" % c.text]
        return [right + "what goes wrong is STEP 7: its check %s, so it did not judge the weights your steps made"
                % said,
                "           STEP 7 of the lesson looks at the weights alone; one that checks them through STEP 4's "
                "tril (weights.masked_fill(tril, 0.0), as older copies of the lesson do) needs tril of "
                "torch::kBool, the only mask masked_fill takes: take STEP 7 from the lesson, or mask with tril == 0"]
    if c.judgement.exit:
        status, expected = c.judgement.exit.status, c.judgement.exit.expected
        if compare.fused_disagrees(c.run.whole_out or c.run.out):
            return [right + "STEP 7's verdicts too, but LibTorch's fused attention disagrees with the heads' outputs "
                    "in outs: after STEP 6 printed each head's out, something changed it, or outs does not keep it "
                    "(outs[h] = out)"]
        return [right + "STEP 7's verdicts too, but the lab exited %s where they mean %d%s" % (
            status, expected, " (it said: %s)" % c.run.said if c.run.said else "")]
    if c.judgement.step == 8:
        return [right + "in every head, but STEP 8's %s differs: STEP 8 (the lesson's code) puts each head's out, "
                "kept in outs in the heads' order, side by side, and projects them with proj" % c.judgement.name]
    return [right + "case %s is NOT OK after them: start from its lines above" % c.text]


def verdict_words(line):
    """The two YES/NO words of a STEP 7 line, in order."""
    return re.findall(r": (YES|NO)\b", line or "")


def same_tensor_lines(case, ex):
    """A printed tensor that is not what it should be but equals another tensor of the
    lesson, or another tensor the lab printed (before or after it): a copy-paste slip that no
    catalogue lists. A tensor of one number (zeros, ones) equals any other such tensor, and
    says nothing of a slip: it is left out."""
    lesson = ex.predict(case.text, (), case.judgement.of_head)
    lines = []
    for _, name, _ in cases.TENSORS:
        block = case.evidence.blocks[name]
        if not isinstance(block, compare.Tensor) or compare.compare(block, lesson[name], name)[0] is None \
                or own_inputs.one_number(block.values.flatten()):
            continue
        for _, other, _ in cases.TENSORS:
            if other == name:
                continue
            if compare.compare(block, lesson[other])[0] is None:
                lines.append("same tensor: the %s printed in case %s equal the lesson's %s: was one "
                             "written where the other belongs?" % (name, case.text, other))
                break
            theirs = case.evidence.blocks[other]
            if isinstance(theirs, compare.Tensor) and (theirs.shape, theirs.rows, theirs.cols) == (
                    block.shape, block.rows, block.cols) and bool(compare.agreeing(block.values, theirs.values).all()):
                lines.append("same tensor: the %s printed in case %s equal the %s it printed: was "
                             "one written where the other belongs?" % (name, case.text, other))
                break
    return lines
