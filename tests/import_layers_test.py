"""The Python modules import one way: each imports only modules of a lower layer, so that no
module imports one that imports it, and checker/ never imports the class grader's or the kit's
modules (grader/, instructor/), which a starter does not carry. Only a front end (the top
layer: a command a user runs) puts a folder on sys.path; a library module imports what its
command's front end made importable, so that a reader follows each import from the command.

The layers are those of docs/maintaining.md's table ("The import layers"), read from there: a
module of checker/, grader/, instructor/ or tools/ that the table does not place fails the test, as
does a row that names no module of the project.

usage: import_layers_test.py   (reads docs/ and checker/, grader/, instructor/ and tools/ beside tests/)
"""
import ast
import os
import re
import sys

import checklist
import project

FOLDERS = ("checker", "grader", "instructor", "tools")
TABLE = os.path.join(project.ROOT, "docs", "maintaining.md")


def layers_of(path):
    """{module name: layer} from the table's rows, "| N | `folder/name.py`, ... | ... |"."""
    layers = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = re.match(r"\| (\d+) \| ([^|]*)\|", line)
            if row:
                for folder, name in re.findall(r"`(\w+)/(\w+)\.py`", row.group(2)):
                    layers[name] = int(row.group(1))
    return layers


def imports_of(path):
    """The names of the modules a Python file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


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
    modules, path_editors = {}, []
    for folder in FOLDERS:
        for name in sorted(os.listdir(os.path.join(project.ROOT, folder))):
            if name.endswith(".py"):
                modules[name[:-3]] = (folder, imports_of(os.path.join(project.ROOT, folder, name)))
                if edits_path(os.path.join(project.ROOT, folder, name)):
                    path_editors.append(name[:-3])
    top = max(LAYERS.values(), default=0)
    checks = [("every module of %s has a layer in %s" % (", ".join(FOLDERS), os.path.relpath(TABLE, project.ROOT)),
               set(modules) <= set(LAYERS), "not placed: %s" % sorted(set(modules) - set(LAYERS))),
              ("each module the table places is a module of the project", set(LAYERS) <= set(modules),
               "no such module: %s" % sorted(set(LAYERS) - set(modules)))]
    for name, (folder, imported) in sorted(modules.items()):
        own = sorted(m for m in imported if m in modules and m != name)
        upward = [m for m in own if LAYERS.get(m, 9) >= LAYERS.get(name, -1)]
        outward = [m for m in own if folder == "checker" and modules[m][0] != "checker"]
        checks.append(("%s/%s.py (layer %s) imports only lower layers%s: %s" % (
            folder, name, LAYERS.get(name, "?"), " of checker/" if folder == "checker" else "", ", ".join(own) or "none"),
            not upward and not outward, "imports %s" % ", ".join("%s (layer %s, %s/)" % (
                m, LAYERS.get(m, "?"), modules[m][0]) for m in upward + outward)))
    below = ["%s/%s.py (layer %s)" % (modules[m][0], m, LAYERS.get(m, "?")) for m in path_editors
             if LAYERS.get(m) != top]
    checks.append(("only front ends (layer %d) change sys.path: %s" % (top, ", ".join(path_editors) or "none"),
                   not below, "a library module changes sys.path, so its imports depend on who imported "
                   "it first: %s; let its command's front end do it" % ", ".join(below)))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
