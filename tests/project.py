"""What the tests know of the project: where it is, where its parts are, and how to copy it.

Importing it puts the checker (checker/) and the instructor's kit (instructor/) on sys.path,
and the tools' folder (tools/), so that a test imports check_lab, make_starter or project_files
as the tools themselves are laid out; the tools never import a test.

  ROOT, CHECKER, INSTRUCTOR, TOOLS   the project's folder and its parts
  GOLDEN                             the seed's printed output
  readme_command(marker, readme)     the commands after <!-- marker --> (tools/readme_command,
                                     the reader .ci/run and bench/run use)
  files(project)                     the project's files, from its list (tools/project_files.txt)
  files_in(folders)                  those in these folders (tests/fast_lab: a folder in one)
  copy(project, dest)                a copy of them, for a test that builds the project elsewhere
"""
import fcntl
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKER = os.path.join(ROOT, "checker")
INSTRUCTOR = os.path.join(ROOT, "instructor")
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "seed_default_output.txt")
TOOLS = os.path.join(ROOT, "tools")
for folder in (CHECKER, INSTRUCTOR, TOOLS):
    if folder not in sys.path:
        sys.path.insert(0, folder)
import project_files  # noqa: E402  (tools/: the project's list of files)


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


def copy(project, dest):
    """Copies the project's files into dest (emptied first). Returns the paths copied, relative."""
    shutil.rmtree(dest, ignore_errors=True)
    copied = files(project)
    project_files.copy(project, copied, dest)
    return copied


class Unwritable:
    """A folder this process cannot write while the context lasts, as a read-only image layer or
    another user's build is to a grader; prefix: what a command that must meet it starts with.
    Not root: the folder's mode 555. Root writes any folder: in a mount namespace of its own the
    folder is bound read-only on itself (the prefix); where none can be made (a chroot, whose /
    is no mount point), the folder is made immutable (as chattr +i does, which stops root too);
    how says which."""

    MOUNT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'

    def __init__(self, folder):
        self.folder, self.prefix, self.undo = folder, [], None

    def __enter__(self):
        if os.geteuid() != 0:
            os.chmod(self.folder, 0o555)
            self.undo, self.how = ["chmod", "755", self.folder], "mode 555"
        elif subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                            capture_output=True).returncode == 0:
            self.prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", self.MOUNT, self.folder]
            self.how = "bound read-only in a mount namespace"
        else:  # chattr's own call (e2fsprogs is not on every system): no dependency
            immutable(self.folder, True)
            self.undo, self.how = lambda: immutable(self.folder, False), "immutable (as chattr +i makes it)"
        return self

    def __exit__(self, *exc):
        if callable(self.undo):
            self.undo()
        elif self.undo:
            subprocess.run(self.undo, check=True, capture_output=True)


FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10  # <linux/fs.h>


def immutable(path, on):
    """Sets or clears a file's immutable flag, as chattr +i and -i do (ioctl FS_IOC_SETFLAGS)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        flags = bytearray(4)
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags)
        value = struct.unpack("i", flags)[0]
        value = value | FS_IMMUTABLE_FL if on else value & ~FS_IMMUTABLE_FL
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", value))
    finally:
        os.close(fd)
