"""The package's modules import one way: each module of lab04/ imports only modules of a lower
layer, by their qualified names, so that no module imports one that imports it, and
lab04/checker/ never imports the class grader's or the kit's modules (lab04/grader/,
lab04/instructor/), which a starter does not carry. No module of the package changes sys.path;
the commands' launchers (checker/check_lab.py, grader/grade_class.py, ...) do, once, each in at
most 10 lines that import nothing of the package but their module, so that a reader follows
each import from the command.

The layers are those of docs/maintaining.md's table ("The import layers"), read from there: a
module of lab04/ that the table does not place fails the test, as does a row that names no
module of the package.

usage: import_layers_test.py   (reads docs/, lab04/ and the launchers beside tests/)
"""
import ast
import os
import re
import sys

import checklist
import project

PACKAGE = "lab04"
LAUNCHERS = [os.path.join("checker", n) for n in ("check_lab.py", "watch_verdict.py", "grade_summary.py",
                                                  "reference_attention.py")] + \
    [os.path.join("grader", n) for n in ("grade_class.py", "grade_on_slurm.py")] + \
    [os.path.join("instructor", "make_starter.py"), os.path.join("tools", "project_files.py")]
LAUNCHER_LINES = 10
# Below every layer: the package (lab04/__init__.py: PROJECT) and its parts' __init__.py, which import nothing.
BELOW = {PACKAGE, PACKAGE + ".checker", PACKAGE + ".grader", PACKAGE + ".instructor"}
TABLE = os.path.join(project.ROOT, "docs", "maintaining.md")


def layers_of(path):
    """{module's qualified name: layer} from the table's rows, "| N | `lab04/folder/name.py`, ... | ... |"."""
    layers = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = re.match(r"\| (\d+) \| ([^|]*)\|", line)
            if row:
                for where in re.findall(r"`(lab04/[\w/]+)\.py`", row.group(2)):
                    layers[qualified(where + ".py")] = int(row.group(1))
    return layers


def qualified(relative):
    """The module's name of a file of the package: lab04/checker/cases.py is lab04.checker.cases,
    lab04/__init__.py is lab04."""
    parts = relative[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path, modules):
    """The modules of the package a Python file imports, anywhere in it, by their qualified
    names ("from lab04.checker import cases" imports lab04.checker.cases; "from lab04 import
    PROJECT", lab04), and the imports of the package that are not qualified ("import cases")."""
    found, bare = set(), []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            for a in node.names:
                found |= {a.name} if a.name in modules else set()
                bare += [a.name] if any(m.endswith("." + a.name) for m in modules) else []
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module in modules and node.module.split(".")[0] == PACKAGE:
                subs = [node.module + "." + a.name for a in node.names]
                found |= {m for m in subs if m in modules} or {node.module}
                if any(m not in modules for m in subs) and node.module != PACKAGE:
                    found.add(node.module)
            bare += [node.module] if any(m.endswith("." + node.module) for m in modules) else []
        elif isinstance(node, ast.ImportFrom) and node.level:
            bare.append("." * node.level + (node.module or ""))
    return found, bare


def edits_path(path):
    """Whether a Python file changes sys.path (a call on it, or an assignment to it)."""
    def is_path(node):
        return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                and node.value.id == "sys")
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_path(node.func.value):
            return True
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_path(t) or isinstance(t, ast.Subscript) and is_path(t.value) for t in targets):
                return True
    return False


def main(argv):
    if argv:
        print("import_layers_test: usage: import_layers_test.py", file=sys.stderr)
        return 2
    LAYERS = layers_of(TABLE)
    files = {}
    for folder, _, names in os.walk(os.path.join(project.ROOT, PACKAGE)):
        for name in sorted(names):
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, name), project.ROOT)
                files[qualified(relative)] = relative
    modules = {}
    for name, relative in sorted(files.items()):
        modules[name] = imports_of(os.path.join(project.ROOT, relative), files)
    checks = [("every module of %s/ has a layer in %s" % (PACKAGE, os.path.relpath(TABLE, project.ROOT)),
               set(modules) - BELOW <= set(LAYERS), "not placed: %s" % sorted(set(modules) - set(LAYERS) - BELOW)),
              ("each module the table places is a module of the package", set(LAYERS) <= set(modules),
               "no such module: %s" % sorted(set(LAYERS) - set(modules)))]
    for name, (imported, bare) in sorted(modules.items()):
        own = sorted(m for m in imported if m != name and m not in BELOW)
        upward = [m for m in own if LAYERS.get(m, 9) >= LAYERS.get(name, -1)]
        outward = [m for m in own if name.startswith(PACKAGE + ".checker.") and not m.startswith(PACKAGE + ".checker.")]
        checks.append(("%s (layer %s) imports only lower layers%s, by their qualified names: %s" % (
            files[name], LAYERS.get(name, "?"), " of lab04/checker/" if ".checker." in name else "",
            ", ".join(own) or "none"), not upward and not outward and not bare, "imports %s" % ", ".join(
                ["%s (layer %s)" % (m, LAYERS.get(m, "?")) for m in upward + outward]
                + ["%s, not qualified (from lab04.<part> import ...)" % b for b in bare])))
    editors = [files[m] for m in files if edits_path(os.path.join(project.ROOT, files[m]))]
    checks.append(("no module of the package changes sys.path: %s" % (", ".join(editors) or "none"), not editors,
                   "a module changes sys.path, so its imports depend on who imported it first; let its "
                   "command's launcher do it"))
    for launcher in LAUNCHERS:
        path = os.path.join(project.ROOT, launcher)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        imported, bare = imports_of(path, files)
        lines = len(text.splitlines())
        edits = sum(1 for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute) and ast.unparse(node.func.value) == "sys.path")
        checks.append(("%s is a launcher: at most %d lines (%d), one change of sys.path (%d), one module of the "
                       "package imported (%s)" % (launcher, LAUNCHER_LINES, lines, edits, ", ".join(sorted(imported))),
                       lines <= LAUNCHER_LINES and edits == 1 and len(imported) == 1 and not bare,
                       "a launcher puts the project on sys.path and calls its module's main: its code is the "
                       "module's"))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
