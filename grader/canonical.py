"""canonical.py: a lab's own code in a canonical form, so that copies are found through cheap
disguises (the similarity check's second comparison, similarity.py).

What the code does is kept, how it is spelled is not. The own code (similarity.own_code) is
split into statements; in each, every name is one word, except the names of LibTorch's
operations where they are called, each of which is mapped to one word for all its spellings
(mm, bmm and matmul are one; a variable named tril is a name like any other); numbers and strings are one word each; a declaration's type goes (auto, torch::Tensor,
const, a reference: `auto x = e;` is `x = e;`), and so does `torch::`; braces go (a block or a
lambda around copied lines); a statement with no effect goes (`(void)N;`, `x;`, `;`: no
assignment, call, return, throw or output). The labs are then compared as sets of statements,
in any order: reordered statements still match. What it cannot see is in docs/instructors.md.

  statements(own)           [(canonical statement, its first line)] of a lab's own code
  compare(labs, earlier)    pairs whose canonical statements are mostly alike, each pair on its own
"""
import re

TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\d[\w.]*|::|->|<<|>>|[-+*/%&|^<>=!]=|'
                   r'&&|\|\||\+\+|--|[^\s\w]')
# LibTorch's operations a lab uses, each spelling mapped to one word (what it computes).
OPERATIONS = {"matmul": "matmul", "mm": "matmul", "bmm": "matmul", "einsum": "matmul",
              "t": "transpose", "transpose": "transpose", "mT": "transpose", "permute": "transpose",
              "softmax": "softmax", "log_softmax": "log_softmax", "exp": "exp", "sum": "sum", "div": "div",
              "mul": "mul", "sqrt": "sqrt", "pow": "pow", "masked_fill": "masked_fill", "masked_fill_": "masked_fill",
              "where": "where", "tril": "tril", "triu": "triu", "ones": "ones", "zeros": "zeros", "randn": "randn",
              "max": "max", "amax": "max", "sub": "sub", "add": "add", "view": "view", "reshape": "view",
              "unsqueeze": "unsqueeze", "expand": "expand", "cat": "cat", "stack": "stack", "allclose": "allclose",
              "all": "all", "isinf": "isinf", "isnan": "isnan", "linear": "linear", "forward": "forward"}
TYPE_WORDS = {"auto", "const", "Tensor", "torch", "int", "int64_t", "double", "float", "bool", "long", "size_t",
              "unsigned", "std", "vector", "static", "constexpr", "volatile"}
KEYWORDS = {"if", "else", "for", "while", "do", "return", "throw", "true", "false", "nullptr", "new", "delete",
            "switch", "case", "break", "continue", "void"}
EFFECT = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "++", "--", "<<", "return", "throw", "break",
          "continue"}
MIN_TOKENS = 6  # a statement shorter than this ("x = y;") is one anyone writes: not compared


def tokens_of(own):
    """[(token, line number)] of own code [(line number, line)]."""
    return [(t, n) for n, line in own for t in TOKEN.findall(line)]


def normal(token, following=""):
    """A token's word: a name is "a", but a LibTorch operation called (followed by '(') is the
    operation's word: a variable named tril, renamed keep, is the same name."""
    if token[0] in "\"'":
        return '"'
    if token[0].isdigit():
        return "0"
    if token[0].isalpha() or token[0] == "_":
        if token in KEYWORDS:
            return token
        return OPERATIONS.get(token, "a") if following == "(" else "a"
    return token


def split(tokens):
    """The statements of a token stream: [(tokens, first line)], split at ';' outside parentheses
    and at every brace (a block, a lambda's body: its statements are the lab's)."""
    found, current, depth = [], [], 0
    for t, n in tokens:
        if t in "([":
            depth += 1
        elif t in ")]":
            depth = max(0, depth - 1)
        if t in "{}" or (t == ";" and depth == 0):
            if current:
                found.append(current)
            current = []
            if t in "{}":
                depth = 0
            continue
        current.append((t, n))
    if current:
        found.append(current)
    return found


def without_type(statement):
    """A declaration without its type: `const torch::Tensor& x = e` -> `x = e` (a statement
    whose words before its first '=' are a type and a name)."""
    words = [t for t, _ in statement]
    if "=" not in words:
        return statement
    head = words[:words.index("=")]
    if len(head) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", head[-1]) and all(
            w in TYPE_WORDS or w in ("::", "&", "*", "<", ">", ",") or re.fullmatch(r"[A-Za-z_]\w*", w)
            for w in head[:-1]) and any(w in TYPE_WORDS for w in head[:-1]):
        return statement[len(head) - 1:]
    return statement


