"""slips.py: the line of a student's own code that made a known mistake, in the words a
diagnosis starts with.

The checker finds a mistake from the numbers a lab printed (mistakes.py); several lines of C++
print the same numbers: a scale left out, and scores.mul(...) whose result is dropped, say.
Where the lab's source is at hand (the watch's and --once's file, the class grader's copy, a
build's own lab04_attention.cpp), the statement that did it is found there and quoted, with
its fix: "your line `scores.mul(1.0 / std::sqrt(double(HEAD)));` returns a new tensor and
leaves scores as they were: write scores.mul_(...)". Without it, or where no statement
matches, the catalogue's own words stand (mistakes.py's did, which name the usual slip).

  lead(mistake_id, source)   the words that name the slip in the source, or None
  order_slip(source)         a matrix product written in the wrong order, in words, or None
  shape_slip(name, shape, case)   a tensor of a shape a slip of order makes, in words
  source_of_build(lab)       the C++ a build compiled the program lab from (its CMakeCache.txt)
  signature(source)          what lead() would find, for a kept verdict's key (memo.py)
"""
import os
import re

from lab04.checker import cases

# Each known mistake's spellings: (what a statement of the source looks like, the words,
# where {line} is that statement as the student wrote it). The first that matches is said.
SPELLINGS = {
    "no_scale": [
        (r"^scores\s*\.\s*(mul|div)\s*\(", "your line `{line}` returns a new tensor and leaves scores as they were: "
         "write scores.{0}_(...) (with the underscore, in place), or scores = scores.{0}(...)"),
        (r"^scores\s*[*/]\s*[^=]", "your line `{line}` computes a new tensor and drops it: write scores = {rest}, or "
         "use *= or /="),
        (r"^(torch::)?(mul|div)\s*\(\s*scores\b", "your line `{line}` returns a new tensor and leaves scores as they "
         "were: assign it, scores = {line_without_semicolon}"),
    ],
    "no_mask": [
        (r"masked_fill_?\s*\(\s*1\s*-\s*\w+", "your line `{line}` gives masked_fill a mask of floats (1 - tril), "
         "which LibTorch 1.13 ignores without a word (masked_fill takes a mask of bool): mask with tril == 0, or "
         "tril.logical_not() of a tril of torch::kBool"),
        (r"^scores\s*\.\s*masked_fill\s*\(", "your line `{line}` returns a new tensor and leaves scores as they were: "
         "write scores.masked_fill_(...) (with the underscore, in place), or scores = scores.masked_fill(...)"),
        (r"^(torch::)?masked_fill\s*\(\s*scores\b", "your line `{line}` returns a new tensor and leaves scores as they "
         "were: assign it, scores = {line_without_semicolon}"),
    ],
    "scale_ignores_no_scale": [
        (r"^(scores\s*(\.\s*(mul_|div_)\s*\(|[*/]=)|scores\s*=\s*scores\s*[*/])",
         "your line `{line}` scales the scores with --no-scale too: put it under if (opt.scale)"),
        (r"(matmul|mm)\s*\(.*\)\s*[*/]\s*\S", "your line `{line}` scales the scores with --no-scale too: scale "
         "them apart, under if (opt.scale)"),
    ],
    "softmax_over_dim_0": [
        (r"softmax\s*\(\s*scores\s*,\s*(/\*[^*]*\*/\s*)?0\s*\)|softmax\s*\(\s*(/\*[^*]*\*/\s*)?0\s*\)",
         "your line `{line}` makes each column sum to 1, over dimension 0: write -1 there, the last dimension (each row)"),
    ],
    "mask_one_diagonal_up": [
        (r"\btril_?\s*\(\s*(/\*[^*]*\*/\s*)?1\s*\)", "your line `{line}` keeps one diagonal too many (diagonal 1): "
         "write tril_() (diagonal 0)"),
    ],
    "mask_one_diagonal_down": [
        (r"\btril_?\s*\(\s*(/\*[^*]*\*/\s*)?-\s*1\s*\)", "your line `{line}` keeps one diagonal too few (diagonal -1): "
         "write tril_() (diagonal 0)"),
    ],
    "mask_filled_with_zero": [
        (r"\bscores\s*\.\s*tril_?\s*\(", "your line `{line}` zeroes the future instead of masking it, and softmax gives "
         "a score of 0 a weight of its own: fill the future with -INFINITY, masked_fill_(tril.logical_not(), -INFINITY)"),
        (r"masked_fill_?\s*\(.*,\s*0(\.0*)?f?\s*\)", "your line `{line}` fills the future with 0, a score softmax still "
         "weighs: fill it with -INFINITY"),
    ],
    "mask_filled_with_plus_inf": [
        (r"masked_fill_?\s*\(.*,\s*\+?\s*(INFINITY|std::numeric_limits<float>::infinity\(\))\s*\)",
         "your line `{line}` fills the future with +inf, so softmax gives nan: write -INFINITY, with the minus sign"),
    ],
    "scale_integer_division": [
        (r"\b1\s*/\s*(HEAD|std::sqrt\s*\(\s*HEAD\s*\))", "your line `{line}` divides two integers, which gives 0 in "
         "C++ (Python's / gives a fraction): write 1.0 / std::sqrt(double(HEAD))"),
    ],
    "scores_queries_times_queries": [
        (r"\bq\s*\.\s*(matmul|mm)\s*\(\s*q\b", "your line `{line}` scores the queries against the queries: write "
         "q.matmul(k.transpose(-2, -1))"),
    ],
    "scores_keys_times_queries": [
        (r"\bk\s*\.\s*(matmul|mm)\s*\(\s*q\b", "your line `{line}` scores the keys against the queries (row i is "
         "token i's key): write q.matmul(k.transpose(-2, -1))"),
    ],
    "weights_times_keys": [(r"\bweights\s*\.\s*(matmul|mm)\s*\(\s*k\s*\)", "your line `{line}` blends the keys: "
                            "write weights.matmul(v)")],
    "weights_times_queries": [(r"\bweights\s*\.\s*(matmul|mm)\s*\(\s*q\s*\)", "your line `{line}` blends the "
                               "queries: write weights.matmul(v)")],
    "weights_times_x": [(r"\bweights\s*\.\s*(matmul|mm)\s*\(\s*x\s*\)", "your line `{line}` blends the input x: "
                         "write weights.matmul(v)")],
    "log_softmax": [(r"\blog_softmax\s*\(", "your line `{line}` gives logarithms of weights: write torch::softmax")],
}

