"""cases.py: the lesson's cases and the shape of what the lab prints for them.

The bottom of the checker: plain data and rules, no torch, no running. Every other module of
the checker (and the class grader, the watch's verdict, the kit) takes the cases, the tensors
of the lesson and the limits of a run from here.

A case is seed,tokens,embed,head, then optionally ,heads=N (N heads, each of size head),
,no-scale and/or ,no-mask, and ,leaky-softmax (no option of the lab's: its run loads
engine/leaky_softmax.cpp, which makes LibTorch's softmax leak, so that both checks of STEP 7
must say NO); the lab runs it with --digits 9 --verbose (arguments()), which
prints every tensor of TENSORS in full, or, past SHOW_ALL rows or columns, its first and last
SHOW_ENDS; with several heads, each head's under its "HEAD h of N" line.
"""
import dataclasses
import random
import re

DEFAULT_CASES = ["3,4,6,6", "7,5,8,3,heads=2", "42,20,12,4", "0,1,1,1", "11,20,6,9,no-scale",
                 "3,4,6,6,no-mask"]
# The cases of a grade print every entry (no size above 16), so that each step can be
# recomputed from what the lab printed for the step before it. These are public: a student's
# own grade (check_lab.py --grade) uses them. An instructor's grade draws cases of the same
# kinds anew (draw_grade_cases), which no student has seen.
# The last two are twins: the same sizes, another seed, so that another x. A printed tensor
# that a STEP takes as its input and that is the same in both was not computed from x: it is no
# evidence for that STEP (grading.py). Their tokens are as many as the head's size, so that a
# lab with a shape slip (q transposed instead of k; v times the weights) runs to its end there,
# and its STEPs after the slip are judged. The last case's softmax leaks (leaky-softmax): where
# every other case's weights pass both checks of STEP 7, its fail both, so that a STEP 7 written
# in advance (`sums_ok = true;`) is wrong there.
GRADE_CASES = ["3,4,6,6", "7,5,8,3", "0,1,1,1", "11,12,6,9,no-scale", "3,4,6,6,no-mask", "42,16,12,4",
               "7,5,8,3,heads=2", "5,6,8,6", "9,6,8,6", "13,6,10,5,leaky-softmax"]
STEP_NAMES = {1: "the input x", 2: "query, key and value", 3: "the scores", 4: "the causal mask",
              5: "softmax", 6: "the output", 7: "the two checks and the exit status"}
STEPS = len(STEP_NAMES)  # the lesson's steps (STEP 8, joining several heads, is no step of a grade)
STEP_NUMBERS = range(1, STEPS + 1)  # every count and list of the steps reads these two

# The tensors in the order of the lesson: (step, name, header of the block that prints it).
TENSORS = [(1, "x", "    x, shape"), (2, "q", "    q, shape"), (2, "k", "    k, shape"),
           (2, "v", "    v, shape"), (3, "scores", "    scores before the mask, shape"),
           (4, "masked scores", "    scores after the mask, shape"),
           (5, "weights", "STEP 3-5:"), (6, "out", "    out, shape")]

MAX_SIZE = 4096  # the lab's largest --tokens, --embed and --head
MAX_HEADS = 16  # the lab's largest --heads
SHOW_ALL, SHOW_ENDS = 16, 8  # the lab condenses a matrix past 16 rows or columns to 8 + 8
ABS_TOL, REL_TOL = 1e-6, 1e-5  # the same LibTorch agrees exactly; this leaves room for a BLAS

# The lab's exit statuses that say something of their own (its README's table): a step not
# written yet (a starter's blank), and a step's tensor that the lesson's code after it cannot
# take (its shape or type), named in a line on stderr.
EXIT_NOT_WRITTEN_YET, EXIT_NOT_THE_LESSONS_TENSOR = 4, 5

# What one run of the lab may take and print, whoever runs it (the memory, process and file
# limits are the sandbox's: limits.limits()).
TIMEOUT = 60.0  # seconds, for a program that loads LibTorch (a 4096-token lab takes about 1 s)
CLASS_TIMEOUT = 10.0  # seconds, for a run forked from a process that has loaded it (0.03 s)
WATCH_TIMEOUT = 5.0  # seconds, for the watch's verdict: a hang costs this once, then it says so
MAX_STDOUT = 4 << 20  # bytes of a run's output kept: the default cases print about 40 kB
MAX_STDERR = 256 << 10


