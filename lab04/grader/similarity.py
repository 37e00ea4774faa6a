"""similarity.py: labs whose students' own code shares what students who worked alone would not
share, as a hint for the class summary.

A lab's own code is what its student wrote: its lines, less every line that is the lesson's or
the handed-out template's (the lesson, a starter's lines, any file given as a template, and the
code their comments spell out), compared with names, numbers and strings alike; a comment never
changes what a line is (a TODO(STEP n) after a copied line leaves it the student's). It is
compared in two forms: line by line, and statement by statement in a canonical form
(canonical.py: names, types, braces, temporaries, helpers, statements without effect and their
order made alike), which sees through cheap disguises.

What two labs share is weighed by how rare it is in this class (and in earlier terms' labs,
where given): a line most students wrote is no evidence, one no one else wrote is strong
evidence. A pair is named only when two students who worked alone would share that much with
a chance below CHANCE over the whole class (weighed()): a hint to look at the two side by side,
never a verdict, never a change of grade.

  own_code(text, template)      a lab's own code: [(line number, line)] of the lines it keeps
  template_keys(texts)          the lines of the lesson and the template, as they are compared
  look_alike(labs, earlier)     the pairs, as values (a dict: checked, pairs, compared, seconds)
  groups(pairs)                 the labs of those pairs, joined into groups
"""
import math
import re

from lab04.grader import canonical

OWN = 16  # tokens of own code a lab needs to be compared (a line): what is shorter is weighed as
# any other code would be, but cannot reach the bar
MAX_OWN = 3000  # tokens of own code a lab may have to be compared (a lab's STEPs are a few hundred):
# more is left out of the comparison, named in the summary (a lab of 10 MB is not parsed)
MIN_LABS = 10  # labs with code of their own (with earlier terms'), to tell what is rare
LINE_WORDS = 5  # a line shorter than this (`}`, `x = y;`) is one anyone writes: not compared
FORMS = 3  # a line is shared as it is, in the spelled form or in the canonical form
MOST = 0.75  # the part of one lab's lines that must be in the other's for a pair to be named: an
# honest lab that wrote by chance some of what a group of copies shares is not pulled into it
CHANCE = 0.01  # students who worked alone are named with at most this chance in a class
FEW = 8  # a pair is weighed when it shares two units or more that at most this many labs wrote
# (or a tenth of the class, if more): pairs that share only what many wrote cannot reach the bar
# A starter's lines as make_starter writes them, as key() says them: `not_written_yet(3, "...");`
# and an empty declaration, `torch::Tensor scores {};` (a student who left a blank wrote neither).
CALL = re.compile(r"[A-Za-z_][\w:]*(?:\.[A-Za-z_]\w*)*\(")  # a call in a comment
STARTER_KEYS = {"a ( 0 , \" ) ;", "a :: a a { } ;", "a :: a :: a a { nullptr } ;", "bool a = false ;"}
TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\d[\w.]*|::|->|[^\s\w]')
WORDS = {"if", "else", "for", "while", "do", "return", "const", "auto", "int", "double", "float", "bool",
         "void", "struct", "class", "template", "typename", "static", "new", "delete", "true", "false",
         "nullptr", "switch", "case", "break", "continue", "try", "catch", "throw", "using", "namespace"}


