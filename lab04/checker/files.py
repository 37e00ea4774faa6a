"""files.py: every file the project writes (reports, grades, gradebooks, the kit's files) is
written whole or not at all, and never through a link.

The text goes to PATH.new, a file made anew (what stood there, a link a student's checkout
left, say, is removed first, never followed), then takes PATH's place in one rename: a reader
sees the old file or the new one, never half of one, and a link at PATH is replaced, not
written through. Data at the bottom: no other module of the project is imported.

A gradebook is written private(): every file and folder made is readable by this user alone
(umask 077), so that no lab graded later (a shard's classmates, on shared storage) can read
it, whatever its sandbox; opened() gives them the modes the user's umask gives, when the class
is done.
"""
import contextlib
import os
import stat
import subprocess

_made = None  # within private(): the files written and folders made, to be opened()


@contextlib.contextmanager
def private():
    """with private() as made: what is written in the block (written(), folder()) is created
    readable by this user alone; made lists it, and the umask it had is made.umask."""
    global _made
    outer = _made
    _made = Made()
    _made.umask = os.umask(0o077)
    try:
        yield _made
    finally:
        os.umask(_made.umask)
        if outer is not None:
            outer.extend(_made)
        _made = outer


class Made(list):
    umask = 0o022


def opened(made):
    """Gives each path private() made the mode the umask it had gives (never through a link)."""
    for path in made:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
            os.chmod(path, (0o777 if stat.S_ISDIR(st.st_mode) else 0o666) & ~made.umask)


def folder(path):
    """Makes path and the folders above it that are missing (mode by the umask), noted for
    opened() within private()."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for made in reversed(missing):
        os.makedirs(made, exist_ok=True)
        if _made is not None:
            _made.append(made)


def remove(path):
    """Removes what stands at path, a file, a link or a folder, never what a link points at."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        os.unlink(path)
    elif os.path.isdir(path):  # rm walks any depth (shutil.rmtree recurses: RecursionError)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


@contextlib.contextmanager
def written(path, mode="w", newline=None):
    """with written(path) as f: ... writes path whole when the block ends without an error,
    and leaves it as it was otherwise. mode "w" (UTF-8 text) or "wb"."""
    new = path + ".new"
    remove(new)
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": newline})) as f:
            yield f
    except BaseException:
        remove(new)
        raise
    os.replace(new, path)
    if _made is not None:
        _made.append(path)


def write_text(path, text, newline=None):
    """Writes text (UTF-8) to path whole (written())."""
    with written(path, newline=newline) as f:
        f.write(text)
