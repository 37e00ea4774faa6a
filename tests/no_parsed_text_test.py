"""No module decides from text another module wrote: what one module tells another is a value
(a field, a constant it exports), never its wording read back.

usage: no_parsed_text_test.py

Read from the source of every Python module of lab04/ and the launchers beside it: each string
a module looks for in a text (the first argument of startswith, endswith, replace, find,
index, partition or split; the left side of "in" or "not in" against a text; the string whose
length a slice cuts off, text[len("label: "):], which takes for granted that the text begins
with it; the plain runs of
a regular expression given to re's functions that hold words, not a single token: its text
between the operators, where it holds a space) must not stand
inside a string another of these modules writes. What a lab prints is data to read: a string
the lesson (lab04_attention.cpp) prints, or a tool the grader runs (git, a compiler), may be
looked for, and so may a path or a command's option (a value, not wording). Strings shorter
than 5 characters are too common to say whose they are. SAME_WORDS names the one exception.
Prints OK or NOT OK for each module.
"""
import ast
import os
import re
import sys

import checklist
import project

FOLDERS = ("lab04", "checker", "grader", "instructor")
SEARCHES = ("startswith", "endswith", "replace", "find", "rfind", "index", "rindex", "partition", "rpartition",
            "split", "count")
SHORTEST = 5
PATTERNS = ("sub", "subn", "match", "fullmatch", "search", "findall", "finditer", "split", "compile")
# Strings a module may look for although another writes them too, each with the reason.
SAME_WORDS = {("lab04/checker/compare.py", "LibTorch's fused attention disagrees"):
              "the lab's own line (it prints \"agrees\" or \"disagrees\" into it); diagnosis.py's sentence "
              "says the same words",
              ("lab04/checker/sandbox.py", "AddressSanitizer"):
              "the sanitizer's own report on the lab's standard error; limits.py's words name such a build the same"}


def modules():
    """{path relative to the project: its syntax tree} for every product module."""
    found = {}
    for relative in project.files_in(FOLDERS):  # the project's list: never an editor's file or a cache
        if relative.endswith(".py"):
            with open(os.path.join(project.ROOT, relative), encoding="utf-8") as f:
                text = re.sub(r"@\w+@", "0", f.read())  # (a template's @NAME@: a value)
            found[relative] = ast.parse(text)
    return found


def docstrings(tree):
    """The docstrings of a module, its classes and functions: words for a reader, not output."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def written(tree):
    """The strings a module writes: its string constants, docstrings aside."""
    skip = docstrings(tree)
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def plain_runs(pattern):
    """The literal runs of a regular expression: its text between operators, classes and groups
    (a character a quantifier makes optional is left out)."""
    runs, run, i = [], "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            if pattern[i + 1].isalnum():  # \d, \s, \b, \1: not literal
                runs.append(run)
                run = ""
            else:
                run += pattern[i + 1]
            i += 2
            continue
        if c == "[":  # a class: skipped whole
            runs.append(run)
            run = ""
            i = pattern.find("]", i + 2) + 1 or len(pattern)
            continue
        if c in "*+?{":
            run = run[:-1]
        if c in ".^$*+?{}|()":
            runs.append(run)
            run = ""
            if c == "(" and pattern.startswith("?", i + 1):  # (?:, (?P<name>: no literal
                i = next((j for j in range(i + 2, len(pattern)) if pattern[j] in ":>)=!"), i + 1)
            elif c == "{":
                i = pattern.find("}", i) if "}" in pattern[i:] else i
            i += 1
            continue
        run += c
        i += 1
    return runs + [run]


def looked_for(tree):
    """(line, string) for each string the module looks for in a text."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SEARCHES \
                and node.args:
            first = node.args[0]
            wanted = first.elts if isinstance(first, ast.Tuple) else [first]  # startswith(("a", "b"))
            found += [(node.lineno, w.value) for w in wanted if isinstance(w, ast.Constant) and isinstance(w.value, str)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PATTERNS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found += [(node.lineno, run) for run in plain_runs(node.args[0].value) if " " in run.strip()]
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):  # text[len("label: "):]
            for bound in (b for part in (node.slice.lower, node.slice.upper) if part for b in ast.walk(part)):
                if isinstance(bound, ast.Call) and isinstance(bound.func, ast.Name) and bound.func.id == "len" \
                        and bound.args and isinstance(bound.args[0], ast.Constant) and isinstance(bound.args[0].value, str):
                    found.append((node.lineno, bound.args[0].value))
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and not isinstance(right, (ast.Tuple, ast.List, ast.Set,
                                                                                   ast.Dict, ast.Constant)):
                    found.append((node.lineno, node.left.value))
    return [(line, s) for line, s in found if len(s.strip()) >= SHORTEST]


def main(argv):
    if argv:
        print("no_parsed_text_test: usage: no_parsed_text_test.py", file=sys.stderr)
        return 2
    trees = modules()
    texts = {path: written(tree) for path, tree in trees.items()}
    with open(os.path.join(project.ROOT, "lab04_attention.cpp"), encoding="utf-8") as f:
        lesson = f.read()
    checks = [("the search reads the product's modules", len(trees) >= 20, sorted(trees))]
    for path, tree in sorted(trees.items()):
        read = []
        for line, wanted in looked_for(tree):
            if wanted in lesson or wanted.startswith(("/", "-")) or (path, wanted) in SAME_WORDS:
                continue  # what the lab prints: data; a path or a command's option: a value
            writers = sorted(other for other, strings in texts.items()
                             if other != path and any(wanted in s for s in strings))
            if writers:
                read.append("line %d looks for %r, which %s writes" % (line, wanted, " and ".join(writers)))
        checks.append(("%s reads no other module's wording" % path, not read, "\n".join(read)))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