def without_comments(text):
    """text with its comments blanked (line breaks kept, so lines keep their numbers)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text[i] in "\"'":
            m = TOKEN.match(text, i)
            j = m.end() if m and m.group()[:1] == text[i] else i + 1
            out.append(text[i:j])
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def key(line):
    """A line as it is compared: its tokens, every name, number and string alike (keywords and
    punctuation as they are), or "" for a line with no code."""
    words = []
    for t in TOKEN.findall(line):
        if t[0] in "\"'":
            words.append('"')
        elif t[0].isdigit():
            words.append("0")
        elif t[0].isalpha() or t[0] == "_":
            words.append(t if t in WORDS else "a")
        else:
            words.append(t)
    return " ".join(words)


def template_keys(texts):
    """The lines of the lesson and of any template, as key() compares them; their statements in
    canonical form (canonical.py), each marked "s ", and in the spelled form, "p "; and the calls their comments
    spell out (`torch::tril(torch::ones({T, T}))`), in canonical form, marked by a leading SOH:
    a student who writes what the lesson's comment says has not written code of their own."""
    keys = set(STARTER_KEYS)
    for text in texts:
        code = without_comments(text).split("\n")
        keys.update(key(line) for line in code)
        keys.update("= " + written(line) for line in code)
        keys.update("n " + name for name in re.findall(r"\b[A-Za-z_]\w*\b", "\n".join(code)))
        keys.update("s " + s for s, _ in canonical.statements(list(enumerate(code, 1))))
        keys.update("p " + s for s, _ in canonical.statements(list(enumerate(code, 1)), spelled=True))
        for fragment in comment_code(text):
            keys.update("\1" + s[len("a = "):] for s, _ in canonical.statements([(1, "x = %s;" % fragment)])
                        if s.startswith("a = "))
    keys.discard("")
    return keys


def comment_code(text):
    """The calls that the comments of text spell out, each with its arguments and the methods
    called on it: ["torch::tril(torch::ones({T, T}))", ...]."""
    found = []
    for comment in re.findall(r"//[^\n]*|/\*.*?\*/", text, re.S):
        for m in CALL.finditer(comment):
            depth, i = 0, m.end() - 1
            while i < len(comment):
                depth += {"(": 1, ")": -1}.get(comment[i], 0)
                i += 1
                if depth == 0:
                    more = re.match(r"\.[A-Za-z_]\w*\(", comment[i:])  # a method called on it
                    if not more:
                        break
                    i += more.end() - 1
            if depth == 0:
                found.append(comment[m.start():i])
    return found


def own_code(text, template):
    """A lab's own code: [(line number, line)] of its lines with code that are not a line of the
    template as it is written (spaces and comments aside), nor a starter's blank. Comments are
    not read: a TODO(STEP n) after a copied line leaves it the student's. (A line that is the
    template's with other names is kept, for what its statements mean to the lines around it,
    but is not compared as a line: units_of.)"""
    code = without_comments(text).split("\n")
    return [(n, line) for n, line in enumerate(code, 1)
            if key(line) and "= " + written(line) not in template and key(line) not in STARTER_KEYS]


def written(line):
    """A line's code as it is written, spaces aside."""
    return " ".join(TOKEN.findall(line))


def tokens(own):
    return sum(len(TOKEN.findall(line)) for _, line in own)


def units_of(own, template=()):
    """What a lab's own code is compared by: {line number: its units}, where a line's units are
    the line as key() says it (names, numbers and strings alike; of LINE_WORDS words or more;
    not a line of the template with other names), "l " before it, and the statements that start on it in the spelled form and in the
    canonical form (canonical.statements: what survives the cheap disguises), "p " and "s "
    before each, less those that are the template's in that form, or a call its comments spell
    out, given a name (`auto m = torch::tril(...)`): the lesson's line behind a disguise is not
    the student's. Lines with no unit are left out."""
    items = {}
    for n, line in own:
        said = key(line)
        if len(said.split()) >= LINE_WORDS and said not in template:
            items.setdefault(n, set()).add("l " + said)
    keep = names_of(template)
    for mark, spelled in (("p ", True), ("s ", False)):
        for statement, numbers in canonical.statements_on_lines(own, spelled, keep):
            if (mark + statement) in template or (statement.startswith("a = ") and "\1" + statement[4:] in template):
                continue
            for n in numbers:  # each line it came from (a temporary inlined, a statement over lines)
                items.setdefault(n, set()).add(mark + statement)
    return items


_NAMES = {}


def names_of(template):
    """The names the template's code uses (template_keys' "n " keys), once per template."""
    if id(template) not in _NAMES:
        _NAMES.clear()
        _NAMES[id(template)] = (template, frozenset(k[2:] for k in template if k.startswith("n ")))
    return _NAMES[id(template)][1]


