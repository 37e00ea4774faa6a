"""The Python modules import one way: each imports only modules of a lower layer, so that no
module imports one that imports it, and checker/ never imports the class grader's or the kit's
modules (grader/, instructor/), which a starter does not carry.

The layers are those of docs/maintaining.md's table ("The import layers"), read from there: a
module of checker/, grader/ or instructor/ that the table does not place fails the test, as
does a row that names no module of the project.

usage: import_layers_test.py   (reads docs/ and checker/, grader/ and instructor/ beside tests/)
"""
import ast
import os
import re
import sys

import checklist
import project

FOLDERS = ("checker", "grader", "instructor")
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


def main(argv):
    if argv:
        print("import_layers_test: usage: import_layers_test.py", file=sys.stderr)
        return 2
    LAYERS = layers_of(TABLE)
    modules = {}
    for folder in FOLDERS:
        for name in sorted(os.listdir(os.path.join(project.ROOT, folder))):
            if name.endswith(".py"):
                modules[name[:-3]] = (folder, imports_of(os.path.join(project.ROOT, folder, name)))
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
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
