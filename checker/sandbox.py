"""sandbox.py: the one way to run a student's lab, for everything that runs one (the check,
--grade, Gradescope's run_autograder). A student's program is untrusted: it may try to raise its
grade, to stop or outlive its grader, or to reach the grader's files. What it gets:

  as root (Gradescope, a CI container): an unprivileged user id of its own (one of UIDS, one
      checker at a time each, held by a lock), no supplementary groups, no way to regain
      privileges (no_new_privs, no capabilities), an empty working folder of its own, a
      minimal environment. Every process of that user is killed after each run, and the
      checker sees that none is left before it goes on. Files it left in /tmp, /var/tmp,
      /dev/shm and /run/lock, at any depth, and its System V IPC objects are removed. Where
      root may make a mount namespace, each run has one: /proc shows only its user's
      processes, and the project and the lab's build folder are hidden (OUT_OF_SIGHT). The
      class grader's runs (Runner, ForkedBox) also get, where root may make namespaces, a
      private tmpfs for each of those and their home, an IPC namespace, and a cgroup per
      worker (at most one core and MEMORY for all of a student's processes).
  as a user, with bubblewrap (Debian's bubblewrap): namespaces of its own (no network, its own
      processes only), the file system read-only but for an empty folder of its own, an empty
      /tmp, and no view of the home folders.
  as a user, without bubblewrap, where user namespaces work (util-linux's unshare): no
      network, its own processes and IPC, the home folders, /var/tmp, /dev/shm and /run/lock
      hidden by empty ones; the rest of the file system as the user has it.
  where none of these works: a session of its own (setsid) and the limits, and the report
      says that the lab was not isolated, and how to get isolation. Never a silent downgrade.

In every case: limits on memory (address space; not for an AddressSanitizer build, which
reserves terabytes of shadow memory: LAB_SANITIZED=1, the grader's setting, never the binary's), processes, file size, CPU time, and no core files; and
the wall-time and output limits of check_lab.py. LAB_SANDBOX=user|bwrap|unshare|none chooses
one (the tests use it); an unknown or impossible choice is an error, never a weaker sandbox.

  box = sandbox.for_lab(path)           one per lab and checker; closed when the checker ends
  box.isolation                         one line: how the lab runs
  box.run(args, timeout, max_out, max_err) -> Run(status, out, err, stopped, limit)
"""
import atexit
import fcntl
import os
import pwd
import re
import select
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import time

MEMORY = 4 << 30  # bytes of address space
PROCESSES = 1024  # processes and threads of a sandbox's own user
FILE_SIZE = 64 << 20  # bytes: the largest file the lab may write
UIDS = range(61000, 62000)  # user ids for root's sandboxes, where no account has them
LOCKS = "/run/lab04-sandbox"  # root's: one lock file for each user id in use
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # where any user can leave files (Debian's)
SAFE_ENV = ("LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")