def look_alike(labs, earlier=(), template=()):
    """The pairs of labs whose own code shares what students who worked alone would not. labs
    and earlier: [(name, own code)]; earlier's are compared with labs only, and count in how
    rare a line is; template: template_keys() of the lesson and the template. Returns
    {"checked", "why", "pairs", "compared": the number of labs with enough own code, "left_out":
    the labs with more than MAX_OWN tokens of it}, no time: class.json is the same for the same
    class however it was graded (bench/similarity.py times it); a pair is {"a", "b", "earlier",
    "chance", "evidence" (-log10 chance), "labs" (how many have all it shares), "group" (how
    many labs its group of named pairs holds), "rare" (lines no lab outside that group has), "a_share", "b_share" (percent of each one's lines shared), "a_lines",
    "b_lines", "shared": [{"a_line", "b_line", "a_text", "b_text", "others" (how many other
    labs have it), "theirs_alone" (no lab outside the pair's group has it)}]} (weighed()). The labs are taken in the order of their names: the answer is
    the same however the class was graded (any -j, any order, shards and --merge)."""
    result = {"checked": False, "why": "", "pairs": [], "compared": 0}
    result["left_out"] = sorted(name for name, own in list(labs) + list(earlier) if tokens(own) > MAX_OWN)
    new = sorted((name, own) for name, own in labs if OWN <= tokens(own) <= MAX_OWN)
    old = sorted((name, own) for name, own in earlier if OWN <= tokens(own) <= MAX_OWN)
    result["compared"] = len(new)
    if len(new) + len(old) < MIN_LABS:
        result["why"] = ("%d labs have code of their own, too few to tell what is rare among students who work alone "
                         "(%d or more are needed; earlier terms' labs, --similar-to, count too)" % (len(new) + len(old), MIN_LABS))
        return result
    everyone = [(name, dict(own), False) for name, own in new] + [(name, dict(own), True) for name, own in old]
    units = [units_of(sorted(own.items()), template) for _, own, _ in everyone]
    result["pairs"] = weighed(everyone, units)
    result["checked"] = True
    return result


