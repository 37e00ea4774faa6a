"""allowlist.py: what a lab's compile and runs may see, on every path that can make a root of
its own: the run engine's job's parts (as root) and bubblewrap's command line (as a user). One
list for both: the system, LibTorch where it lies, the lab's own files; nothing else.

  bwrap_allowlist(shown, bound)  bubblewrap's command line, up to the command
  engine_allowlist(root, shown)  the run engine's job's parts for a root of its own at root
  SEES                           what such a root holds, in words (the isolation line's)
"""
import os

# What a lab's compile and runs may see, on every path that can make a root of its own (as
# root, the run engine's fields I and B; as a user, bubblewrap): an allowlist, never a list of
# places to hide. The system's programs, libraries and headers (/usr, /etc, and /bin, /lib and
# their kin, links into /usr or folders of their own), /dev/null and its kin, an empty /tmp, a
# /proc, and what the caller adds: LibTorch's folders where they lie outside /usr, the lab's own
# staged files, its folder. Nothing else of the machine is there: no home, no /srv, no /grade,
# no gradebook, no class, no earlier term, no project.
SYSTEM = ("/usr", "/etc")
SYSTEM_LINKS = [d for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32") if os.path.islink(d)]
SYSTEM_FOLDERS = [d for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # where /usr is not merged
                  if os.path.isdir(d) and not os.path.islink(d)]


def beyond_the_system(folders):
    """Those of folders that the allowlist's system part does not hold already."""
    system = SYSTEM + tuple(SYSTEM_LINKS) + tuple(SYSTEM_FOLDERS)
    return [f for f in dict.fromkeys(folders) if f not in system and not f.startswith(tuple(d + "/" for d in system))]


SEES = ("a root of its own that holds the system's programs and libraries (/usr, /etc), LibTorch, its own files "
        "and an empty folder, and nothing else of the machine")


def bwrap_allowlist(shown=(), bound=()):
    """bubblewrap's command line, up to the command, for a root of its own with the allowlist:
    shown, folders or files seen where they are, read-only; bound, (folder, where the lab sees
    it, writable) of its own. No network, no capabilities, its own processes."""
    line = ["bwrap", "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    for folder in SYSTEM:
        line += ["--ro-bind", folder, folder]
    for link in SYSTEM_LINKS:
        line += ["--symlink", os.readlink(link), link]
    line += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]  # (first: a folder in /tmp is bound over it)
    for folder in SYSTEM_FOLDERS + beyond_the_system(shown):
        line += ["--ro-bind", folder, folder]
    for folder, inside, writable in bound:
        line += ["--bind" if writable else "--ro-bind", folder, inside]
    return line


def engine_allowlist(root, shown=()):
    """The run engine's job's parts (engine.Job's) for a root of its own at root (an empty
    folder): the allowlist, with shown (folders or files) read-only where they are; the job's
    home is bound by the engine itself."""
    return {"root": root, "shown": tuple(beyond_the_system(shown))}