class BadCase(ValueError):
    """A case that is not seed,tokens,embed,head[,heads=N][,no-scale][,no-mask]: its message
    says so."""


@dataclasses.dataclass(frozen=True)
class Case:
    """A case, as a value: the text it was given as, and what that says."""
    text: str  # seed,tokens,embed,head[,heads=N][,no-scale][,no-mask][,leaky-softmax]
    seed: int
    tokens: int  # T
    embed: int  # C
    head: int  # the head's size
    heads: int = 1
    scale: bool = True  # False: no-scale
    mask: bool = True  # False: no-mask
    leak: bool = False  # leaky-softmax: LibTorch's softmax made to leak in the lab (a grade's last case)


def parse_case(text):
    """The Case a text gives (BadCase if malformed)."""
    fields = text.split(",")
    try:
        seed, tokens, embed, head = (int(f) for f in fields[:4])
    except ValueError:
        fields = []
    flags = fields[4:]
    counts = [f[len("heads="):] for f in flags if f.startswith("heads=")]
    heads = int(counts[0]) if len(counts) == 1 and re.fullmatch(r"[1-9]\d?", counts[0]) else None
    if (len(fields) < 4 or seed < 0 or not all(1 <= n <= MAX_SIZE for n in (tokens, embed, head))
            or any(f not in ("no-scale", "no-mask", "leaky-softmax") and not f.startswith("heads=") for f in flags)
            or (counts and not (heads and heads <= MAX_HEADS))):
        raise BadCase("bad case %r: expected seed,tokens,embed,head (sizes 1 to %d) optionally "
                      "followed by ,heads=N (1 to %d), ,no-scale, ,no-mask and/or ,leaky-softmax" % (
                          text, MAX_SIZE, MAX_HEADS))
    return Case(text=text, seed=seed, tokens=tokens, embed=embed, head=head, heads=heads or 1,
                scale="no-scale" not in flags, mask="no-mask" not in flags, leak="leaky-softmax" in flags)


def arguments(case):
    """The lab's options for a case (after the program's name)."""
    args = ["--seed", str(case.seed), "-T", str(case.tokens), "-C", str(case.embed),
            "--head", str(case.head)] + (["--heads", str(case.heads)] if case.heads > 1 else []) + \
        ["--digits", "9", "--verbose"]
    return args + ([] if case.scale else ["--no-scale"]) + ([] if case.mask else ["--no-mask"])


def prints_every_entry(case):
    """Whether the lab prints each of this case's tensors whole (no size past SHOW_ALL)."""
    return all(n <= SHOW_ALL for n in (case.tokens, case.embed, case.head))


def shown(n):
    """Indices of n rows (or columns) the lab prints."""
    return list(range(n)) if n <= SHOW_ALL else list(range(SHOW_ENDS)) + list(range(n - SHOW_ENDS, n))


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # what a terminal obeys: ESC, BEL, CR, ...


def escaped(text, keep="", named=None):
    """Text with its control characters shown as \\xNN, or as named names them ({"\\n": "\\\\n"});
    those in keep stay as they are. The one escape of every text the project shows."""
    named = named or {}
    return CONTROL.sub(lambda m: m.group() if m.group() in keep else named.get(m.group(), "\\x%02x" % ord(m.group())),
                       text)


def printable(text):
    """Text with its control characters (ESC, BEL, CR, ...: a terminal would obey them) shown
    as \\xNN; tabs and line breaks kept: how any of the lab's own text is shown."""
    return escaped(text, keep="\t\n")


# --- cases no student has seen ----------------------------------------------------------------

MAX_DRAW = (1 << 63) - 1  # the largest seed of a draw


def parse_draw(text):
    """A draw's seed as an instructor gives it (--draw): a whole number from 0 to MAX_DRAW;
    ValueError, with what is accepted, otherwise."""
    value = (text or "").strip()
    if not re.fullmatch(r"\d{1,19}", value) or int(value) > MAX_DRAW:
        raise ValueError("--draw takes the seed of a draw of cases, a whole number from 0 to %d (as a summary "
                         "or a result names it), not %r" % (MAX_DRAW, value[:40]))
    return int(value)


def new_draw():
    """A seed for a new draw, from the system's randomness: nobody can know it in advance."""
    return random.SystemRandom().randrange(1 << 48)


