"""sandbox_users.py: the user ids of root's sandboxes (sandbox.py, the class grader's runners
and compiles): one taken per checker or worker, held by a lock that every root of this machine
sees, and what a lab left as that user removed after each run: its processes (killed by the
run engine), its files in the places any user may write, its System V IPC objects.

  uid, lock = take_uid(runner)     a user id no account has and no other checker holds, of
                                   isolation.user_ids() (61000-61999 unless LAB_SANDBOX_UIDS says)
  user_cannot_run(uid, runner)     why that user cannot run programs here, or None
  kill_user(uid, runner)           every process of uid killed (the engine's --kill-user)
  left_behind()                    processes of user ids no grader holds (none, when all is well)
  stale(uid)                       whether uid is one of those ids, which no grader holds
  remove_files_of(uid), remove_ipc_of(uid), remove_tree(path)
"""
import fcntl
import os
import pwd
import socket
import subprocess

from lab04.checker import engine, isolation
from lab04.checker.isolation import Refused  # noqa: F401  (sandbox_users.Refused, sandbox.Refused: the callers' names for it)

LOCKS = "/run/lab04-sandbox"  # root's: one lock file for each user id in use
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # where any user can leave files (Debian's)




def processes_of(uid):
    """The pids of every live process whose real or effective user id is uid (a zombie is
    dead already: it holds no pipe and no file, and waits for its parent to reap it)."""
    return [pid for pid, ids in live_processes() if uid in ids]


def live_processes():
    """(pid, its real and effective user ids) of each live process, from one read of /proc."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                fields = dict(line.split(":", 1) for line in f if line.startswith(("State:", "Uid:")))
        except (OSError, ValueError):
            continue
        if fields.get("State", "").split()[:1] not in (["Z"], ["X"]):
            try:
                found.append((int(pid), {int(u) for u in fields.get("Uid", "").split()[:2]}))
            except ValueError:
                continue
    return found


def kill_user(uid, runner=None):
    """Kills every process of uid until none is left; True when none is. The run engine does it
    (runner, its program, or engine.program()'s: lab04_runner --kill-user), as it kills what
    every run leaves."""
    program = runner or engine.program()
    if not program:
        return not processes_of(uid)
    try:
        return subprocess.run([program, "--kill-user", str(uid)], stdin=subprocess.DEVNULL, capture_output=True,
                              env=engine.minimal_environment(), timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def left_behind(settle=1.0):
    """The pids of processes of a sandbox's user id that no grader holds: what some grader left
    running after it gave its user id back. A grader kills every process of its user id before it
    lets the id go, so a process of a held id is that grader's business (a lab running now, where
    graders share one PID namespace: a container's tests). Listed twice, settle seconds apart,
    each id free both times: a grader that took an id, ran and gave it back in between is not
    counted."""
    import time

    def of_free_ids():
        free = {uid for uid in isolation.user_ids() if not held(uid)}
        return {(pid, uid) for pid, ids in live_processes() for uid in ids & free}
    first = of_free_ids()
    if not first:
        return []
    time.sleep(settle)
    return sorted({pid for pid, uid in of_free_ids() & first})


def stale(uid):
    """Whether uid is a sandboxes' user id that no grader holds now: what is left of it (an ACL
    entry, kept_out.py's) is some ended grader's."""
    return uid in isolation.user_ids() and not held(uid)


def held(uid):
    """Whether a grader holds uid now (its UidLock's socket is bound)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.bind("\0lab04-sandbox-uid-%d" % uid)
        return False
    except OSError:
        return True
    finally:
        probe.close()


class UidLock:
    """A user id held by this checker: a lock file in LOCKS, and an abstract Unix socket named
    after the id. The socket's name is shared by every root that shares this network namespace
    (a chroot, a container with the host's network), where /run is not: graders in two chroots
    of one machine see each other's processes, and one must never take the other's user id and
    kill its labs. Both go when this process ends."""

    def __init__(self, uid):
        self.file = self.socket = None
        self.file = open(os.path.join(LOCKS, "%d.lock" % uid), "w")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.socket.bind("\0lab04-sandbox-uid-%d" % uid)
        except OSError:
            self.close()
            raise

    def close(self):
        for held in (self.socket, self.file):
            if held is not None:
                held.close()
        self.file = self.socket = None


def take_uid(runner=None):
    """A user id of isolation.user_ids() that no account has and no other checker holds: (uid,
    its lock). runner: the run engine's program, which kills what a killed checker left of that
    user's."""
    uids = isolation.user_ids()
    os.makedirs(LOCKS, mode=0o700, exist_ok=True)
    for uid in uids:
        try:
            pwd.getpwuid(uid)
            continue  # an account has it
        except KeyError:
            pass
        try:
            lock = UidLock(uid)
        except OSError:
            continue  # another checker's, here or in another root of this machine
        if not kill_user(uid, runner):  # a lab left by a checker that was killed
            lock.close()
            raise Refused("user id %d still has processes that cannot be killed" % uid)
        return uid, lock
    raise Refused("every user id from %d to %d is in use by another checker" % (uids[0], uids[-1]))


def user_cannot_run(uid, runner=None):
    """Why user id uid cannot run programs here, or None when it can: a system whose folders
    are closed to other users (a root folder of mode 700, as in some chroots) lets no
    unprivileged user load even the C library."""
    probe = subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                            "--", "/bin/sh", "-c", "exit 0"], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, cwd="/")
    kill_user(uid, runner)
    if probe.returncode == 0:
        return None
    closed = closed_folder()
    return ("a user of its own cannot run programs here (%s), so the lab would not start as one" %
            ("%s is closed to other users, mode %o" % (closed, os.stat(closed).st_mode & 0o777) if closed
             else (probe.stderr.strip().splitlines() or ["exit %d" % probe.returncode])[0][:120]))


