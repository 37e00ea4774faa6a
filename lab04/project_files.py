"""The project's files, from one list: tools/project_files.txt.

Every tool and test that copies the project (the starter and the autograders that
instructor/make_starter.py writes, the tests that build a copy elsewhere) takes its files from
this list, never by walking the folder: a user's build folder may have any name (b, out,
_build, cmake-build-debug) and hold a gigabyte, a socket of the tests' lab server or a FIFO;
an editor leaves its own files beside the lab. Only regular files are copied: a name on the
list that is now something else (a socket, a FIFO, a folder, a link) is refused by name.

  listed(project)            the list's names, in its order
  regular(project, names)    the same names, each checked to be a regular file (NotRegular)
  copy(project, names, dest) copies them into dest, with their modes

  tools/project_files.py --check [PROJECT]
      compares the list with what git tracks (`git ls-files`): exit 0 when they are the same,
      1 with the names that differ (a file added or removed without the list), 2 on bad input
  tools/project_files.py --write [PROJECT]
      writes the list from `git ls-files`, for a maintainer who added or removed a file
"""
import os
import shutil
import stat
import subprocess
import sys

from lab04 import PROJECT

LIST = os.path.join("tools", "project_files.txt")


class NotRegular(Exception):
    """A name on the list that is not a regular file in the project (or is missing)."""

    def __init__(self, name, what):
        super().__init__("%s is %s, not a regular file: only the project's regular files are copied" % (name, what))
        self.name = name


def listed(project):
    """The names on the project's list (relative paths, '/' between folders)."""
    with open(os.path.join(project, LIST), encoding="utf-8") as f:
        names = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    for name in names:
        if os.path.isabs(name) or ".." in name.split("/"):
            raise NotRegular(name, "outside the project")
    return names


def kind(path):
    """What a path is, in words, or None for a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISFIFO, "a FIFO")):
        if test(mode):
            return words
    return "a device"


def regular(project, names):
    """names, once each is seen to be a regular file of project (NotRegular otherwise)."""
    for name in names:
        what = kind(os.path.join(project, name))
        if what:
            raise NotRegular(name, what)
    return list(names)


def copy(project, names, dest):
    """Copies the named files of project into dest (its folders made as needed), with their
    modes; checks them all first, so that nothing is copied when one is refused."""
    for name in regular(project, names):
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(project, name), target, follow_symlinks=False)


def tracked(project):
    """What git tracks in project, or None where project is not the top of a git checkout."""
    try:
        top = subprocess.run(["git", "-C", project, "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(project):
            return None
        out = subprocess.run(["git", "-C", project, "ls-files", "-z"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted(f for f in out.split("\0") if f)


def main(argv):
    if len(argv) not in (1, 2) or argv[0] not in ("--check", "--write"):
        print("project_files: usage: project_files.py --check|--write [PROJECT]", file=sys.stderr)
        return 2
    project = argv[1] if len(argv) == 2 else PROJECT
    names = tracked(project)
    if names is None:
        print("project_files: %s is not the top of a git checkout: give the project's folder" % project[:200],
              file=sys.stderr)
        return 2
    if argv[0] == "--write":
        with open(os.path.join(project, LIST), "w", encoding="utf-8") as f:
            f.write("# The project's files: every tool and test that copies the project copies these\n"
                    "# (tools/project_files.py). Written by tools/project_files.py --write.\n")
            f.write("".join(name + "\n" for name in names))
        return 0
    try:
        on_list = listed(project)
    except (OSError, UnicodeDecodeError, NotRegular) as e:
        print("project_files: cannot read the list %s: %s" % (LIST, e), file=sys.stderr)
        return 2
    added, removed = sorted(set(names) - set(on_list)), sorted(set(on_list) - set(names))
    for name in added:
        print("tracked by git, not on %s: %s" % (LIST, name))
    for name in removed:
        print("on %s, not tracked by git: %s" % (LIST, name))
    if added or removed:
        print("tools/project_files.py --write writes the list from git ls-files")
    return 1 if added or removed else 0

