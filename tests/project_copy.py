"""Copies the project for a test that builds it elsewhere: every file the project is made of,
taken from git where the project is a checkout (the files it tracks, as they are in the work
tree), so that a file moved or added is copied without this list changing; otherwise (a starter,
an unpacked archive) every file but build folders and caches.

copy(project, dest): dest is emptied first. Returns the list of paths copied, relative.
"""
import os
import shutil
import subprocess

SKIPPED = {".git", "__pycache__", "starter", "out"}  # bench/out, a made starter


def files(project):
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
    shutil.rmtree(dest, ignore_errors=True)
    copied = files(project)
    for name in copied:
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(os.path.join(project, name), os.path.join(dest, name))
    return copied