def closed_folder():
    """The first of the system's folders that other users may not enter (a root folder of mode
    700, as in some chroots), or None."""
    return next((f for f in ("/", "/usr", "/usr/lib", "/usr/bin") if os.path.isdir(f) and not os.stat(f).st_mode & 0o001),
                None)


def remove_tree(path):
    """Removes path, whatever its depth (shutil.rmtree recurses, and a lab may leave a folder
    thousands deep: RecursionError) and whatever it is; a link is removed, never followed.
    Through coreutils' rm, which walks any depth with file descriptors of its own."""
    if os.path.lexists(path):
        subprocess.run(["rm", "-rf", "--one-file-system", "--", path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def remove_files_of(uid, places=SCRATCH):
    """Removes every file and folder of uid in places, at any depth: the walk enters the
    folders any user may write (such as an X11 socket folder, mode 1777) and uid's own, the
    only ones where uid can have made anything. Symbolic links are removed, never followed."""
    def walk(folder):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == uid:
                try:
                    remove_tree(e.path) if e.is_dir(follow_symlinks=False) else os.remove(e.path)
                except OSError:
                    pass
            elif e.is_dir(follow_symlinks=False) and st.st_mode & 0o002:
                walk(e.path)
    for place in places:
        if os.path.isdir(place) and not os.path.islink(place):
            walk(place)


def remove_ipc_of(uid):
    """Removes uid's System V shared memory, semaphores and message queues (they outlive
    their processes); a run with an IPC namespace of its own leaves none anyway."""
    for kind, flag in (("shm", "-m"), ("sem", "-s"), ("msg", "-q")):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                head, *rows = [line.split() for line in f]
        except (OSError, ValueError):
            continue
        ids = [r[head.index(kind + "id" if kind != "msg" else "msqid")] for r in rows
               if len(r) == len(head) and r[head.index("uid")] == str(uid)]
        for i in ids:
            subprocess.run(["ipcrm", flag, i], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
