"""What the tests know of the project: where it is, where its parts are, and how to copy it.

Importing it puts the project's folder on sys.path, so that a test imports the package's
modules by their qualified names (from lab04.checker import cases), as the launchers of the
commands do; the package never imports a test.

  ROOT, CHECKER, INSTRUCTOR, TOOLS   the project's folder and its parts
  CHECK_LAB                          the checker's command, checker/check_lab.py
  GOLDEN                             the seed's printed output
  readme_command(marker, readme)     the commands after <!-- marker --> (tools/readme_command,
                                     the reader .ci/run and bench/run use)
  files(project)                     the project's files, from its list (tools/project_files.txt)
  files_in(folders)                  those in these folders (tests/fast_lab: a folder in one)
  checker_files()                    the checker's, as a starter carries them (checker/, lab04/checker/)
  copy(project, dest)                a copy of them, for a test that builds the project elsewhere
"""
import os
import shutil
import stat
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKER = os.path.join(ROOT, "checker")
CHECK_LAB = os.path.join(CHECKER, "check_lab.py")  # the command (its code: lab04/checker/check_lab.py)
INSTRUCTOR = os.path.join(ROOT, "instructor")
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "seed_default_output.txt")
TOOLS = os.path.join(ROOT, "tools")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from lab04 import project_files  # noqa: E402  (the project's list of files)


def readme_command(marker, readme=os.path.join(ROOT, "README.md")):
    return subprocess.run([os.path.join(ROOT, "tools", "readme_command"), marker, readme],
                          capture_output=True, text=True, check=True).stdout


def files(project):
    """Every file the project is made of: those on its list (tools/project_files.txt), each a
    regular file (project_files.NotRegular names one that is not). Never a walk of the folder:
    a build folder of any name, a lab server's socket or an editor's file is not the project."""
    return project_files.regular(project, project_files.listed(project))


def files_in(folders, project=ROOT):
    """The project's files in these folders (relative paths, a folder in a folder too), from its
    list."""
    return [n for n in files(project) if any(n.startswith(folder.rstrip("/") + "/") for folder in folders)]


def checker_files(project=ROOT):
    """The checker's files, as a starter carries them: its commands (checker/) and their code
    (lab04/checker/, with the package's lab04/__init__.py)."""
    return files_in(["checker", "lab04/checker"], project) + ["lab04/__init__.py"]


def copy(project, dest):
    """Copies the project's files into dest (emptied first). Returns the paths copied, relative."""
    shutil.rmtree(dest, ignore_errors=True)
    copied = files(project)
    project_files.copy(project, copied, dest)
    return copied


class Unwritable:
    """A folder this process cannot write while the context lasts, as a read-only image layer or
    another user's build is to a grader; prefix: what a command that must meet it starts with.
    The folder's mode is 555 (then put back); root, which writes any folder, runs the command
    without the capabilities that let it (tests/without_override.py): one way on a machine, in a
    chroot (whose / is no mount point) and in a container with Docker's default capabilities
    (which can make no mount namespace and set no immutable flag). how says which."""

    def __init__(self, folder):
        self.folder, self.prefix, self.mode = folder, [], None

    def __enter__(self):
        self.mode = stat.S_IMODE(os.stat(self.folder).st_mode)
        os.chmod(self.folder, 0o555)
        if os.geteuid() == 0:
            self.prefix = [sys.executable, os.path.join(ROOT, "tests", "without_override.py")]
            self.how = "mode 555, root without the capabilities that override it"
        else:
            self.how = "mode 555"
        return self

    def __exit__(self, *exc):
        os.chmod(self.folder, self.mode)
