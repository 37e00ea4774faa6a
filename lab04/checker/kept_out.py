"""kept_out.py: a sandbox's user id kept out of places by a POSIX ACL entry of no right, where
no root of its own can be made (Docker's defaults refuse namespaces to root, some chroots too):
the checker's sandbox (sandbox.py) and the class grader's runners (runner_client.py) close the
project, the class, the gradebook and --hide's places to the lab's user this way.

  kept = KeptOut(uid, places, needed)   each place closed to uid (or, where it holds something
                                        of needed, each of its entries but the ones on the way)
  kept.close()                          every entry taken away again
  KeptOut.forget_stale(places, needed, stale)   the entries of user ids stale(uid) names (no grader
                                                holds them: sandbox_users.stale), taken away
  kept_out_in_words(kept, what)         the isolation line's words for it
"""
import fcntl
import os
import stat
import struct

# A sandbox's user id is kept out of the places it must not read by a POSIX ACL
# entry that gives that user no right (system.posix_acl_access, which the kernel checks before
# "other"): every other user's rights, and the modes, stay as they were, and each ACL is put
# back as it was when the grading ends.
ACL = "system.posix_acl_access"
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
NO_ID = 0xFFFFFFFF


def acl_entries(blob, mode):
    """The entries (tag, rights, id) of an access ACL's bytes; of the mode where there are none."""
    if blob:
        return [struct.unpack_from("<HHI", blob, 4 + 8 * i) for i in range((len(blob) - 4) // 8)]
    return [(ACL_USER_OBJ, (mode >> 6) & 7, NO_ID), (ACL_GROUP_OBJ, (mode >> 3) & 7, NO_ID), (ACL_OTHER, mode & 7, NO_ID)]


def acl_blob(entries):
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in sorted(entries, key=lambda e: (e[0], e[2])))


def acl_keeping_out(blob, mode, uid):
    """An access ACL (its xattr's bytes) that adds to blob (the file's own, or None: its mode's)
    an entry giving uid no right, every other entry's effect unchanged."""
    entries = [e for e in acl_entries(blob, mode) if not (e[0] == ACL_USER and e[2] == uid)] + [(ACL_USER, 0, uid)]
    if not any(e[0] == ACL_MASK for e in entries):  # the group class's rights, as they were
        entries.append((ACL_MASK, max(e[1] for e in entries if e[0] == ACL_GROUP_OBJ), NO_ID))
    return acl_blob(entries)


class KeptOut:
    """Keeps uid out of places (folders or files), from now until close(): an ACL entry of no
    right on each. A place that holds something of needed (the build's precompiled header, say)
    is not closed itself: each of its entries is, but the ones on the way to what is needed.
    kept: what was closed; failed: what could not be (a file system without ACLs). Graders
    that share a place (the class grader's workers, each with a user id of its own) each add
    and remove their own entry, the inode locked while they change it; forget_stale() takes
    away the entries of user ids no grader holds any more (a worker ended without closing)."""

    def __init__(self, uid, places, needed=()):
        self.uid, self.kept, self.failed = uid, [], []
        for path in closable(places, needed):
            if change_acl(path, lambda old, mode: acl_keeping_out(old, mode, self.uid)):
                self.kept.append(path)
            else:
                self.failed.append(path)

    def close(self):
        """Takes this user's entry away again."""
        for path in reversed(self.kept):
            change_acl(path, lambda old, mode: acl_without(old, mode, lambda uid: uid == self.uid))
        self.kept = []

    @staticmethod
    def forget_stale(places, needed, stale):
        """Takes away, from the places a KeptOut of these would close, every entry of a user id
        that stale(uid) names: a sandbox's that no grader holds now (sandbox_users.stale)."""
        for path in closable(places, needed):
            change_acl(path, lambda old, mode: acl_without(old, mode, stale))


def closable(places, needed=()):
    """The folders and files a KeptOut of places closes: each place, or, where it holds
    something of needed, each of its entries but the ones on the way (never a link, a FIFO, a
    socket or a device: what a link names is its target's business, and the others are never
    opened)."""
    needed = [os.path.realpath(n) for n in needed]
    todo = list(dict.fromkeys(os.path.realpath(p) for p in places if p))
    while todo:
        path = todo.pop(0)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) or path in needed:
            continue
        if stat.S_ISDIR(st.st_mode) and any(n.startswith(path.rstrip("/") + "/") for n in needed):
            todo += [os.path.join(path, name) for name in sorted(os.listdir(path))]
        else:
            yield path


def acl_without(blob, mode, drop):
    """The ACL less the named users' entries drop(uid) says to take; None (no ACL of its own)
    where no named entry is left."""
    entries = [e for e in acl_entries(blob, mode) if not (e[0] == ACL_USER and drop(e[2]))]
    return acl_blob(entries) if any(e[0] in (ACL_USER, ACL_GROUP) for e in entries) else None


def change_acl(path, how):
    """Sets path's ACL to how(its ACL's bytes or None, its mode) (None: no ACL of its own), the
    inode locked; whether it could."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            old = os.getxattr(fd, ACL)
        except OSError:
            old = None
        new = how(old, os.fstat(fd).st_mode)
        if new is None and old is not None:
            os.removexattr(fd, ACL)
        elif new is not None and new != old:
            os.setxattr(fd, ACL, new)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def kept_out_in_words(kept, what):
    """The isolation line's words where no root of its own could be made: what the lab was kept
    out of (an ACL of no right), what could not be, and that the rest is readable."""
    said = "no mount namespace can be made here: it was kept out of %s (an ACL entry of no right on %d places)" % (
        what, len(kept.kept)) if kept and kept.kept else "no mount namespace can be made here"
    if kept and kept.failed:
        said += ", but not out of %s (no ACLs there)" % ", ".join(kept.failed[:3])
    return said + ", and every other file any user may read, it may read too"
