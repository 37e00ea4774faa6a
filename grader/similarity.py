"""similarity.py: labs whose students' own code looks alike, as a hint for the class summary.

A lab's own code is what its student wrote: its lines, less every line that is the lesson's or
the handed-out template's (a starter's TODO lines, any file given as a template), compared as
the similarity tester compares code (comments dropped, every name, number and string alike).
So the text handed out matches no one, and neither does the answer every right lab shares.
Debian's similarity tester (sim_c++, package similarity-tester, made for finding copied code)
then compares the own code of every two labs, and of each lab with earlier terms' labs that the
instructor kept, and the pairs where at least SHARE of one lab's own code is found in the other's
are listed, with the shares and the lines (where Debian packages it: 12 and testing, not 13);
and the labs are compared again, wherever the grader runs, in a canonical form
(canonical.py: names, types, braces, statements without effect and the order of statements
made alike), where every pair is judged on its own, so that copies behind cheap disguises are
listed too: a hint to look at them side by side, never a verdict,
never a change of grade. Own code shorter than OWN tokens matches no one: a line or two is what
anyone might write.

  own_code(text, template)      a lab's own code: [(line number, line)] of the lines it keeps
  template_keys(texts)          the lines of the lesson and the template, as they are compared
  look_alike(labs, earlier)     the pairs, as values (a dict: checked, by_sim, why, pairs, seconds)
  groups(pairs)                 the labs of those pairs, joined into groups
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

import canonical

SIM = "sim_c++"
RUN = 24  # tokens: the shortest run sim_c++ reports (its default)
SHARE = 50  # percent of a lab's own code found in another's, to be listed
OWN = 64  # tokens of own code a lab needs to be compared (about four lines): less is a slip or two
# that anyone might make alike (a bias on the three layers is 59), which the summary's same
# wrong numbers already show
TIMEOUT = 600  # seconds sim_c++ may take for a class (a thousand labs: a few seconds)
TODO = re.compile(r"TODO\(STEP \d+\)")  # a starter's line, left as it was handed out
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
    """The lines of the lesson and of any template, as key() compares them, and their
    statements in canonical form (canonical.py), each marked by a leading NUL."""
    keys = set()
    for text in texts:
        code = without_comments(text).split("\n")
        keys.update(key(line) for line in code)
        keys.update("\0" + s for s, _ in canonical.statements(list(enumerate(code, 1))))
    keys.discard("")
    return keys


def own_code(text, template):
    """A lab's own code: [(line number, line)] of its lines with code that are neither a line of
    the template (template_keys), nor lines whose statements are all the template's in canonical
    form (a handed-out line behind a disguise: a statement that does nothing beside it, auto for
    its type), nor a starter's TODO line."""
    code = without_comments(text).split("\n")
    lines = []
    for n, (line, original) in enumerate(zip(code, text.split("\n")), 1):
        said = key(line)
        if said and said not in template and not TODO.search(original):
            lines.append((n, line))
    forms = {}  # line number: the canonical statements that start on it (one parse of those lines)
    for statement, n in canonical.statements(lines):
        forms.setdefault(n, []).append(statement)
    return [(n, line) for n, line in lines if not (forms.get(n) and all("\0" + s in template for s in forms[n]))]


def tokens(own):
    return sum(len(TOKEN.findall(line)) for _, line in own)


