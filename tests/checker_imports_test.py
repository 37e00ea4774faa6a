"""The checker is a library whose imports go one way: each module imports only modules of a
lower layer, so that no module imports one that imports it, and checker/ never imports the
class grader's or the kit's modules (grader/, instructor/), which a starter does not carry.

The layers, from the bottom (a module not listed here fails the test: place it first):
  0 data and rules: the cases, the catalogue, the sandbox, finding torch, the submissions,
    the LMS's exports, the similarity of students' own code
  1 the reference, a run and how it ended, the class runner's client, a repository at its
    deadline
  2 comparing a run with the reference
  3 the diagnosis and the grade
  4 the verdict: the report every front end shows; the class gradebook
  5 the front ends: check_lab.py, the watch's verdict, grade_summary.py, the class grader, the kit

usage: checker_imports_test.py   (reads checker/, grader/ and instructor/ beside tests/)
"""
import ast
import os
import sys

import checklist
import project

LAYERS = {
    "cases": 0, "mistakes": 0, "sandbox": 0, "torch_python": 0, "submissions": 0, "lms": 0, "similarity": 0,
    "reference_attention": 1, "running": 1, "runner_client": 1, "deadlines": 1,
    "compare": 2,
    "diagnosis": 3, "grading": 3,
    "verdict": 4, "gradebook": 4,
    "check_lab": 5, "watch_verdict": 5, "grade_summary": 5, "grade_class": 5, "make_starter": 5,
}
FOLDERS = ("checker", "grader", "instructor")


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
        print("checker_imports_test: usage: checker_imports_test.py", file=sys.stderr)
        return 2
    modules = {}
    for folder in FOLDERS:
        for name in sorted(os.listdir(os.path.join(project.ROOT, folder))):
            if name.endswith(".py"):
                modules[name[:-3]] = (folder, imports_of(os.path.join(project.ROOT, folder, name)))
    checks = [("every module of %s has a layer" % ", ".join(FOLDERS), set(modules) <= set(LAYERS),
               "not placed: %s" % sorted(set(modules) - set(LAYERS)))]
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
