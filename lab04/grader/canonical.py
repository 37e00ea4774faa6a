"""canonical.py: a lab's own code in two forms that see through cheap disguises (the similarity
check's units, similarity.py).

The own code (similarity.own_code) is split into statements, each of which is made canonical:
a helper whose body is one `return` (a function or a lambda) is inlined where it is called; a
temporary used once is inlined where it is used (`auto kt = k.t(); auto s = q.mm(kt);` is
`s = q.mm(k.t())`); a declaration's type goes (auto, torch::Tensor, const, a reference), and so
do `torch::` and `std::`; braces go (a block or a lambda around copied lines; a braced list in a
call, `ones({T, T})`, stays); parentheses that only group go; a statement with no effect goes
(`(void)N;`, `x;`, `;`: no assignment, call, return, throw or output); every name is one word,
numbers and strings are one word each. Then two forms:

- spelled: each call keeps the name it was written with (`mm` or `matmul`, `t` or
  `transpose`, a method or a function, in place or not);
- canonical: LibTorch's spellings of one operation are one word (mm, bmm, matmul, einsum),
  a method call is the function call (q.matmul(k) is matmul(q, k)), an in-place method or a
  compound assignment is the assignment it makes (`s.mul_(x)` and `s *= x` are `s = s * x`),
  LibTorch's functions for operators are the operators (`div(a, b)` is `a / b`), and literal
  arguments go (dim=-1, transpose(0, 1)).

Statements are compared as sets: reordered statements still match. What it cannot see is in
docs/instructors.md.

  statements(own, spelled)   [(statement in that form, its first line)] of a lab's own code
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
              "all": "all", "eq": "eq", "isinf": "isinf", "isnan": "isnan", "linear": "linear", "forward": "forward"}
OPERATOR_OF = {"div": "/", "mul": "*", "sub": "-", "add": "+", "eq": "=="}
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
    """The statements of a token stream: [(tokens, first line)], split at ';' and at braces outside
    parentheses (a block, a lambda's body: its statements are the lab's; the braces of a list in
    a call, `torch::ones({T, T})`, are the call's)."""
    found, current, depth, lists = [], [], 0, 0
    for t, n in tokens:
        if t in "([":
            depth += 1
        elif t in ")]":
            depth = max(0, depth - 1)
        elif t == "{" and depth > 0 and current and current[-1][0] in "(,":
            lists += 1  # a braced list in a call: {T, T}
        elif t == "}" and lists:
            lists -= 1
        elif t in "{}" or (t == ";" and depth == 0):
            if current:
                found.append(current)
            current, depth, lists = [], 0, 0
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
    """A method call, `x . op ( y )`, as the function call `op ( x , y )`, whatever x is (a name,
    a call, an expression in parentheses): LibTorch's two spellings of one operation
    (q.matmul(k) and torch::matmul(q, k); (s - m).exp() and torch::exp(s - m)) made one."""
    words, i = list(words), 0
    while i < len(words):
        if words[i] == "." and i + 2 < len(words) and words[i + 2] == "(" and words[i + 1] != "a" and i > 0:
            if words[i - 1] == ")":  # the receiver: a call, or an expression in parentheses
                depth, start = 0, i - 1
                while start >= 0:
                    depth += {")": 1, "(": -1}.get(words[start], 0)
                    if depth == 0:
                        break
                    start -= 1
                if start > 0 and NAME.match(words[start - 1]) and words[start - 1] not in KEYWORDS:
                    start -= 1
            elif NAME.match(words[i - 1]):
                start = i - 1
            else:
                i += 1
                continue
            if start < 0:
                i += 1
                continue
            end = closing([(w, 0) for w in words], i + 2)
            inside = words[i + 3:end]
            words[start:end + 1] = [words[i + 1], "("] + words[start:i] + ([","] + inside if inside else []) + [")"]
            i = start + 2  # (its receiver and arguments may hold more)
            continue
        i += 1
    return words


def statements(own, spelled=False, keep=()):
    """[(statement, first line)]: statements_on_lines() with each statement's first line."""
    return [(text, lines[0]) for text, lines in statements_on_lines(own, spelled, keep)]


def statements_on_lines(own, spelled=False, keep=()):
    """[(canonical statement, [its lines])] of a lab's own code: the statements that do
    something, each in its canonical form, each of at least MIN_TOKENS words, with the lines its
    tokens came from (a temporary's line too, where it was inlined). spelled: a form
    between the line and the canonical one, that keeps how the student spelled each call
    (`mm` or `matmul`, a method or a function, in place or not, its literal arguments) and
    sees through names, types, temporaries, helpers, braces and order alone. keep: names never
    inlined (the lesson's: the lines of it that use them are not in own code, so a name used
    once in own code may be used again there)."""
    found = []
    parts = [[(t, n) for t, n in without_type(s) if t not in ("torch", "std", "::")] for s in split(with_helpers_inlined(
        tokens_of(own)))]
    parts = [p for p in parts if p]
    for statement in with_temporaries_inlined(parts if spelled else [in_place_spelled_out(p) for p in parts], keep):
        following = [statement[i + 1][0] if i + 1 < len(statement) else "" for i in range(len(statement))]
        words = [as_spelled(t, f) if spelled else normal(t, f) for (t, _), f in zip(statement, following)]
        if words[:3] == ["(", "void", ")"]:  # (void)x: a cast to void
            words = words[3:]
        if words[:4] == ["a", "<", "void", ">"]:  # static_cast<void>(x)
            words = words[4:]
        if spelled:
            words = without_grouping(words)
            text = " ".join(words)
        else:
            words = without_grouping(as_operators(without_grouping(as_function(words))))
            text = re.sub(r" , (- )?0(?= [,)])", "", " ".join(words))  # literal arguments: dim=-1, transpose(0, 1)
        if len(text.split()) >= MIN_TOKENS and has_effect(words):
            found.append((text, sorted({n for _, n in statement})))
    return found


def as_spelled(token, following=""):
    """A token's word in the spelled form: as normal(), but a call keeps the name it was written
    with (a helper's own name too, which renaming changes: it is one word, "f")."""
    if (token[0].isalpha() or token[0] == "_") and following == "(" and token not in KEYWORDS:
        return token if token in OPERATIONS or token.endswith("_") and token[:-1] in OPERATIONS else "f"
    return normal(token, following)


NAME = re.compile(r"[A-Za-z_]\w*$")


def closing(tokens, i):
    """The index of the bracket that closes tokens[i] (a '(' or '['), or len(tokens)."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(tokens[j][0], 0)
        if depth == 0:
            return j
    return len(tokens)


def arguments(tokens):
    """tokens split at the commas outside brackets: [[token, ...], ...] ([] for none)."""
    parts, current, depth = [], [], 0
    for token in tokens:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(token[0], 0)
        if token[0] == "," and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(token)
    return parts + [current] if current or parts else []


def with_helpers_inlined(tokens):
    """A token stream with its one-line helpers inlined: a function or a lambda whose body is
    `return EXPR;` (`torch::Tensor f(const torch::Tensor& a) { return ...; }`, `auto f = [&](auto
    a) { return ...; };`) is removed, and each call of it becomes EXPR with its parameters
    replaced by the call's arguments: a helper around copied lines hides nothing."""
    helpers, out, i = {}, [], 0
    while i < len(tokens):
        t = tokens[i][0]
        start = i
        if NAME.match(t) and i + 1 < len(tokens) and tokens[i + 1][0] == "=" and i + 2 < len(tokens) and \
                tokens[i + 2][0] == "[":  # name = [captures](params) { return ...; }
            name, i = t, closing(tokens, i + 2) + 1
        elif NAME.match(t) and t not in KEYWORDS and t not in OPERATIONS and out and (
                NAME.match(out[-1][0]) or out[-1][0] in ("&", "*", ">")) and i + 1 < len(tokens) and tokens[i + 1][0] == "(":
            name, i = t, i + 1  # type name(params) { return ...; }
        else:
            out.append(tokens[i])
            i += 1
            continue
        if i >= len(tokens) or tokens[i][0] != "(":
            out += tokens[start:i]
            continue
        end = closing(tokens, i)
        params = [next((x for x, _ in reversed(p) if NAME.match(x) and x not in TYPE_WORDS), "") for p in
                  arguments(tokens[i + 1:end])]
        j = end + 1
        while j < len(tokens) and tokens[j][0] not in ("{", ";"):  # -> type, const
            j += 1
        if j + 1 < len(tokens) and tokens[j][0] == "{" and tokens[j + 1][0] == "return":
            k = j + 2
            while k < len(tokens) and tokens[k][0] != ";":
                k = closing(tokens, k) + 1 if tokens[k][0] in "([" else k + 1
            helpers[name] = (params, tokens[j + 2:k])
            i = k + 1
            while i < len(tokens) and tokens[i][0] in ("}", ";"):
                i += 1
            if out and NAME.match(out[-1][0]) or (out and out[-1][0] in ("&", "*", ">")):
                while out and (NAME.match(out[-1][0]) or out[-1][0] in ("&", "*", ">", "<", "::", ",")) and \
                        out[-1][0] not in KEYWORDS:
                    out.pop()  # the helper's return type
            continue
        out += tokens[start:i]
    if not helpers:
        return tokens
    return calls_replaced(out, helpers)


def calls_replaced(tokens, helpers, depth=0):
    """tokens with each call of a helper ({name: (params, body tokens)}) replaced by its body."""
    out, i = [], 0
    while i < len(tokens):
        t, n = tokens[i]
        if t in helpers and i + 1 < len(tokens) and tokens[i + 1][0] == "(" and depth < 2:
            end = closing(tokens, i + 1)
            params, body = helpers[t]
            given = dict(zip(params, arguments(tokens[i + 2:end])))
            expanded = []
            for x in body:
                expanded += [("(", n)] + given[x[0]] + [(")", n)] if x[0] in given else [(x[0], n)]
            out += [("(", n)] + calls_replaced(expanded, helpers, depth + 1) + [(")", n)]
            i = end + 1
        else:
            out.append(tokens[i])
            i += 1
    return out


def in_place_spelled_out(statement):
    """`x.op_(args)` as `x = x.op(args)`, and `x op= e` as `x = x op (e)` (after an if's
    condition, if any): LibTorch's in-place methods and C++'s compound assignments spelled as the
    assignment they make."""
    head = []
    if statement and statement[0][0] == "if" and len(statement) > 1 and statement[1][0] == "(":
        end = closing(statement, 1)
        head, statement = statement[:end + 1], statement[end + 1:]
    if len(statement) >= 4 and NAME.match(statement[0][0]) and statement[1][0] == "." and \
            statement[2][0].endswith("_") and statement[3][0] == "(" and closing(statement, 3) == len(statement) - 1:
        n = statement[0][1]
        return head + [statement[0], ("=", n), statement[0], (".", n), (statement[2][0][:-1], n)] + statement[3:]
    if len(statement) >= 3 and NAME.match(statement[0][0]) and statement[1][0] in ("+=", "-=", "*=", "/="):
        n = statement[0][1]
        return head + [statement[0], ("=", n), statement[0], (statement[1][0][0], n), ("(", n)] + statement[2:] + [(")", n)]
    return head + statement


def with_temporaries_inlined(parts, keep=()):
    """Statements with their temporaries inlined: `x = e` where x is used once after it, and is
    never given another value, is removed, and that use becomes (e): an expression split over
    temporaries is the expression."""
    parts = list(parts)
    i = 0
    while i < len(parts):
        s = parts[i]
        if len(s) >= 3 and NAME.match(s[0][0]) and s[1][0] == "=" and s[0][0] not in KEYWORDS and s[0][0] not in keep:
            name, uses, where = s[0][0], 0, None
            for j in range(i + 1, len(parts)):
                later = parts[j]
                here = [x for x, (t, _) in enumerate(later) if t == name and not (x and later[x - 1][0] in (".", "->"))]
                if later[:2] and later[0][0] == name and later[1][0] == "=":
                    uses += 2  # given another value: `x = f(x)` keeps its statements apart
                    break
                uses += len(here)
                if here and where is None:
                    where = (j, here[0])
            if uses == 1 and where:
                j, x = where
                n = parts[j][x][1]
                parts[j] = parts[j][:x] + [("(", n)] + s[2:] + [(")", n)] + parts[j][x + 1:]
                del parts[i]
                continue
        i += 1
    return parts


def as_operators(words):
    """`div ( x , y )` as `( x / y )`, and so for mul, sub, add and eq: LibTorch's functions for
    C++'s operators spelled as the operators."""
    words, i = list(words), 0
    while i < len(words):
        if words[i] in OPERATOR_OF and i + 1 < len(words) and words[i + 1] == "(":
            end = closing([(w, 0) for w in words], i + 1)
            args = arguments([(w, 0) for w in words[i + 2:end]])
            if len(args) == 2 and end < len(words):
                words[i:end + 1] = ["("] + [w for w, _ in args[0]] + [OPERATOR_OF[words[i]]] + \
                    [w for w, _ in args[1]] + [")"]
                continue  # (its arguments may hold more)
        i += 1
    return words


def without_grouping(words):
    """words without the parentheses that only group (not a call's, not an if's): (a / b) is a / b."""
    drop, stack = set(), []
    for i, w in enumerate(words):
        if w == "(":
            grouping = i == 0 or not (words[i - 1] in (")", "]", ">", "if", "for", "while", "switch") or (
                NAME.match(words[i - 1]) and words[i - 1] not in ("return", "throw", "case")))
            stack.append((i, grouping))
        elif w == ")" and stack:
            j, grouping = stack.pop()
            if grouping:
                drop.update((i, j))
    return [w for i, w in enumerate(words) if i not in drop]