def has_effect(words):
    """Whether a statement (normal words) does something: an assignment, a call (a word then
    '(', not a cast to void), an output, a return or a throw."""
    if any(w in EFFECT for w in words):
        return True
    calls = [i for i in range(len(words) - 1) if words[i + 1] == "(" and words[i] not in KEYWORDS]
    return bool(calls)


def as_function(words):
    """A method call on a name, `a . op ( x )`, as the function call `op ( a , x )`: LibTorch's two
    spellings of one operation (q.matmul(k) and torch::matmul(q, k)) made one."""
    out, i = [], 0
    while i < len(words):
        if words[i:i + 2] == ["a", "."] and i + 3 < len(words) and words[i + 3] == "(" and words[i + 2] != "a":
            out += [words[i + 2], "(", "a"] + ([","] if words[i + 4:i + 5] != [")"] else [])
            i += 4
        else:
            out.append(words[i])
            i += 1
    return out


def statements(own):
    """[(canonical statement, first line)] of a lab's own code: the statements that do
    something, each in its canonical form, each of at least MIN_TOKENS words."""
    found = []
    for statement in split(tokens_of(own)):
        statement = [(t, n) for t, n in without_type(statement) if t not in ("torch", "::")]
        if not statement:
            continue
        words = [normal(t, statement[i + 1][0] if i + 1 < len(statement) else "") for i, (t, _) in enumerate(statement)]
        if words[:3] == ["(", "void", ")"]:  # (void)x: a cast to void
            words = words[3:]
        if words[:4] == ["a", "<", "void", ">"]:  # static_cast<void>(x)
            words = words[4:]
        words = as_function(words)
        text = re.sub(r" , (- )?0(?= [,)])", "", " ".join(words))  # literal arguments: dim=-1, transpose(0, 1)
        if len(text.split()) >= MIN_TOKENS and has_effect(words):
            found.append((text, statement[0][1]))
    return found


def compare(labs, earlier=(), share=50, least=24):
    """Pairs of labs whose canonical statements are mostly alike, each pair judged on its own (a
    third copy never hides one): labs and earlier are [(name, [(statement, line)])]; earlier's
    are compared with labs only. A pair is listed when at least share percent of one lab's
    statements' words are in statements the other has too, and at least least words match.
    [{"a", "b", "a_share", "b_share", "a_lines", "b_lines", "earlier"}]."""
    everyone = [(name, stmts, False) for name, stmts in labs] + [(name, stmts, True) for name, stmts in earlier]
    index = {}
    for i, (_, stmts, _) in enumerate(everyone):
        for s, _ in stmts:
            index.setdefault(s, set()).add(i)
    pairs = []
    candidates = set()
    for holders in index.values():
        if len(holders) < 50:  # a statement most labs share is no sign of a copy
            members = sorted(holders)
            candidates.update((a, b) for x, a in enumerate(members) for b in members[x + 1:])
    for a, b in sorted(candidates):
        name_a, stmts_a, old_a = everyone[a]
        name_b, stmts_b, old_b = everyone[b]
        if old_a and old_b:
            continue
        in_b, in_a = {s for s, _ in stmts_b}, {s for s, _ in stmts_a}
        words = lambda stmts: sum(len(s.split()) for s, _ in stmts)
        shared_a = [(s, n) for s, n in stmts_a if s in in_b]
        shared_b = [(s, n) for s, n in stmts_b if s in in_a]
        a_share = round(100 * words(shared_a) / max(1, words(stmts_a)))
        b_share = round(100 * words(shared_b) / max(1, words(stmts_b)))
        if max(a_share, b_share) >= share and min(words(shared_a), words(shared_b)) >= least:
            pairs.append({"a": name_a, "b": name_b, "a_share": a_share if a_share >= share else 0,
                          "b_share": b_share if b_share >= share else 0, "earlier": old_a or old_b,
                          "a_lines": lines(shared_a), "b_lines": lines(shared_b)})
    return pairs


def lines(shared):
    """The first lines of shared statements, as ranges: "12-15, 20"."""
    numbers = sorted({n for _, n in shared})
    ranges, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] > n + 1:
            ranges.append("%d-%d" % (start, n) if n > start else "%d" % n)
            start = None
    return ", ".join(ranges[:6])
