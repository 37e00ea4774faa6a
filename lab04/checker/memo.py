"""memo.py: verdicts already given, kept in a folder, so that runs that print exactly what
earlier runs printed get the same verdict without loading torch and judging again.

A verdict is a function of what the runs printed (their stdout, stderr and exit status, and how
they ended), of the checker's own code and of the torch that computes the reference. The key
of an entry is a SHA-256 of all of these: the checker's Python files, torch's version.py (read,
not imported) and the Python that judges, and the runs, as bytes. Any change to one of them is
another key, so an entry is never stale; it is only unused, and the oldest go once the folder
holds more than KEPT.

The watch's verdict and check_lab.py (not --grade) use it, in the build folder, on the
student's own machine: it saves a student's time, never an instructor's judgement. A grade
never reads it: whoever can write the folder can write a verdict into it.
"""
import hashlib
import importlib.util
import json
import os
import sys

from lab04.checker import files

KEPT = 64  # entries; each is a few kB
SUFFIX = ".kept"  # an entry: a file <key>.kept, a JSON value


def version():
    """What every verdict depends on besides the runs, as bytes."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            h.update(name.encode() + b"\0")
            with open(os.path.join(here, name), "rb") as f:
                h.update(f.read())
    spec = importlib.util.find_spec("torch")  # finds torch without importing it
    if spec and spec.origin:
        try:
            with open(os.path.join(os.path.dirname(spec.origin), "version.py"), "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(spec.origin.encode())
    h.update(sys.executable.encode() + sys.version.encode())
    return h.digest()


class Memo:
    """The entries of one folder (None: none kept; every lookup misses)."""

    def __init__(self, folder):
        self.folder = folder
        self.base = version() if folder else b""

    def key(self, *parts):
        """The key of a verdict on these parts (bytes or text, in order)."""
        h = hashlib.sha256(self.base)
        for p in parts:
            p = p.encode() if isinstance(p, str) else p
            h.update(b"%d:" % len(p) + p)
        return h.hexdigest()

    def get(self, key, valid=lambda value: True):
        """The value kept for key, or None (also when valid(value) is false: an entry written
        by hand)."""
        if not self.folder:
            return None
        path = os.path.join(self.folder, key + SUFFIX)
        try:
            with open(path, encoding="utf-8") as f:
                value = json.load(f)
            os.utime(path)  # used: the last to go
        except (OSError, ValueError):
            return None
        return value if valid(value) else None

    def put(self, key, value):
        """Keeps value (JSON) for key; a folder that cannot be written keeps nothing."""
        if not self.folder:
            return
        try:
            os.makedirs(self.folder, exist_ok=True)
            files.write_text(os.path.join(self.folder, key + SUFFIX), json.dumps(value))
            self._forget_the_oldest()
        except OSError:
            pass

    def _forget_the_oldest(self):
        entries = []
        for name in os.listdir(self.folder):
            if name.endswith(SUFFIX):
                try:
                    entries.append((os.stat(os.path.join(self.folder, name)).st_mtime, name))
                except OSError:
                    pass
        for _, name in sorted(entries)[:-KEPT]:
            try:
                os.unlink(os.path.join(self.folder, name))
            except OSError:
                pass


def folder_argument(path):
    """The folder of --memo, made if missing; ValueError with words when it cannot be one."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ValueError("--memo %s: not a folder (give a folder for the verdicts kept, or leave --memo out)" % path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise ValueError("--memo %s: cannot make the folder (%s)" % (path, e.strerror))
    return path
