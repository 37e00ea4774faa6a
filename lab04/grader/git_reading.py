"""git_reading.py: a student's repository read as data only: git's plumbing commands (rev-parse,
rev-list, ls-tree, cat-file: no hook, pager, filter, signature check or work tree, which a
repository's own configuration could point at a program of the student's), each a process of
its own with limits on time and memory, the graded commit's tree streamed and stopped past
MAX_TREE_ENTRIES; and only what lies in the student's folder is read: a .git, a link in it,
borrowed objects (alternates), a shared folder (commondir) or grafts that come from outside it
are refused (deadlines.py reads a repository at its deadline through it).

  git(repo, *args)            one command's output, or Unreadable
  only_its_own(repo, inside)  Unreadable unless everything of the repository is inside
  tree_entries(repo, commit)  the graded commit's paths, streamed and bounded
"""
import os
import shutil
import subprocess
import time

from lab04.grader import submissions
from lab04.grader.late_penalty import Bad

GIT_TIMEOUT = 30  # seconds one git command may take on one student's repository
MAX_COMMITS = 100000  # commits read from a history (a lab's has a few dozen)


class Unreadable(Exception):
    """One student's history cannot be read: that row says why."""


GIT_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0",
           "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_REPLACE_OBJECTS": "1"}


def git_command(repo, *args):
    """git's command line for a student's repository: a process of its own, its memory bounded
    (prlimit), no configuration of the user's or the system's, no hook, pager or monitor."""
    if not shutil.which("git", path=GIT_ENV["PATH"]):
        raise Bad("reading a repository's history needs git: apt-get install git")
    bounded = ["prlimit", "--as=%d" % GIT_MEMORY, "--"] if shutil.which("prlimit") else []
    return bounded + ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                      "-c", "log.showSignature=false", "-c", "core.packedGitWindowSize=32m", "-c",
                      "core.packedGitLimit=256m", "--no-pager", "-C", repo] + list(args)


def git(repo, *args, limit=1 << 20):
    """One git plumbing command on a student's repository: its output (bytes), or Unreadable.
    No configuration of the user's or the system's applies, hooks and pagers are off, and the
    repository's owner may be any user (the grader runs as root)."""
    try:
        done = subprocess.run(git_command(repo, *args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=GIT_ENV, timeout=GIT_TIMEOUT)
    except FileNotFoundError:
        raise Bad("reading a repository's history needs git: apt-get install git")
    except subprocess.TimeoutExpired:
        raise Unreadable("git took longer than %d s to read it" % GIT_TIMEOUT)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise Unreadable("git could not read it (%s)" % (said[-1][:160] if said else "exit %d" % done.returncode))
    if len(done.stdout) > limit:
        raise Unreadable("git's answer was larger than %d bytes" % limit)
    return done.stdout


def is_repository(folder):
    return os.path.lexists(os.path.join(folder, ".git"))


MAX_GIT_ENTRIES = 20000  # files, folders and links in a .git read for what points out of it
MAX_TREE_ENTRIES = 200000  # paths in the graded commit's tree (a lab's has a few dozen)
GIT_MEMORY = 1 << 30  # bytes of address space one git command may take


def within(path, folder):
    return path == folder or path.startswith(folder + os.sep)


def only_its_own(repo, inside):
    """Unreadable unless every object, ref and graft of the repository comes from inside the
    student's folder (inside, real): its git folders, any link in them, the object stores it
    borrows (objects/info/alternates, http-alternates), a common folder (commondir) and
    grafts, which rewrite the history. (A folder whose objects were a classmate's, its branch
    a link to hers, was graded on her commit.)"""
    folders = []
    for question in ("--absolute-git-dir", "--git-common-dir"):
        where = os.path.realpath(os.path.join(repo, git(repo, "rev-parse", question).decode(
            "utf-8", "surrogateescape").strip()))
        if not within(where, inside):
            raise Unreadable("its .git points outside the student's folder (%s)" % submissions.readable(where))
        folders.append(where)
    seen, stack = 0, list(dict.fromkeys(folders))
    while stack:  # every link in them, at any depth (a loop, bounded)
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as e:
            raise Unreadable("its .git cannot be read (%s)" % e.strerror)
        seen += len(entries)
        if seen > MAX_GIT_ENTRIES:
            raise Unreadable("its .git holds more than %d files" % MAX_GIT_ENTRIES)
        for e in entries:
            if e.is_symlink():
                if not within(os.path.realpath(e.path), inside):
                    raise Unreadable("its .git holds a link to a file outside the student's folder (%s)"
                                     % submissions.readable(os.path.relpath(e.path, inside)))
            elif e.is_dir(follow_symlinks=False):
                stack.append(e.path)
    for git_dir in folders:
        for name, why in (("objects/info/alternates", "its objects are borrowed from another repository"),
                          ("objects/info/http-alternates", "its objects are borrowed from a server"),
                          ("info/grafts", "it has grafts, which rewrite its history"),
                          ("commondir", "it shares another repository's folder (commondir)")):
            path = os.path.join(git_dir, name)
            try:
                with open(path, "rb") as f:
                    text = f.read(1 << 16).decode("utf-8", "surrogateescape")
            except FileNotFoundError:
                continue
            except OSError as e:
                raise Unreadable("its .git cannot be read (%s: %s)" % (name, e.strerror))
            lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
            base = os.path.dirname(path) if name != "objects/info/alternates" else os.path.join(git_dir, "objects")
            if name in ("objects/info/alternates", "commondir"):
                lines = [l for l in lines if not within(os.path.realpath(os.path.join(base, l)), inside)]
            if lines:  # (where it points, said; a graft's hashes are a classmate's, not said)
                raise Unreadable("%s (.git/%s%s)" % (why, name, "" if name == "info/grafts" else
                                                      ": " + submissions.readable(lines[0][:80])))


def tree_entries(repo, commit):
    """The entries of commit's tree, at any depth, read as git writes them and stopped past
    MAX_TREE_ENTRIES (a tree of ten trees of ten, nine deep, is 10^10 paths in a few kB; read
    whole, it took the grader's memory)."""
    command = git_command(repo, "ls-tree", "-r", "-z", commit)
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=GIT_ENV)
    except FileNotFoundError:
        raise Bad("reading a repository's history needs git: apt-get install git")
    entries, rest, clock, problem = [], b"", time.monotonic(), None
    try:
        while True:
            chunk = proc.stdout.read1(1 << 16)
            if not chunk:
                break
            parts = (rest + chunk).split(b"\0")
            rest = parts.pop()
            entries += parts
            if len(entries) > MAX_TREE_ENTRIES:
                problem = "its commit %s holds more than %d files" % (commit[:12], MAX_TREE_ENTRIES)
                break
            if time.monotonic() - clock > GIT_TIMEOUT:
                problem = "git took longer than %d s to list its commit's files" % GIT_TIMEOUT
                break
    finally:
        proc.kill()
        said = proc.stderr.read(4000).decode("utf-8", "replace").strip().splitlines()
        status = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if problem:
        raise Unreadable(problem)
    if status != 0:
        raise Unreadable("git could not read it (%s)" % (said[-1][:160] if said else "exit %d" % status))
    return entries + ([rest] if rest else [])
