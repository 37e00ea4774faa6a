"""blanking.py: the lesson read step by step, and each blanked STEP's code replaced by a TODO that
compiles (make_starter.py's starter): the lesson's comments stay (they are the hints), the
printing stays, and the statements that compute the step (those that define or change a
tensor) give way to a call not_written_yet(n, hint), which prints "STEP n: not written yet:
<hint>" and exits 4, and to plain declarations of what the later steps use.

  make_lab(source, blanks)   (the starter's lab, {STEP: its hint}); NotALesson, with one line,
                             for a source whose STEPs cannot be found
"""
import re

from lab04.checker import cases  # the checker's: the STEPs as the checker numbers them

DEFAULT_BLANKS = [3, 4, 5, 6]


class NotALesson(Exception):
    """The lab to blank is not the lesson as make_starter.py reads it: one line, exit 2."""


DECLARATION = re.compile(r"^(const\s+)?(torch::Tensor|torch::nn::Linear|bool)\s+(\w+)\b")
CHANGE = re.compile(r"^(if\s*\(([^)]*)\)\s*)?(\w+)\.\w+\(")  # scores.mul_(...), maybe under an if
# The tensors the lab holds to the lesson's shape and type once printed (peek, print_weights):
# a step that defines one must make it of that type, which its hint says.
PRINTED = re.compile(r"\b(?:peek|print_weights)\(opt,(?:\s*\"[^\"]*\",)?\s*(\w+)\)")
EMPTY = {"torch::Tensor": "torch::Tensor {};", "torch::nn::Linear": "torch::nn::Linear {}{{nullptr}};",
         "bool": "bool {} = false;"}