# A matrix product written in the wrong order: its tensor has a shape the next step cannot
# take (the lab stops and names it), or the product itself cannot be made (LibTorch stops it).
ORDER_SLIPS = [
    (r"\bq\s*\.\s*(transpose\s*\(\s*-?\s*2\s*,\s*-?\s*1\s*\)|t\s*\(\s*\)|mT\b)\s*\.\s*(matmul|mm)\s*\(\s*k\b",
     "your line `{line}` transposes q instead of k: write q.matmul(k.transpose(-2, -1))"),
    (r"\bv\s*\.\s*(matmul|mm)\s*\(\s*weights\b", "your line `{line}` multiplies in the wrong order: write "
     "weights.matmul(v), (T, T) @ (T, HEAD)"),
    (r"\b(torch::)?(matmul|mm)\s*\(\s*v\s*,\s*weights\b", "your line `{line}` multiplies in the wrong order: write "
     "torch::matmul(weights, v), (T, T) @ (T, HEAD)"),
]


def statements(source):
    """The statements of the source's main (comments and strings' contents left out), each on
    one line, as (statement, as written)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: m.group() if m.group().startswith("/*") and len(m.group()) < 30
                  else " ", source, flags=re.S)  # (short /* ... */ stay: /*dim=*/-1 is part of a call)
    at = text.find("int main(")
    end = text.find("\n}", at) if at >= 0 else -1
    body = text[at:end] if at >= 0 and end > at else text
    found = []
    for part in split_statements(body):
        written = " ".join(part.split())
        plain = re.sub(r"^(if|while|for)\s*\(.*?\)\s*", "", written.lstrip("{} "))
        plain = re.sub(r"^(const\s+)?(torch::Tensor|auto)\s*&?\s*\w+\s*=\s*", "", plain)
        if plain:
            found.append((plain, written.lstrip("{} ")))
    return found


def split_statements(text):
    """The text cut after each ; and each brace of a block, never inside parentheses or a
    braced list ({T, T} is part of its expression)."""
    parts, start, parens, lists = [], 0, 0, 0
    for i, c in enumerate(text):
        if c == "(":
            parens += 1
        elif c == ")":
            parens = max(parens - 1, 0)
        elif c == "{":
            before = text[:i].rstrip()
            if parens or lists or not (before.endswith((")", "else", "do", "try", ";", "{", "}")) or not before):
                lists += 1
                continue
        elif c == "}" and lists:
            lists -= 1
            continue
        if (c == ";" and not parens) or (c in "{}" and not parens and not lists):
            parts.append(text[start:i + 1])
            start = i + 1
    return parts + [text[start:]]


def quoted(line):
    """A line of the student's, as a diagnosis shows it: its control characters as \\xNN (the
    student's text is shown, never obeyed: a report, a gradebook, a terminal), at most 90 wide."""
    line = cases.escaped(line)
    return line if len(line) <= 90 else line[:87] + "..."