class _Sizes:
    """Draws for one grade: seeds of the lab, and sizes from 2 to SHOW_ALL (every entry
    printed) that differ where the kind says so. Only random.Random's getrandbits is used,
    whose numbers for a seed are the same in every Python."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def below(self, n):
        bits = max(1, (n - 1).bit_length())
        while True:
            r = self.rng.getrandbits(bits)
            if r < n:
                return r

    def seed(self):
        return self.below(1 << 31)

    def size(self, low=2, high=SHOW_ALL, besides=()):
        while True:
            n = low + self.below(high - low + 1)
            if n not in besides:
                return n

    def distinct(self, count, besides=()):
        got = []
        for _ in range(count):
            got.append(self.size(besides=tuple(besides) + tuple(got)))
        return got


def _same_shape(d, flags=""):  # the Python lab's shape: C = HEAD, T another (below 16 tokens)
    t = d.size(high=SHOW_ALL - 1)
    c = d.size(besides=(t,))
    return "%d,%d,%d,%d%s" % (d.seed(), t, c, c, flags)


def _all_sizes_differ(d, flags=""):
    t = d.size(high=SHOW_ALL - 1)
    c, h = d.distinct(2, besides=(t,))
    return "%d,%d,%d,%d%s" % (d.seed(), t, c, h, flags)


def _one_token(d):
    c = d.size(low=1)
    return "%d,1,%d,%d" % (d.seed(), c, c)


def _sixteen_tokens(d):
    c, h = d.distinct(2, besides=(SHOW_ALL,))
    return "%d,%d,%d,%d" % (d.seed(), SHOW_ALL, c, h)


def _several_heads(d):
    heads = 2 + d.below(3)
    return _all_sizes_differ(d, ",heads=%d" % heads)


def _tokens_as_head(d):  # T = HEAD, C another; kept for its twin
    t = d.size(low=3, high=SHOW_ALL - 1)
    c = d.size(besides=(t,))
    d.twin = (d.seed(), t, c)
    return "%d,%d,%d,%d" % (d.twin[0], t, c, t)


def _twin(d):  # the case before, with another seed
    first, t, c = d.twin
    seed = d.seed()
    while seed == first:
        seed = d.seed()
    return "%d,%d,%d,%d" % (seed, t, c, t)


def twins(case_texts):
    """The pairs of cases (their indexes) that differ only in their seed: each pair shows
    whether what a lab printed changes with x."""
    keys = {}
    for i, text in enumerate(case_texts):
        c = parse_case(text)
        keys.setdefault((c.tokens, c.embed, c.head, c.heads, c.scale, c.mask, c.leak), []).append(
            (c.seed, i))
    pairs = []
    for found in keys.values():
        found = sorted(set(found))
        pairs += [(a[1], b[1]) for a, b in zip(found, found[1:]) if a[0] != b[0]]
    return pairs


# Each public grade case, and how a case of its kind is drawn: the same flags, the same sizes
# equal or different, the same condensing (none).
GRADE_KINDS = [("3,4,6,6", _same_shape), ("7,5,8,3", _all_sizes_differ), ("0,1,1,1", _one_token),
               ("11,12,6,9,no-scale", lambda d: _all_sizes_differ(d, ",no-scale")),
               ("3,4,6,6,no-mask", lambda d: _same_shape(d, ",no-mask")), ("42,16,12,4", _sixteen_tokens),
               ("7,5,8,3,heads=2", _several_heads), ("5,6,8,6", _tokens_as_head), ("9,6,8,6", _twin),
               ("13,6,10,5,leaky-softmax", lambda d: _all_sizes_differ(d, ",leaky-softmax"))]


def draw_grade_cases(seed):
    """The cases of a grade drawn from seed: a case of each kind of GRADE_CASES, with a seed
    and sizes of its own; the same cases for the same seed, on any machine."""
    d = _Sizes(seed)
    return [draw(d) for _, draw in GRADE_KINDS]


def parse_points(text):
    try:
        points = [float(p) for p in text.split(",")]
        assert len(points) == STEPS and all(0 <= p <= 1000 for p in points) and sum(points) > 0
    except (ValueError, AssertionError):
        raise ValueError("--points takes %d numbers from 0 to 1000, one for each STEP, joined by commas "
                         "(such as 1,1,2,2,2,1,1), not %r" % (STEPS, text[:80]))
    return points


def fmt(x):
    return ("%g" % x)