def code_of(line):
    """A line without its // comment and with its string literals emptied."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def unclosed_openers(lines):
    """The lines that open a block which the lines do not close: the head of a loop that runs
    this region and the next ones (the lesson's loop over the heads)."""
    opened = []
    for n, line in enumerate(lines):
        for c in code_of(line):
            if c == "{":
                opened.append(n)
            elif c == "}" and opened:
                opened.pop()
    return set(opened)


def statements(lines):
    """The region's lines as items: ("text", [line]) for comments, blank lines and the head of
    a block that goes on past the region, or ("code", [lines]) for one whole statement (a
    block counts as one)."""
    items, current, depth = [], [], 0
    heads = unclosed_openers(lines)
    for n, line in enumerate(lines):
        code = code_of(line).strip()
        if not current and (not code or n in heads):
            items.append(("text", [line]))
            continue
        current.append(line)
        depth += code.count("(") + code.count("{") - code.count(")") - code.count("}")
        if depth == 0 and code.endswith((";", "}")):
            items.append(("code", current))
            current = []
    if current:
        raise NotALesson("cannot read a statement of lab04_attention.cpp that ends near %r" % current[-1].strip()[:60])
    return items


def lesson_steps(source):
    """{step: (first line, end line)} of each STEP's region in main, and main's last line."""
    lines = source.split("\n")
    start = next((n for n, l in enumerate(lines) if re.match(r"^int main\(", l)), None)
    end = next((n for n in range(start or 0, len(lines)) if lines[n].startswith("} catch")), None)
    if start is None or end is None:
        raise NotALesson("cannot find main() and its closing '} catch' in lab04_attention.cpp: is it the lesson?")
    marks = {}
    for n in range(start, end):
        m = re.match(r"^\s*// STEP (\d+):", lines[n])
        if m:
            marks.setdefault(int(m.group(1)), n)
    missing = [n for n in cases.STEP_NUMBERS if n not in marks]
    if missing or sorted(marks.values()) != [marks[n] for n in cases.STEP_NUMBERS]:
        raise NotALesson("cannot find the comments '// STEP 1:' to '// STEP 7:' in order in main() of "
                    "lab04_attention.cpp%s: the lesson was edited beyond recognition" %
                    (" (no STEP %s)" % ", ".join(map(str, missing)) if missing else ""))
    bounds = {n: (marks[n], block_end(lines, marks[n], marks[n + 1] if n < cases.STEPS else end)) for n in cases.STEP_NUMBERS}
    return lines, bounds, end


def block_end(lines, first, last):
    """Where a STEP's region ends: at the next STEP, or sooner where the block that holds it
    closes (the lesson's loop over the heads ends with STEP 7)."""
    depth = 0
    for n in range(first, last):
        for c in code_of(lines[n]):
            depth += {"{": 1, "}": -1}.get(c, 0)
            if depth < 0:
                return n
    return last


def blanked(items):
    """(indices of the statements to blank, names they define with their types, what they change:
    (name, the condition it is changed under, or None))."""
    cut, defined, changed = [], [], []
    for i, (kind, lines) in enumerate(items):
        if kind != "code":
            continue
        code = " ".join(code_of(l).strip() for l in lines)
        d, c = DECLARATION.match(code), CHANGE.match(code)
        if d:
            cut.append(i)
            defined.append((d.group(2), d.group(3), lines[0]))
        elif c:
            cut.append(i)
            changed.append((c.group(3), c.group(2)))
    return cut, defined, changed


def hint_of(defined, changed, printed=()):
    """What a blank must do, in a line: the names it defines with the shape of the lesson's
    comment (and, for a tensor the lab prints, its type: the lab stops on another), then what it
    changes, and under which option: "define scores (T, T), a tensor of Float; then, if
    opt.scale, change scores"."""
    groups = []  # names that share a shape comment, in order
    for _, name, line in defined:
        m = re.search(r"//\s*(\(.*)$", line)
        shape = m.group(1).strip() if m else ""
        if groups and groups[-1][1] == shape:
            groups[-1][0].append(name)
        else:
            groups.append(([name], shape))
    parts = []
    for names, shape in groups:
        part = ", ".join(names) + (" " + shape if shape else "")
        if all(n in printed for n in names):
            part += ", a tensor of Float" if len(names) == 1 else ", tensors of Float"
        parts.append(part)
    hint = "define " + ", ".join(parts) if parts else "write this step"
    for name, condition in dict.fromkeys(changed):
        if condition or name not in [n for _, n, _ in defined]:
            hint += "; then, %schange %s" % ("if %s, " % condition.strip() if condition else "", name)
    return hint


def blank_step(step, region, rest):
    """The region of a STEP with its computing statements replaced by a TODO; rest is the text
    of main after this region (what it still uses must stay declared)."""
    items = statements(region)
    cut, defined, changed = blanked(items)
    if not cut:
        raise NotALesson("STEP %d of lab04_attention.cpp has no statement that defines or changes a "
                    "tensor: nothing to blank" % step)
    kept_text = "\n".join(code_of(l) for i, (_, ls) in enumerate(items) if i not in cut for l in ls) + rest
    needed = [(t, name) for t, name, _ in defined if re.search(r"\b%s\b" % name, kept_text)]
    hint = hint_of(defined, changed, set(PRINTED.findall(kept_text)))
    indent = re.match(r"^\s*", items[cut[0]][1][0]).group(0)
    todo = [indent + "// TODO(STEP %d): your code here, in place of the lines marked TODO(STEP %d)."
            % (step, step),
            indent + 'not_written_yet(%d, "%s");  // TODO(STEP %d)' % (step, hint, step)]
    todo += [indent + EMPTY[t].format(name) + "  // TODO(STEP %d)" % step for t, name in needed]
    out = []
    for i, (_, lines) in enumerate(items):
        if i == cut[0]:
            out += todo
        if i not in cut:
            out += lines
    return out, hint


def make_lab(source, blanks):
    """The lab with the STEPs of blanks left for the student: (text, {step: hint})."""
    lines, bounds, end = lesson_steps(source)
    out, hints, at = [], {}, 0
    for step in cases.STEP_NUMBERS:
        first, last = bounds[step]
        out += lines[at:first]
        if step in blanks:
            rest = "\n".join(code_of(l) for l in lines[last:end])
            region, hints[step] = blank_step(step, lines[first:last], rest)
            out += region
        else:
            out += lines[first:last]
        at = last
    out += lines[at:]
    return "\n".join(out), hints