def weighed(everyone, units):
    """The pairs named: those whose shared lines students who worked alone would share with a
    chance below CHANCE over the whole class. A line of one lab is shared when the other has
    one of its units (units_of: the line as it is, its statements in the spelled form or in the
    canonical form), the rarest of them. For a pair, S is the smaller lab's lines shared and k
    the number of labs that have all of S (the pair, and any others: a group of copies). A lab
    whose student chose alone has a line of S with the part f of the class that has that unit,
    and all of S with the product q of those parts; so that k labs have S, when none copied,
    has a chance of at most N * (1 + FORMS)**L * C(N - 1, k - 1) * q**(k - 1) for N labs and L
    lines in the smaller lab (any of its labs; each of its lines not shared or shared in one of
    the forms; any k - 1 others: union bounds). The parts are the whole class's, copies
    included: a group of copies makes what it shares look commoner, never rarer."""
    n = len(everyone)
    old = [o for _, _, o in everyone]
    holders = {}
    for i, items in enumerate(units):
        for unit in set().union(*items.values()) if items else ():
            holders.setdefault(unit, []).append(i)
    # Pairs worth weighing: they share two units or more that few labs have (FEW).
    few = max(FEW, n // 10)
    counts = {}
    for hs in holders.values():
        if len(hs) <= few:
            for x, a in enumerate(hs):
                for b in hs[x + 1:]:
                    if not (old[a] and old[b]):
                        counts[(a, b)] = counts.get((a, b), 0) + 1
    pairs = []
    for a, b in sorted(pair for pair, count in counts.items() if count >= 2):
        small, large = (a, b) if (len(units[a]), a) <= (len(units[b]), b) else (b, a)
        pair = weigh(small, large, n, units, holders)
        if pair is None:
            continue
        rows = pair.pop("rows")
        if small != a:  # the pair as a and b, in the order of the class
            rows = [(lb, la, others, only) for la, lb, others, only in rows]
            pair["a_share"], pair["b_share"] = pair["b_share"], pair["a_share"]
        (name_a, own_a, old_a), (name_b, own_b, old_b) = everyone[a], everyone[b]
        shared = [{"a_line": la, "b_line": lb, "a_text": own_a.get(la, "").strip(), "b_text": own_b.get(lb, "").strip(),
                   "others": others, "labs": labs} for la, lb, others, labs in sorted(rows)]
        pairs.append(dict(pair, a=name_a, b=name_b, earlier=old_a or old_b, shared=shared,
                          a_lines=line_ranges([s["a_line"] for s in shared]),
                          b_lines=line_ranges([s["b_line"] for s in shared])))
    # A line is the group's alone when no lab outside the group the pair is named in has it.
    index = {name: i for i, (name, _, _) in enumerate(everyone)}
    for group in groups(pairs):
        members = {index[name] for name in group}
        for p in pairs:
            if p["a"] in group:
                for s in p["shared"]:
                    s["theirs_alone"] = s.pop("labs") <= members
                p["rare"] = sum(1 for s in p["shared"] if s["theirs_alone"])
                p["group"] = len(group)
    return sorted(pairs, key=lambda p: (p["chance"], p["a"], p["b"]))


def weigh(a, b, n, units, holders):
    """The pair (a, b), a the lab with fewer lines: {"chance", "evidence" (-log10 chance),
    "labs" (k), "a_share", "b_share" (percent of each one's
    lines shared), "rows": [(line in a, line in b, how many other labs have it, the labs that
    have it)]}, or None when
    the chance (weighed()) is not below CHANCE."""
    ua, ub = units[a], units[b]
    in_b = {}
    for line, items in ub.items():
        for unit in items:
            in_b.setdefault(unit, line)
    rows, log_q, having, chosen = [], 0.0, None, set()
    for line, items in sorted(ua.items()):
        found = [unit for unit in sorted(items) if unit in in_b]
        if not found:
            continue
        unit = min(found, key=lambda u: (len(holders[u]), u))  # the rarest form in which b has it
        labs = set(holders[unit])
        having = labs if having is None else having & labs
        if unit not in chosen:  # a unit on two lines is one choice
            log_q += math.log10((len(labs) - 1) / (n - 1))  # the part of the labs but a that have it
            chosen.add(unit)
        rows.append((line, in_b[unit], unit))
    if len(rows) < 2:
        return None
    # each row: (line in a, line in b, how many other labs have it, the labs that have it)
    rows = [(la, lb, len(holders[unit]) - 2, frozenset(holders[unit])) for la, lb, unit in rows]
    k = len(having)
    log_chance = math.log10(n) + sum(math.log10(line_factor(items, holders)) for items in ua.values()) + \
        log_choose(n - 1, k - 1) + (k - 1) * log_q
    in_a = set().union(*ua.values())
    b_lines = [line for line, items in ub.items() if items & in_a]
    if log_chance >= math.log10(CHANCE) or max(len(rows) / len(ua), len(b_lines) / len(ub)) < MOST:
        return None
    return {"chance": 10 ** log_chance, "evidence": round(-log_chance, 1), "labs": k,
            "a_share": round(100 * len(rows) / len(ua)), "b_share": round(100 * len(b_lines) / len(ub)), "rows": rows}


def line_factor(items, holders):
    """How much a line of the smaller lab multiplies the chance (weighed()): 1 (not shared) plus,
    for each of its units from the rarest to the commonest, the part of the labs that have it
    but not the rarer one before it (forms are nested: a line the same as it is is the same in
    the spelled and the canonical form). At most 1 + FORMS."""
    counts = sorted(len(holders[unit]) for unit in items)
    return 2 + sum(1 - before / after for before, after in zip(counts, counts[1:]))


def log_choose(n, k):
    """log10 of the binomial coefficient C(n, k)."""
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(10)


def line_ranges(numbers):
    """Line numbers as ranges: "12-15, 20"."""
    numbers, ranges, start = sorted(set(numbers)), [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] > n + 1:
            ranges.append("%d-%d" % (start, n) if n > start else "%d" % n)
            start = None
    return ", ".join(ranges)


def groups(pairs):
    """The labs of pairs joined into groups: each a set of names, any two linked by pairs."""
    found = []
    for p in pairs:
        linked = [g for g in found if p["a"] in g or p["b"] in g]
        merged = set().union({p["a"], p["b"]}, *linked)
        found = [g for g in found if g not in linked] + [merged]
    return sorted(found, key=lambda g: (-len(g), sorted(g)))