def words_for(pattern, template, source, guarded_by=None):
    for plain, written in statements(source):
        m = re.search(pattern, plain)
        if not m or (guarded_by is not None and guarded_by(written)):
            continue
        line = written.strip()
        return template.format(m.group(1) if m.groups() and m.group(1) and m.group(1).isalpha() else "",
                               line=quoted(line), line_without_semicolon=quoted(plain.rstrip(";")),
                               rest=quoted(plain.rstrip(";")))
    return None


def lead(mistake_id, source):
    """The words naming the statement of source that made the mistake, and its fix; None
    without a source or a statement that matches."""
    if not source:
        return None
    for pattern, template in SPELLINGS.get(mistake_id, []):
        # A scale that ignores --no-scale is one that no `if (opt.scale)` guards.
        guarded = (lambda w: "opt.scale" in w) if mistake_id == "scale_ignores_no_scale" else None
        said = words_for(pattern, template, source, guarded)
        if said:
            return said
    return None


def order_slip(source):
    """A matrix product of the source written in the wrong order, in words, or None."""
    if not source:
        return None
    for pattern, template in ORDER_SLIPS:
        said = words_for(pattern, template, source)
        if said:
            return said
    return None


def shape_slip(name, shape, case):
    """Words for a tensor whose shape a slip of order gives (scores of (HEAD, HEAD): q was
    transposed, not k), or None."""
    T, HEAD = case.tokens, case.head
    if name in ("scores", "masked scores") and shape == (HEAD, HEAD) and T != HEAD:
        return ("q was transposed instead of k: (HEAD, T) @ (T, HEAD) gives scores of (HEAD, HEAD) = (%d, %d); "
                "transpose k: q.matmul(k.transpose(-2, -1)), (T, HEAD) @ (HEAD, T) -> (T, T)" % (HEAD, HEAD))
    return None


def source_of_build(lab):
    """The C++ a build of the project compiled the program lab from: the lab04_attention.cpp of
    the project that the CMakeCache.txt in lab's folder, or the one above it, names; None where
    there is none, or where it was saved after lab was built (what it says is not what ran)."""
    folder = os.path.dirname(os.path.abspath(lab))
    for build in (folder, os.path.dirname(folder)):
        try:
            with open(os.path.join(build, "CMakeCache.txt"), errors="replace") as f:
                home = next((line.split("=", 1)[1].strip() for line in f
                             if line.startswith("CMAKE_HOME_DIRECTORY:")), None)
        except OSError:
            continue
        path = home and os.path.join(home, "lab04_attention.cpp")
        try:
            if path and os.path.getmtime(path) <= os.path.getmtime(lab):
                with open(path, encoding="utf-8", errors="replace") as f:
                    return f.read()
        except OSError:
            pass
        return None
    return None


def signature(source):
    """What lead() and order_slip() find in source, as a value (a kept verdict's key: a verdict
    quotes these lines)."""
    if not source:
        return ()
    return tuple(sorted((k, lead(k, source) or "") for k in SPELLINGS)) + (("order", order_slip(source) or ""),)
