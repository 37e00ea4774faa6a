"""starter_files.py: the files a starter carries besides its lab: the project's own, copied as
they are from the project's list (the build, the checker, the run engine, the watch), the
class grader's for the platforms' autograders, and those made from instructor/templates/ (the
student's README, the tests, the workflow), filled in.

  copied()          the project's files the starter and the autograders carry
  grader_files()    the class grader's, which the autograders grade each submission with
  fill(template, ...), student_readme(...), grade_workflow(...)   templates/, filled in
  write_tree(out, project_files, files)   a starter (or a platform's part of it) written
"""
import os
import shutil
import subprocess

from lab04 import PROJECT, project_files  # the project's list of files: what is copied, never a walk of a folder
from lab04.checker import cases  # the checker's: the points of the steps are read as the checker reads them
from lab04.checker.files import write_text

HERE = os.path.join(PROJECT, "instructor")  # the templates and the platforms' scripts
# What the starter and the autograder take from the project as it is: the build (CMakeLists.txt
# and cmake/, which the watch's folder completes), the checker (its commands in checker/, its
# code in lab04/checker/, with the package's lab04/__init__.py) and the run engine that runs its
# labs and the watch's (engine/). Whole folders of the project's list (tools/project_files.txt),
# so that a file added to one comes along, and nothing else that lies in them (an editor's file,
# Python's cache) does.
COPIED_FILES = ["CMakeLists.txt", "CMakePresets.json", ".clang-format", ".gitignore", ".gitattributes",
                ".devcontainer/devcontainer.json", "lab04/__init__.py"]
COPIED_FOLDERS = ["cmake", "checker", "engine", "watch", "lab04/checker"]


def copied():
    """The project's files that the starter and the autograder carry, relative to the project:
    each a regular file (project_files.NotRegular names one that is not)."""
    on_list = project_files.listed(PROJECT)
    names = [n for n in COPIED_FILES if n in on_list]
    names += sorted(n for n in on_list if os.path.dirname(n) in COPIED_FOLDERS
                    or n.split("/", 1)[0] in COPIED_FOLDERS)
    return project_files.regular(PROJECT, names)


def fill(template, **values):
    """A file of templates/ with each @NAME@ replaced by its value."""
    with open(os.path.join(HERE, "templates", template)) as f:
        text = f.read()
    for name, value in values.items():
        text = text.replace("@%s@" % name, value)
    return text


def readme_command(marker):
    """The commands after <!-- marker --> in the project's README (tools/readme_command reads them)."""
    return subprocess.run([os.path.join(PROJECT, "tools", "readme_command"), marker],
                          capture_output=True, text=True, check=True).stdout.rstrip("\n")


ON_PUSH = {
    "workflow": "Your repository runs the same grade on every push (`.github/workflows/grade.yml`): the grade,\n"
                "step by step, is the summary of each run in the Actions tab, and the run is red while a STEP\n"
                "loses points.",
    "classroom50": "Your classroom (Classroom 50) grades every push the same way: the grade, step by step, is the\n"
                   "text of the submission's release (your repository's Releases), and the Actions tab shows the\n"
                   "run. A run marked as an error is the grader's fault, not your grade: your instructor sees it.",
}


def student_readme(blanks, hints, points, install, rebuild, on_push="workflow"):
    rows = "\n".join("| STEP %d | %s | %s |" % (n, cases.fmt(points[n - 1]),
                                               "yours: " + hints[n] if n in hints else "given")
                     for n in cases.STEP_NUMBERS)
    return fill("starter_README.md", STEPS=", ".join(map(str, blanks)), INSTALL=install,
                REBUILD=rebuild, ROWS=rows, ON_PUSH=ON_PUSH[on_push])


def grade_workflow(points, setup):
    return fill("grade.yml", SETUP=setup, POINTS=",".join(cases.fmt(p) for p in points))


def grader_files():
    """The class grader's files (its commands in grader/, its code in lab04/grader/), which the
    autograder grades each submission with."""
    return project_files.regular(PROJECT, sorted(n for n in project_files.listed(PROJECT)
                                                 if n.split("/", 1)[0] == "grader" or n.split("/")[:2] == ["lab04", "grader"]))


def write_tree(out, project_files, files):
    """Writes the project's files (copied as they are) and files (name: text) into out."""
    for name in project_files + list(files):
        os.makedirs(os.path.join(out, os.path.dirname(name)), exist_ok=True)
    for name in project_files:
        shutil.copy2(os.path.join(PROJECT, name), os.path.join(out, name))
    for name, text in files.items():
        write_text(os.path.join(out, name), text)