def minimal_environment():
    """The environment of a process whose memory a lab may see (the class runner it is forked
    from): nothing of the grader's but what a program needs, and the loader's and sanitizers'
    settings (SAFE_ENV)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    env.update({k: os.environ[k] for k in SAFE_ENV if k in os.environ})
    return env


def limits(timeout, asan=False, processes=PROCESSES):
    """The resource limits of one run of the lab, whoever applies them (prlimit here, the class
    runner, the watch's verdict): {name: value}, the names those of prlimit's options and the
    runner's L fields. The CPU time follows the wall-time limit (SIGXCPU then), and there is no
    memory limit for an AddressSanitizer build (asan). processes: where the lab runs as a user
    who has processes of their own already, as many more."""
    found = {"nproc": processes, "fsize": FILE_SIZE, "cpu": int(timeout) + 5, "core": 0}
    if not asan:
        found["as"] = MEMORY
    return found


class Refused(Exception):
    """The sandbox asked for cannot be set up here: one line, for the checker's usage error."""


class NotStarted(Exception):
    """The sandbox could not start a run (the grader's fault, not the lab's): the caller
    says so and grades nothing, never a 0."""


class Run:
    def __init__(self, status, out, err, stopped, limit):
        self.status = status  # exit status (negative: the signal), or None when stopped
        self.out, self.err = out, err  # bytes, at most max_out and max_err of them
        self.stopped = stopped  # None, "time" or "size"
        self.limit = limit  # None, or which limit the lab ran into, in words


def _works(cmd):
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def bwrap_works():
    """Whether bubblewrap can make its namespaces here (as root, or as a user where the kernel
    allows user namespaces)."""
    return bool(shutil.which("bwrap")) and _works(["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                                                   "--die-with-parent", "true"])


def _processes_of(uid):
    """The pids of every live process whose real or effective user id is uid (a zombie is
    dead already: it holds no pipe and no file, and waits for its parent to reap it)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                fields = dict(line.split(":", 1) for line in f if line.startswith(("State:", "Uid:")))
        except (OSError, ValueError):
            continue
        if str(uid) in fields.get("Uid", "").split()[:2] and fields.get("State", "").split()[:1] not in (["Z"], ["X"]):
            found.append(int(pid))
    return found


def _kill_all_as(uid):
    """kill(-1, SIGKILL) as uid, in a child that becomes that user: every process of the user
    at once, however fast they fork (the kernel lets no fork through its sweep), and no other
    process. Pid by pid, a lab that forks without end outran the killing (check_lab.py then
    refused to grade it)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getuid() == uid and os.geteuid() == uid and uid != 0:  # never kill(-1) as root
                os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kill_user(uid, patience=60.0):
    """Kills every process of uid until none is left; True when none is. The patience is for
    the kernel: a lab that forked up to its limit of processes leaves a thousand copies of a
    LibTorch program, and tearing them down took from 5 to 20 s of system time here."""
    deadline = time.monotonic() + patience
    while True:
        pids = _processes_of(uid)
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        if os.geteuid() == 0:
            _kill_all_as(uid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


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


def take_uid():
    """A user id of UIDS that no account has and no other checker holds: (uid, its lock)."""
    os.makedirs(LOCKS, mode=0o700, exist_ok=True)
    for uid in UIDS:
        try:
            pwd.getpwuid(uid)
            continue  # an account has it
        except KeyError:
            pass
        try:
            lock = UidLock(uid)
        except OSError:
            continue  # another checker's, here or in another root of this machine
        if not kill_user(uid):  # a lab left by a checker that was killed
            lock.close()
            raise Refused("user id %d still has processes that cannot be killed" % uid)
        return uid, lock
    raise Refused("every user id from %d to %d is in use by another checker" % (UIDS[0], UIDS[-1]))


def user_cannot_run(uid):
    """Why user id uid cannot run programs here, or None when it can: a system whose folders
    are closed to other users (a root folder of mode 700, as in some chroots) lets no
    unprivileged user load even the C library."""
    probe = subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                            "--", "/bin/sh", "-c", "exit 0"], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, cwd="/")
    kill_user(uid)
    if probe.returncode == 0:
        return None
    closed = [f for f in ("/", "/usr", "/usr/lib", "/usr/bin") if os.path.isdir(f) and not os.stat(f).st_mode & 0o001]
    return ("a user of its own cannot run programs here (%s), so the lab would not start as one" %
            ("%s is closed to other users, mode %o" % (closed[0], os.stat(closed[0]).st_mode & 0o777) if closed
             else (probe.stderr.strip().splitlines() or ["exit %d" % probe.returncode])[0][:120]))


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


def read_what_is_left(pipes, most):
    """Reads, without waiting, what the pipes of a selector still hold once the lab and what it
    started are killed (at most `most` bytes more of each): all it wrote before it was stopped."""
    for key in pipes.get_map().values():
        before = len(key.data)
        while len(key.data) - before <= most and select.select([key.fd], [], [], 0)[0]:
            chunk = os.read(key.fd, 1 << 16)
            if not chunk:
                break
            key.data.extend(chunk)


def become_subreaper():
    """Orphans of the lab (a process it detached) are then reparented to the checker, which
    reaps them: a zombie still counts against its user's process limit."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def reap_orphans():
    """Reaps every child that has ended (run once the lab itself has been waited for)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sanitizer_build():
    """Whether the labs to run were built with AddressSanitizer, which reserves terabytes of
    address space and so runs without the memory limit: the grader's own setting
    (LAB_SANITIZED=1, which the sanitizer build's tests set), never read from the student's
    binary, which could claim it to lift its limit."""
    return os.environ.get("LAB_SANITIZED") == "1"


PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checker's project
# Run as root in a mount namespace of the run's own, before the lab's user is taken: a /proc
# that shows only that user's processes, and an empty read-only folder over each path named.
OUT_OF_SIGHT = ('set -e; mount -t proc -o hidepid="$1" proc /proc; shift; '
                'while [ "$1" != -- ]; do mount -t tmpfs -o size=4k,mode=755,ro lab04 "$1"; shift; done; shift; '
                'exec "$@"')
_root_hidepid = []


def root_hidepid():
    """As root: the hidepid value a mount namespace's /proc takes here ("invisible", "2"), or
    None where root cannot make one (a container without the right)."""
    if os.geteuid() != 0:
        return None
    if not _root_hidepid:
        _root_hidepid.append(next((h for h in ("invisible", "2") if _works(
            ["unshare", "--mount", "--propagation", "private", "mount", "-t", "proc", "-o", "hidepid=" + h, "proc",
             "/proc"])), None))
    return _root_hidepid[0]


class Sandbox:
    def __init__(self, lab, module=None, runtime=None):
        """lab: the program to run; or, with module and runtime, the class grader's runner
        (grader/runner.cpp), which loads the runtime (LibTorch) then runs the module's main."""
        self.asan = sanitizer_build()
        self.uid = self.lock = None
        self.mode, self.why = self._choose()
        self.work = tempfile.mkdtemp(prefix="lab04-sandbox-")
        os.chmod(self.work, 0o711 if self.mode == "user" else 0o700)
        os.makedirs(os.path.join(self.work, "bin"))
        self.lab = os.path.join(self.work, "bin", "lab04_attention")
        shutil.copy(lab, self.lab)  # the student's user may run it, never change it
        os.chmod(os.path.join(self.work, "bin"), 0o755)
        os.chmod(self.lab, 0o755)
        self.loads = []  # what the runner loads: the runtime, then the module
        for name, path in (("liblab04_runtime.so", runtime), ("lab04_module.so", module)):
            if path:
                shutil.copy(path, os.path.join(self.work, "bin", name))
                os.chmod(os.path.join(self.work, "bin", name), 0o755)
                self.loads.append(name)
        self.home = os.path.join(self.work, "home")
        self.libraries = self._library_folders(runtime or lab)
        system = ("/usr", "/bin", "/sbin", "/lib", "/etc", "/opt", "/tmp", "/var", "/home", "/root")
        hidden = [f for f in self._hidden([PROJECT, os.path.dirname(os.path.realpath(lab))])
                  if f not in system and not f.startswith(tuple(d + "/" for d in system[:6]))
                  and not any(lib.startswith(f.rstrip("/") + "/") for lib in self.libraries)]
        self.hidden = [f for f in hidden if not any(f.startswith(h.rstrip("/") + "/") for h in hidden)]  # outermost
        self.isolation = self._describe()
        if self.mode == "user" and root_hidepid():
            self.isolation += "; the project, the lab's build folder and other users' processes hidden from it"
        become_subreaper()
        atexit.register(self.close)

    @staticmethod
    def _library_folders(lab):
        """The folders of the libraries the lab loads (ldd), so that a sandbox hiding the home
        folders does not hide a LibTorch installed in one."""
        try:
            listed = subprocess.run(["ldd", lab], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        found = re.findall(r"=> (/\S+) \(", listed)
        return sorted({os.path.dirname(os.path.realpath(p)) for p in found} | {os.path.dirname(p) for p in found})

    # --- which sandbox -------------------------------------------------------------------
    def _choose(self):
        wanted = os.environ.get("LAB_SANDBOX", "")
        if wanted not in ("", "user", "bwrap", "unshare", "none"):
            raise Refused("LAB_SANDBOX takes user, bwrap, unshare or none, not %r" % wanted[:40])
        root = os.geteuid() == 0
        if wanted in ("", "user") and root:
            missing = [t for t in ("setpriv", "prlimit") if not shutil.which(t)]
            if not missing:
                self._take_uid()
                cannot = self._user_cannot_run()
                if not cannot:
                    return "user", None
                self._release_uid()
                if wanted:
                    raise Refused("LAB_SANDBOX=user: " + cannot)
                return "none", cannot
            if wanted:
                raise Refused("LAB_SANDBOX=user needs %s (util-linux)" % " and ".join(missing))
        if wanted == "user" and not root:
            raise Refused("LAB_SANDBOX=user needs root: it runs the lab as a user of its own")
        if wanted in ("", "bwrap") and bwrap_works():
            return "bwrap", None
        if wanted == "bwrap":
            raise Refused("LAB_SANDBOX=bwrap: bubblewrap is not installed, or cannot make namespaces here")
        if wanted in ("", "unshare") and _works(["unshare", "--user", "--map-root-user", "--mount", "--pid",
                                                 "--fork", "--net", "unshare", "--user", "--map-user=%d" % os.getuid(),
                                                 "--mount", "true"]):
            return "unshare", None
        if wanted == "unshare":
            raise Refused("LAB_SANDBOX=unshare: user namespaces cannot be made here")
        if wanted == "none":
            return "none", "LAB_SANDBOX=none"
        return "none", ("no user namespaces here" if shutil.which("bwrap") else "bubblewrap is not installed"
                        " and no user namespaces can be made here")

    def _take_uid(self):
        self.uid, self.lock = take_uid()

    def _user_cannot_run(self):
        return user_cannot_run(self.uid)

    def _release_uid(self):
        if self.lock:
            self.lock.close()
        self.uid = self.lock = None

    def _describe(self):
        limits = "limits: %s, %d processes, files up to %d MB, CPU time, no core files" % (
            "memory not limited (an AddressSanitizer build)" if self.asan else "memory %d GiB" % (MEMORY >> 30),
            PROCESSES, FILE_SIZE >> 20)
        if self.mode == "user":
            return ("isolation: the lab ran as user id %d of its own (no groups, no privileges), in an empty "
                    "folder; %s" % (self.uid, limits))
        if self.mode == "bwrap":
            return ("isolation: bubblewrap (no network, no capabilities, its own processes, the file system read-only but "
                    "for an empty folder, no home folders); %s" % limits)
        if self.mode == "unshare":
            return ("isolation: namespaces of its own (no network, its own processes and IPC, no home folders, "
                    "/var/tmp, /dev/shm or /run/lock; "
                    "install bubblewrap to make the file system read-only too); %s" % limits)
        how = ("open the system's folders to other users (chmod o+rx /)" if "closed to other users" in self.why
               else "install bubblewrap (Debian: apt-get install bubblewrap) or run the checker as root")
        return ("isolation: NONE: the lab was not isolated (%s): it ran with your rights. To isolate it, "
                "%s; %s" % (self.why, how, limits))

    # --- running -------------------------------------------------------------------------
    def limits(self, timeout):
        """This sandbox's limits() for a run: a user's own processes count towards the
        process limit too, so such a run (not of a user of its own) is allowed as many more."""
        return limits(timeout, self.asan, PROCESSES if self.mode == "user" else
                      PROCESSES + len(_processes_of(os.getuid())) + 64)

    def _prlimit(self, timeout):
        found = self.limits(timeout)
        cpu = found.pop("cpu")  # SIGXCPU then, SIGKILL a second later
        return ["prlimit", "--cpu=%d:%d" % (cpu, cpu + 1)] + ["--%s=%d" % kv for kv in found.items()] + ["--"]

    def _env(self, home):
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
        env.update({k: os.environ[k] for k in SAFE_ENV if k in os.environ})
        if self.asan:  # stdbuf's LD_PRELOAD would come before the ASan runtime of a g++ build
            env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))
        return env

    def _command(self, args, timeout):
        """The command that runs the lab in this sandbox, and its home folder as the lab sees it."""
        line_by_line = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
        limits = self._prlimit(timeout) if shutil.which("prlimit") else []
        if self.mode == "user":
            return (self._out_of_sight() + limits + ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.uid,
                                                     "--clear-groups", "--no-new-privs", "--inh-caps=-all",
                                                     "--bounding-set=-all", "--"]
                    + line_by_line + [self.lab] + args), self.home
        if self.mode == "bwrap":
            inside = "/tmp/lab04"
            hide = []
            for folder in self._hidden(["/home", "/root", os.path.expanduser("~")]):
                hide += ["--tmpfs", folder]
            for folder in self.libraries:  # a LibTorch under a hidden folder (pip's, in a home)
                if any(folder.startswith(h.rstrip("/") + "/") for h in hide[1::2]):
                    hide += ["--ro-bind", folder, folder]
            return (["bwrap", "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
                     "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"] + hide
                    + ["--ro-bind", os.path.join(self.work, "bin"), inside + "/bin",
                       "--bind", self.home, inside + "/home", "--chdir", inside + "/home", "--"]
                    + limits + line_by_line + [inside + "/bin/lab04_attention"] + args), inside + "/home"
        if self.mode == "unshare":
            # The outer namespace mounts empty folders over the homes, then the lab runs in a
            # nested one, as the user again: there it cannot undo those mounts (they are locked).
            hide = [f for f in self._hidden(["/home", "/root", os.path.expanduser("~"), "/var/tmp", "/dev/shm",
                                             "/run/lock"])
                    if not any(lib.startswith(f.rstrip("/") + "/") for lib in self.libraries)]
            script = 'for f in $HIDE; do mount -t tmpfs -o mode=755 none "$f"; done; exec "$@"'
            return (["unshare", "--user", "--map-root-user", "--mount", "--pid", "--ipc", "--fork", "--kill-child", "--net",
                     "--", "env", "HIDE=" + " ".join(hide), "sh", "-c", script, "sh",
                     "unshare", "--user", "--map-user=%d" % os.getuid(), "--map-group=%d" % os.getgid(), "--mount",
                     "--"] + limits + line_by_line + [self.lab] + args), self.home
        return limits + line_by_line + [self.lab] + args, self.home

    def _out_of_sight(self):
        """As root, where a mount namespace can be made: the command that runs the lab with the
        grader's processes out of its sight (/proc shows only its user's) and the project (the
        checker, the lesson) and the lab's build folder hidden by empty folders. [] elsewhere."""
        hidepid = root_hidepid()
        if not hidepid:
            return []
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", OUT_OF_SIGHT, "sh", hidepid] + \
            self.hidden + ["--"]

    def seen(self, name):
        """Where the lab sees a file of its bin folder."""
        return os.path.join("/tmp/lab04/bin" if self.mode == "bwrap" else os.path.join(self.work, "bin"), name)

    def _hidden(self, folders):
        """The folders of these that exist and do not hold the sandbox's own."""
        return [f for f in dict.fromkeys(folders)
                if os.path.isdir(f) and not self.work.startswith(f.rstrip("/") + "/") and f != "/"]

    def _fresh_home(self):
        remove_tree(self.home)
        os.mkdir(self.home, 0o700)
        if self.mode == "user":
            os.chown(self.home, self.uid, self.uid)

    def _clean_up(self, proc):
        """After a run: nothing of the lab's is left running, nor in the shared scratch folders."""
        if self.mode == "user":
            if not kill_user(self.uid):
                raise Refused("the lab's processes (user id %d) could not all be killed" % self.uid)
            remove_files_of(self.uid)
            remove_ipc_of(self.uid)
        else:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # bwrap and unshare: their namespace ends with them
            except (ProcessLookupError, PermissionError):
                pass

    def run(self, args, timeout, max_out, max_err):
        self._fresh_home()
        cmd, home = self._command(args, timeout)
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=self.home, env=self._env(home), start_new_session=True, close_fds=True)
        except OSError as e:
            return Run(None, b"", ("could not be started: %s" % e.strerror).encode(), "start", None)
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        stopped, status = None, None
        with selectors.DefaultSelector() as pipes:
            pipes.register(proc.stdout, selectors.EVENT_READ, out)
            pipes.register(proc.stderr, selectors.EVENT_READ, err)
            exited_at = None
            while pipes.get_map() and not stopped:
                left = deadline - time.monotonic()
                if left <= 0:
                    # The limit judges the lab, not this reader, which a loaded machine may wake
                    # late: a lab found ended did not run out of time, and what it printed
                    # before the limit is still in the pipes (read below, once it is killed).
                    if exited_at is None and proc.poll() is None:
                        stopped = "time"
                    break
                for key, _ in pipes.select(min(left, 0.05)):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        pipes.unregister(key.fileobj)
                        continue
                    key.data.extend(chunk)
                    if len(out) > max_out or len(err) > max_err:
                        stopped = "size"
                if exited_at is None and proc.poll() is not None:
                    # The lab has ended; what it left behind must not hold its pipes open.
                    exited_at = time.monotonic()
                    self._clean_up(proc)
                    deadline = min(deadline, exited_at + 2.0)  # what is still in the pipes
            if exited_at is not None and stopped == "time":
                stopped = None  # it ended in time; the rest of its pipes is what it left behind
            if not stopped:  # both pipes closed: the lab may still run, with its output closed
                try:
                    proc.wait(max(deadline - time.monotonic(), 0.01))
                except subprocess.TimeoutExpired:
                    stopped = "time"
            self._clean_up(proc)
            status = proc.wait()
            reap_orphans()
            self._clean_up(proc)  # anything an orphan started while it was being reaped
            if stopped != "size":
                read_what_is_left(pipes, max(max_out, max_err))
                if not stopped and (len(out) > max_out or len(err) > max_err):
                    stopped = "size"
        proc.stdout.close()
        proc.stderr.close()
        if stopped:
            status = None
        elif self.mode in ("bwrap", "unshare") and 128 < status <= 128 + 64:
            status = -(status - 128)  # they pass on a signal's death as 128 + its number
        return Run(status, bytes(out), bytes(err), stopped, self._limit(status, err))

    def _limit(self, status, err):
        """Which limit a run that failed may have run into, in words (None: no sign of one)."""
        text = bytes(err).decode("utf-8", "replace")
        if status == -signal.SIGXCPU:
            return "it used up its CPU time"
        if status == -signal.SIGXFSZ:
            return "it wrote a file larger than its limit of %d MB" % (FILE_SIZE >> 20)
        if status not in (None, 0, 1) and "Resource temporarily unavailable" in text:
            return "it reached its limit of %d processes" % PROCESSES
        if status not in (None, 0, 1) and not self.asan and "AddressSanitizer" in text:
            return ("it may be an AddressSanitizer build, which cannot run within the memory limit of %d GiB: "
                    "the grader sets LAB_SANITIZED=1 for such builds" % (MEMORY >> 30))
        if status not in (None, 0, 1) and not self.asan and re.search(r"alloc|out of memory|Cannot allocate", text):
            return "it ran into its memory limit of %d GiB" % (MEMORY >> 30)
        return None

    def close(self):
        if self.mode == "user" and self.uid is not None:
            kill_user(self.uid)
        remove_tree(self.work)
        if self.lock:
            self.lock.close()
            self.lock = None
