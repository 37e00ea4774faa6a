"""sandbox.py: the one way to run a student's lab, for everything that runs one (the check,
--grade, Gradescope's run_autograder). A student's program is untrusted: it may try to raise its
grade, to stop or outlive its grader, or to reach the grader's files. What it gets:

  as root (Gradescope, a CI container): an unprivileged user id of its own (one of UIDS, one
      checker at a time each, held by a lock), no supplementary groups, no way to regain
      privileges (no_new_privs, no capabilities), an empty working folder of its own, a
      minimal environment. Every process of that user is killed after each run, and the
      checker sees that none is left before it goes on. Files it left in /tmp, /var/tmp,
      /dev/shm and /run/lock, at any depth, and its System V IPC objects are removed. Where
      root may make a mount namespace, each run has one (and an IPC namespace): /proc shows
      only its user's processes, and the run has a root of its own with the allowlist below
      (the run engine makes it, _out_of_sight's parts of its job). Where root may not (a container
      without the right), it is kept out of the project and its build folder (and the class
      grader's places) by an ACL entry of no right (KeptOut); every other file any user may
      read is readable to it, and the isolation line says so. The class grader's runs (Runner, ForkedBox) also get, where root may make
      namespaces, a private tmpfs for their /tmp and home, an IPC namespace, and a cgroup per
      worker (at most one core and MEMORY for all of a student's processes).
  as a user, with bubblewrap (Debian's bubblewrap): namespaces of its own (no network, its own
      processes only), a root of its own with the allowlist, an empty /tmp and folder.
  as a user, without bubblewrap, where user namespaces work (util-linux's unshare): no
      network, its own processes and IPC, the home folders, /var/tmp, /dev/shm, /run/lock and
      what the caller hides (the class, the project) covered by empty ones; the rest of the
      file system as the user has it, and the isolation line says so.
  where none of these works: a session of its own and the limits, and the report
      says that the lab was not isolated, and how to get isolation. Never a silent downgrade.

The allowlist (allowlist.py's bwrap_allowlist, engine_allowlist: one list for every compile and run that can
have a root of its own): the system's programs, libraries and headers, LibTorch, the lab's own
files and folder; nothing else of the machine.

Every run goes through the run engine (engine.py, engine/runner.cpp): it starts the command
made here, sets the limits, reads the output against the time limit, and kills what is left.
In every case: limits on memory (address space; not for an AddressSanitizer build, which
reserves terabytes of shadow memory: LAB_SANITIZED=1, the grader's setting, never the binary's), processes, file size, CPU time, and no core files; and
the wall-time and output limits of check_lab.py. LAB_SANDBOX=user|bwrap|unshare|none chooses
one (the tests use it); an unknown or impossible choice is an error, never a weaker sandbox.
The choice is isolation.py's (choose_runs): this module runs the probes and acts on the mode.

  box = sandbox.Sandbox(path)           one per lab and checker; closed when the checker ends
  box.isolation                         one line: how the lab runs ("isolation: " and the words)
  box.isolation_of_any_student          those words alone, without the user id (a gradebook's row)
  box.run(args, timeout, max_out, max_err) -> engine.Run(status, out, err, stopped, limit)
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import tempfile

from lab04 import PROJECT  # the checker's project
from lab04.checker import engine  # the run engine: every run of the lab goes through it
from lab04.checker.allowlist import SEES, bwrap_allowlist, engine_allowlist  # what a root of its own holds
from lab04.checker import isolation  # what the instructor asked (LAB_SANDBOX)
from lab04.checker import sandbox_users  # the user ids of root's sandboxes
from lab04.checker.kept_out import KeptOut, kept_out_in_words  # an ACL of no right, without a root of its own
from lab04.checker.limits import FILE_SIZE, MEMORY, PROCESSES, limits, limits_in_words, sanitizer_build
from lab04.checker.sandbox_users import Refused  # noqa: F401  (sandbox.Refused: the callers' name for it)

class NotStarted(Exception):
    """The sandbox could not start a run (the grader's fault, not the lab's): the caller
    says so and grades nothing, never a 0."""


def _works(cmd):
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# The probes of what isolation can be had here, as commands: run here, or by a caller that must
# run them itself (Classroom 50's job asks through sudo, before the grader runs).
PROBES = {"bwrap": ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
          # a user of its own can run programs (a system whose folders are closed to others cannot)
          "user": ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/bin/sh", "-c", "exit 0"]}


def bwrap_works():
    """Whether bubblewrap can make its namespaces here (as root, or as a user where the kernel
    allows user namespaces)."""
    return bool(shutil.which("bwrap")) and _works(PROBES["bwrap"])


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


SCRATCH_SIZE = "64m"  # each private one of a class run (and its home), a tmpfs


def private_places():
    """The places of SCRATCH that a class run as root gets a private tmpfs of, where this
    machine lets root make mount namespaces (not in some containers and chroots); else []."""
    if os.geteuid() != 0 or not _works(["unshare", "--mount", "--ipc", "--propagation", "private",
                                       "mount", "-t", "tmpfs", "lab04", "/tmp"]):
        return []
    return [p for p in sandbox_users.SCRATCH if os.path.isdir(p) and not os.path.islink(p)]


def keep_leaky_softmax(work, runner):
    """Copies lab04_leaky_softmax.so (the one beside the runner, engine.leaky_softmax) into the
    sandbox's bin folder, where every sandbox's lab can read it; whether there was one."""
    found = engine.leaky_softmax(runner)
    if not found:
        return False
    try:
        os.makedirs(os.path.join(work, "bin"), exist_ok=True)
        kept = os.path.join(work, "bin", engine.LEAKY_SOFTMAX)
        shutil.copy(found, kept)
        os.chmod(kept, 0o755)
    except OSError:  # (a build this user cannot read: the case that needs it says so)
        return False
    return True


def no_leaky_softmax():
    """The Run of a case with leaky-softmax where the build has no lab04_leaky_softmax.so."""
    return engine.not_started("%s is not built beside %s: cmake --build build --target %s" % (
        engine.LEAKY_SOFTMAX, engine.PROGRAM, engine.PROGRAM))


class Sandbox:
    def __init__(self, lab, module=None, runtime=None, hidden=()):
        """lab: the program to run; or, with module and runtime, the class grader's runner
        (engine/runner.cpp), which loads the runtime (LibTorch) then runs the module's main.
        hidden: what else to hide where the sandbox hides a list of places (unshare: the class,
        the project, --hide's); a root of its own holds none of them anyway.
        Refused: no sandbox can be had here as asked, or the run engine is not built."""
        self.also_hidden = [os.path.realpath(p) for p in hidden if p]
        self.engine = None
        if module is None:
            found = engine.program(lab)
            if not found:
                raise Refused("the run engine (%s) is not built: cmake --build build --target %s, or name it "
                              "in LAB_RUNNER" % (engine.PROGRAM, engine.PROGRAM))
            # Its environment is a minimal one: a lab is forked from it (its memory is the lab's).
            self.engine = engine.Runner([found, "-"], engine.minimal_environment())
        self.asan = sanitizer_build()
        self.uid = self.lock = None
        self.chosen = self._choose()  # an isolation.Isolation: mode, why and closed read it
        self.work = tempfile.mkdtemp(prefix="lab04-sandbox-")
        os.chmod(self.work, 0o711 if self.mode == "user" else 0o700)
        os.makedirs(os.path.join(self.work, "bin"))
        self.lab = os.path.join(self.work, "bin", "lab04_attention")
        shutil.copy(lab, self.lab)  # the student's user may run it, never change it
        os.chmod(os.path.join(self.work, "bin"), 0o755)
        os.chmod(self.lab, 0o755)
        self.loads = []  # what the runner loads: the runtime, then the module
        self.leaky = keep_leaky_softmax(self.work, found if module is None else lab)
        for name, path in (("liblab04_runtime.so", runtime), ("lab04_module.so", module)):
            if path:
                shutil.copy(path, os.path.join(self.work, "bin", name))
                os.chmod(os.path.join(self.work, "bin", name), 0o755)
                self.loads.append(name)
        self.home = os.path.join(self.work, "home")
        # (ldd's listing, 30 ms, is of use only to a sandbox that shows or hides folders)
        self.libraries = self._library_folders(runtime or lab) if self.mode != "none" else []
        self.kept_out = None
        if self.mode == "user" and not root_hidepid():  # no root of its own: an ACL of no right
            self.kept_out = KeptOut(self.uid, [PROJECT, os.path.dirname(os.path.realpath(lab))] + self.also_hidden)
        self.isolation = "isolation: " + self._describe()
        # The same words without the user id, for a class's gradebook (where each worker has its own),
        # which writes its own label before them (gradebook.py)
        self.isolation_of_any_student = self._describe(who="a user id")
        become_subreaper()
        atexit.register(self.close)

    mode = property(lambda self: self.chosen.mode)  # USER, BWRAP, UNSHARE or NONE (isolation.py's)
    why = property(lambda self: self.chosen.why)  # NONE: why
    closed = property(lambda self: self.chosen.closed)  # NONE: the folder that stopped root's user

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
        """This sandbox's isolation.Isolation, from the machine's probes (the choice is
        isolation.py's): a user id of its own is taken here, and given back if it cannot run."""
        def own_user():
            self._take_uid()
            cannot = self._user_cannot_run()
            if cannot:
                self._release_uid()
            return cannot
        unshare = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--net", "unshare",
                   "--user", "--map-user=%d" % os.getuid(), "--mount", "true"]
        return isolation.choose_runs(bool(shutil.which("setpriv")), own_user, bwrap_works, lambda: _works(unshare),
                                     sandbox_users.closed_folder)

    def _take_uid(self):
        self.uid, self.lock = sandbox_users.take_uid(self._runner())

    def _user_cannot_run(self):
        return sandbox_users.user_cannot_run(self.uid, self._runner())

    def _runner(self):
        """The run engine's program this sandbox's runs go through (None: engine.program()'s)."""
        return self.engine.command[0] if self.engine is not None else None

    def _release_uid(self):
        if self.lock:
            self.lock.close()
        self.uid = self.lock = None

    def _describe(self, how="", who=None):
        """How the lab runs, in words (the isolation line without its label); how: how the lab
        was started, said after "the lab ran" (as root); who: the user it ran as (as root; by
        default "user id N")."""
        limits = limits_in_words(self.asan)
        who = who or "user id %s" % self.uid
        if self.mode == "user" and root_hidepid():
            return ("the lab ran%s as %s of its own (no groups, no privileges), in %s, other "
                    "users' processes hidden; %s" % (how, who, SEES, limits))
        if self.mode == "user":
            return ("the lab ran%s as %s of its own (no groups, no privileges), in an empty "
                    "folder; %s; %s" % (how, who, kept_out_in_words(self.kept_out, "the project and the lab's "
                                                                         "build folder"), limits))
        if self.mode == "bwrap":
            return ("bubblewrap (no network, no capabilities, its own processes, %s); %s" % (SEES, limits))
        if self.mode == "unshare":
            return ("namespaces of its own (no network, its own processes and IPC, no home folders, "
                    "/var/tmp, /dev/shm or /run/lock%s; every other file you may read, it may read too: install "
                    "bubblewrap for a root of its own that holds nothing else); %s" % (
                        ", nor the class's submissions or the project" if self.also_hidden else "", limits))
        how = ("open the system's folders to other users (chmod o+rx /)" if self.closed
               else "install bubblewrap (Debian: apt-get install bubblewrap) or run the checker as root")
        return ("NONE: the lab was not isolated (%s): it ran with your rights. To isolate it, "
                "%s; %s" % (self.why, how, limits))

    # --- running -------------------------------------------------------------------------
    def limits(self, timeout):
        """This sandbox's limits() for a run: a user's own processes count towards the
        process limit too, so such a run (not of a user of its own) is allowed as many more."""
        return limits(timeout, self.asan, PROCESSES if self.mode == "user" else
                      PROCESSES + len(sandbox_users.processes_of(os.getuid())) + 64)

    def _env(self, home):
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8", **engine.LAB_THREADS}
        env.update({k: os.environ[k] for k in engine.SAFE_ENV if k in os.environ})
        if self.asan:  # stdbuf's LD_PRELOAD would come before the ASan runtime of a g++ build
            env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))
        return env

    def _command(self, args, timeout, leaky=False):
        """The command that runs the lab in this sandbox, and its home folder as the lab sees it.
        leaky: LibTorch's softmax made to leak in the lab (LD_PRELOAD, set just before the lab
        and stdbuf, which adds its own: no program of the sandbox before them loads it)."""
        line_by_line = (["env", "LD_PRELOAD=" + self.seen(engine.LEAKY_SOFTMAX)] if leaky else []) + \
            (["stdbuf", "-oL"] if shutil.which("stdbuf") else [])
        limits = []  # set by the run engine, on the command's first process
        if self.mode == "user":  # the engine takes the user, and makes the mounts (_out_of_sight)
            return limits + line_by_line + [self.lab] + args, self.home
        if self.mode == "bwrap":  # the allowlist: LibTorch where it lies (pip's, in a home), its files
            inside = "/tmp/lab04"
            return (bwrap_allowlist(self.libraries, [(os.path.join(self.work, "bin"), inside + "/bin", False),
                                                     (self.home, inside + "/home", True)])
                    + ["--chdir", inside + "/home", "--"]
                    + limits + line_by_line + [inside + "/bin/lab04_attention"] + args), inside + "/home"
        if self.mode == "unshare":
            # The outer namespace mounts empty folders over the homes, then the lab runs in a
            # nested one, as the user again: there it cannot undo those mounts (they are locked).
            hide = [f for f in self._hidden(["/home", "/root", os.path.expanduser("~"), "/var/tmp", "/dev/shm",
                                             "/run/lock"] + self.also_hidden)
                    if not any(lib.startswith(f.rstrip("/") + "/") for lib in self.libraries)]
            # (one folder a line, as they are: a folder's name may hold spaces or * and ?)
            script = ('set -f; IFS="$(printf "\\n.")"; IFS="${IFS%.}"; for f in $HIDE; do '
                      'mount -t tmpfs -o mode=755 none "$f"; done; unset IFS; exec "$@"')
            return (["unshare", "--user", "--map-root-user", "--mount", "--pid", "--ipc", "--fork", "--kill-child", "--net",
                     "--", "env", "HIDE=" + "\n".join(hide), "sh", "-c", script, "sh",
                     "unshare", "--user", "--map-user=%d" % os.getuid(), "--map-group=%d" % os.getgid(), "--mount",
                     "--"] + limits + line_by_line + [self.lab] + args), self.home
        return limits + line_by_line + [self.lab] + args, self.home

    def _out_of_sight(self):
        """The run engine's job's parts for a user of its own: that user, and, where a mount
        namespace can be made, the grader's processes out of the lab's sight (a /proc that shows
        only its user's) and a root of its own with the allowlist: the system, LibTorch, the
        lab's own bin folder and its home."""
        if self.mode != "user":
            return {}
        if not root_hidepid():
            return {"uid": self.uid}
        return dict(uid=self.uid, own_proc=True, **engine_allowlist(
            self.new_root(), self.libraries + [os.path.join(self.work, "bin")]))

    def new_root(self):
        """An empty folder of root's where the run engine makes the run's root (a tmpfs, in the
        run's own mount namespace)."""
        root = os.path.join(self.work, "root")
        if not os.path.isdir(root):
            os.mkdir(root, 0o700)
        return root

    def seen(self, name):
        """Where the lab sees a file of its bin folder."""
        return os.path.join("/tmp/lab04/bin" if self.mode == "bwrap" else os.path.join(self.work, "bin"), name)

    def _hidden(self, folders):
        """The folders of these that exist and do not hold the sandbox's own."""
        return [f for f in dict.fromkeys(folders)
                if os.path.isdir(f) and not self.work.startswith(f.rstrip("/") + "/") and f != "/"]

    def _fresh_home(self):
        sandbox_users.remove_tree(self.home)
        os.mkdir(self.home, 0o700)
        if self.mode == "user":
            os.chown(self.home, self.uid, self.uid)

    def _clean_up(self):
        """After a run: nothing of the lab's is left running, nor in the shared scratch folders.
        The engine has killed the run's process group (bwrap and unshare: their namespaces end
        with it); a user of its own may have started processes outside it."""
        if self.mode == "user":
            if not sandbox_users.kill_user(self.uid, self._runner()):
                raise Refused("the lab's processes (user id %d) could not all be killed" % self.uid)
            sandbox_users.remove_files_of(self.uid)
            sandbox_users.remove_ipc_of(self.uid)

    def run(self, args, timeout, max_out, max_err, leaky=False):
        """Runs the lab once, through the run engine; its engine.Run. leaky: with LibTorch's
        softmax made to leak (a case of cases.py with leaky-softmax)."""
        if leaky and not self.leaky:
            return no_leaky_softmax()
        self._fresh_home()
        cmd, home = self._command(args, timeout, leaky)
        cmd = [shutil.which(cmd[0]) or cmd[0]] + cmd[1:]  # the engine executes a path
        job = engine.Job.of(command=cmd, home=self.home, wall_ms=int(timeout * 1000), max_out=max_out,
                            max_err=max_err, limits=self.limits(timeout), env=self._env(home),
                            **self._out_of_sight())  # its leftovers, as a user's: every process of that user
        try:
            run = self.engine.ask(job)
        except (OSError, ValueError, IndexError):
            run = engine.not_started("the run engine ended during the run")
        self._clean_up()
        reap_orphans()  # a runner whose grader ended before it, if this process is their subreaper
        if run.stopped is None and self.mode in ("bwrap", "unshare") and 128 < run.status <= 128 + 64:
            run.status = -(run.status - 128)  # they pass on a signal's death as 128 + its number
        run.limit = self._limit(run.status, run.err)
        return run

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
        if getattr(self, "kept_out", None) is not None:
            self.kept_out.close()
        if self.engine is not None:
            self.engine.stop()
        if self.mode == "user" and self.uid is not None and self.lock:  # (closed again: the id is not ours)
            sandbox_users.kill_user(self.uid, self._runner())
        sandbox_users.remove_tree(self.work)
        if self.lock:
            self.lock.close()
            self.lock = None
