"""files.py: every file the project writes (reports, grades, gradebooks, the kit's files) is
written whole or not at all, and never through a link.

The text goes to PATH.new, a file made anew (what stood there, a link a student's checkout
left, say, is removed first, never followed), then takes PATH's place in one rename: a reader
sees the old file or the new one, never half of one, and a link at PATH is replaced, not
written through. Data at the bottom: no other module of the project is imported.
"""
import contextlib
import os
import subprocess


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


def write_text(path, text, newline=None):
    """Writes text (UTF-8) to path whole (written())."""
    with written(path, newline=newline) as f:
        f.write(text)