def look_alike(labs, earlier=(), share=SHARE):
    """The pairs of labs whose own code looks alike. labs and earlier: [(name, own code)];
    earlier's are compared with labs only. Returns {"checked": bool, "by_sim": whether sim_c++
    compared them too, "why": why sim_c++ did not, in words, "pairs": [{"a", "b", "a_share",
    "b_share", "a_lines", "b_lines", "earlier"}], "compared": the number of labs with enough own
    code, "seconds", "sim_seconds", "canonical_seconds"}. The canonical comparison runs
    wherever the grader does; sim_c++'s where Debian packages it (not 13)."""
    started = time.monotonic()
    result = {"checked": False, "by_sim": False, "why": "", "pairs": [], "compared": 0, "seconds": 0.0,
              "sim_seconds": 0.0, "canonical_seconds": 0.0}
    new = [(name, own) for name, own in labs if tokens(own) >= OWN]
    old = [(name, own) for name, own in earlier if tokens(own) >= OWN]
    result["compared"] = len(new)
    if shutil.which(SIM):
        result["pairs"], result["why"] = by_sim(new, old, share)
        result["by_sim"] = not result["why"]
    else:
        result["why"] = ("%s, Debian's similarity tester, is not installed (apt-get install similarity-tester, "
                         "where Debian packages it: 12 and testing do, 13 does not)" % SIM)
    result["sim_seconds"] = time.monotonic() - started
    # The same labs in their canonical form (canonical.py): copies behind cheap disguises, each
    # pair judged on its own, so that one copy never hides another.
    forms = {name: canonical.statements(own) for name, own in new + old}
    listed_pairs = {frozenset((p["a"], p["b"])) for p in result["pairs"]}
    for p in canonical.compare([(n, forms[n]) for n, _ in new], [(n, forms[n]) for n, _ in old], share):
        if frozenset((p["a"], p["b"])) not in listed_pairs:
            result["pairs"].append(p)
    result["checked"] = True
    result["seconds"] = time.monotonic() - started
    result["canonical_seconds"] = result["seconds"] - result["sim_seconds"]
    return result


def by_sim(new, old, share):
    """sim_c++'s pairs of new and old ([(name, own code)]): (pairs, why it failed or "")."""
    folder = tempfile.mkdtemp(prefix="lab04-similarity-")
    try:
        files = {}
        for i, (name, own) in enumerate(new + old):
            path = os.path.join(folder, "%s%05d.cpp" % ("o" if i >= len(new) else "n", i))
            lines = dict(own)
            with open(path, "w", encoding="utf-8") as f:  # its own lines where they were, blank lines between
                f.write("\n".join(lines.get(n, "") for n in range(1, max(lines) + 1)) + "\n")
            files[path] = name
        listed = [p for p in files if os.path.basename(p).startswith("n")] + (
            ["/"] + [p for p in files if os.path.basename(p).startswith("o")] if old else [])
        shares = {}
        if len(listed) > 1:
            done = subprocess.run([SIM, "-p", "-s", "-i", "-r", str(RUN), "-t", str(share)], input="\n".join(listed) + "\n",
                                  capture_output=True, text=True, timeout=TIMEOUT)
            if done.returncode != 0:
                return [], "%s failed: %s" % (SIM, (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1])
            for m in re.finditer(r"^(\S+) consists for (\d+) % of (\S+) material$", done.stdout, re.M):
                if m.group(1) in files and m.group(3) in files:
                    shares[(m.group(1), m.group(3))] = int(m.group(2))
        pairs, seen = [], set()
        for (a, b), _ in sorted(shares.items(), key=lambda kv: -kv[1]):
            pair = tuple(sorted((a, b)))
            if pair in seen:
                continue
            seen.add(pair)
            a, b = pair
            pairs.append({"a": files[a], "b": files[b], "a_share": shares.get((a, b), 0),
                          "b_share": shares.get((b, a), 0), "earlier": os.path.basename(b).startswith("o"),
                          **lines_of(a, b)})
        return pairs, ""
    except subprocess.TimeoutExpired:
        return [], "%s took longer than %d s" % (SIM, TIMEOUT)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def groups(pairs):
    """The labs of pairs joined into groups: each a set of names, any two linked by pairs."""
    found = []
    for p in pairs:
        linked = [g for g in found if p["a"] in g or p["b"] in g]
        merged = set().union({p["a"], p["b"]}, *linked)
        found = [g for g in found if g not in linked] + [merged]
    return sorted(found, key=lambda g: (-len(g), sorted(g)))


def lines_of(a, b):
    """The lines of a and b in the runs they share, as sim_c++ -n finds them: "12-20, 31-35"."""
    done = subprocess.run([SIM, "-n", "-s", "-r", str(RUN), a, b], capture_output=True, text=True, timeout=TIMEOUT)
    found = {a: [], b: []}
    for m in re.finditer(r"^(\S+): line (\d+)-(\d+)\s*\|(\S+): line (\d+)-(\d+)", done.stdout, re.M):
        for path, first, last in ((m.group(1), m.group(2), m.group(3)), (m.group(4), m.group(5), m.group(6))):
            if path in found and "%s-%s" % (first, last) not in found[path]:
                found[path].append("%s-%s" % (first, last))
    return {"a_lines": ", ".join(found[a][:6]), "b_lines": ", ".join(found[b][:6])}
