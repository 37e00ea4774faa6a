"""What the tests know of the project: where it is, where its parts are, and how to copy it.

Importing it puts the checker (checker/) and the instructor's kit (instructor/) on sys.path,
so that a test imports check_lab or make_starter as the tools themselves are laid out; the
tools never import a test.

  ROOT, CHECKER, INSTRUCTOR, GOLDEN  the project's folder, its parts, the seed's output
  readme_command(marker, readme)     the commands after <!-- marker --> (tools/readme_command,
                                     the reader .ci/run and bench/run use)
  copy(project, dest)                a copy of the project for a test that builds it elsewhere
"""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKER = os.path.join(ROOT, "checker")
INSTRUCTOR = os.path.join(ROOT, "instructor")
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "seed_default_output.txt")
for folder in (CHECKER, INSTRUCTOR):
    if folder not in sys.path:
        sys.path.insert(0, folder)

SKIPPED = {".git", "__pycache__", "starter", "out"}  # bench/out, a made starter


def readme_command(marker, readme=os.path.join(ROOT, "README.md")):
    return subprocess.run([os.path.join(ROOT, "tools", "readme_command"), marker, readme],
                          capture_output=True, text=True, check=True).stdout


def files(project):
    """Every file the project is made of: those git tracks (as they are in the work tree) and
    those it does not ignore, where the project is a checkout, so that a file moved or added is
    copied without a list to update; otherwise every file but build folders and caches."""
    try:
        listed = subprocess.run(["git", "-C", project, "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, text=True, check=True).stdout
        return [f for f in listed.split("\0") if f and os.path.isfile(os.path.join(project, f))]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for top, dirs, names in os.walk(project):
            dirs[:] = [d for d in dirs if d not in SKIPPED and not d.startswith("build")]
            found += [os.path.relpath(os.path.join(top, n), project) for n in names]
        return found


def copy(project, dest):
    """Copies the project into dest (emptied first). Returns the paths copied, relative."""
    shutil.rmtree(dest, ignore_errors=True)
    copied = files(project)
    for name in copied:
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(os.path.join(project, name), os.path.join(dest, name))
    return copied
