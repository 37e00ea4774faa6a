"""runner_client.py: the class grader's side of its runner (grader/runner.cpp), which has loaded
LibTorch once and runs each lab's module in a forked child, in the sandbox of checker/sandbox.py.

  Runner(program, runtime)        as root: one per worker, holding a user id of its own
  ForkedBox(runner, module, hidden)  a Sandbox whose runs go through a Runner (root)
  ServedBox(program, module, runtime)  a Sandbox (bubblewrap, unshare or none) that runs the
                                  runner inside it once, for every run of one lab (a user)

Each has the run() of a Sandbox, so the checker's running.run_case() runs a case through it.
The limits of a run are the sandbox's (sandbox.limits()), sent as the runner's L fields.
"""
import atexit
import os
import shutil
import signal
import subprocess
import tempfile

import sandbox

SCRATCH_SIZE = "64m"  # each private one of a class run (and its home), a tmpfs


def limit_fields(found):
    """sandbox.limits() as the runner's L fields."""
    return ["L%s=%d" % kv for kv in found.items()]


def private_places():
    """The places of SCRATCH that a class run as root gets a private tmpfs of, where this
    machine lets root make mount namespaces (not in some containers and chroots); else []."""
    if os.geteuid() != 0 or not sandbox._works(["unshare", "--mount", "--ipc", "--propagation", "private",
                                        "mount", "-t", "tmpfs", "lab04", "/tmp"]):
        return []
    return [p for p in sandbox.SCRATCH if os.path.isdir(p) and not os.path.islink(p)]


class Cgroup:
    """A cgroup for the runs of one worker of the class grader (root only), so that a
    student's runs, however many processes they make, share at most one core and MEMORY
    bytes between them: the other workers' students keep their share. cgroup v2, or v1's
    cpu and memory hierarchies; where neither can be made, procs is empty and why says so."""

    def __init__(self, name):
        self.folders, self.procs, self.why = [], [], None
        v2 = "/sys/fs/cgroup/cgroup.controllers"
        settings = ([("", {"cpu.max": "100000 100000", "memory.max": str(sandbox.MEMORY)})] if os.path.isfile(v2) else
                    [("cpu", {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "100000"}),
                     ("memory", {"memory.limit_in_bytes": str(sandbox.MEMORY)})])
        try:
            if os.geteuid() != 0:
                raise OSError("not root")
            for hierarchy, values in settings:
                folder = os.path.join("/sys/fs/cgroup", hierarchy, name)
                os.makedirs(folder, exist_ok=True)
                self.folders.append(folder)
                for key, value in values.items():
                    with open(os.path.join(folder, key), "w") as f:
                        f.write(value)
                self.procs.append(os.path.join(folder, "cgroup.procs"))
        except OSError as e:
            self.procs, self.why = [], "no cgroup could be made (%s)" % (e.strerror or e)
            self.close()

    def close(self):
        for folder in self.folders:
            try:
                os.rmdir(folder)
            except OSError:
                pass



def ask_runner(proc, fields):
    """Sends one job to a runner (grader/runner.cpp, which says the format) and reads its
    answer: (how it ended, stopped, stdout, stderr). OSError, ValueError or IndexError: the
    runner is gone."""
    proc.stdin.write(b"".join(f.encode() + b"\0" for f in fields) + b"\0")
    proc.stdin.flush()
    head = proc.stdout.readline().split()
    out, err = proc.stdout.read(int(head[2])), proc.stdout.read(int(head[3]))
    return head[0].decode(), head[1].decode(), out, err


def answered(box, ended, stopped, out, err):
    """A runner's answer as the Run of a Sandbox."""
    if stopped == "start":
        return sandbox.Run(None, b"", err, "start", None)
    kind, _, number = ended.partition(":")
    status = None if stopped != "-" else int(number) if kind == "exit" else -int(number)
    return sandbox.Run(status, out, err, None if stopped == "-" else stopped, box._limit(status, err))


class Runner:
    """grader/runner.cpp, started once per worker of the class grader (root only): it has
    loaded LibTorch, and runs each lab in a forked child that first becomes this worker's user
    id (taken here, held until the worker ends) with the limits of a Sandbox, then loads the
    lab's module. It never runs student code itself."""

    def __init__(self, program, runtime):
        if os.geteuid() != 0:
            raise sandbox.Refused("the class runner needs root: its children become a user of their own")
        self.command = [program, runtime, "per-student"]  # each student's runs in a fresh child
        self.uid, self.lock = sandbox.take_uid()
        self.proc = None
        self.places = private_places()  # each run's own /tmp and the like, where possible
        # A /proc showing no other user's processes: the hidepid value this kernel takes, or None.
        self.own_proc = sandbox.root_hidepid() if self.places else None
        self.cgroup = Cgroup("lab04-%d" % self.uid)  # this worker's students' CPU and memory
        sandbox.become_subreaper()
        atexit.register(self.close)

    def _start(self):
        # Its environment is a minimal one, never the grader's: a lab is forked from it, and a
        # process's environment stays in its memory (on its stack) whatever clearenv() does.
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, close_fds=True, env=sandbox.minimal_environment())
        if self.proc.stdout.readline() != b"ready\n":
            err = self.proc.stderr.read(2000).decode("utf-8", "replace").strip()
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise sandbox.Refused("the class runner did not start: " + (err.splitlines() or ["no message"])[-1][:200])

    def new_student(self):
        """The runs that follow are another student's: served by a fresh child of the runner,
        whose memory holds nothing of the students before (grader/runner.cpp, N)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write(b"N\0\0")
            self.proc.stdin.flush()
            if self.proc.stdout.readline() == b"ready\n":
                return
        except OSError:
            pass
        self.close_process()  # a runner that did not answer: the next run starts a new one
        self._start()

    def job(self, fields):
        """Sends one job (see grader/runner.cpp); (how it ended, stopped, stdout, stderr)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            return ask_runner(self.proc, fields)
        except (OSError, ValueError, IndexError):
            self.close_process()
            return "none", "start", b"", b"the grader's runner ended during the run"

    def close_process(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        sandbox.kill_user(self.uid)

    def close(self):
        self.close_process()
        self.cgroup.close()
        if self.lock:
            self.lock.close()
            self.lock = None


class ServedBox(sandbox.Sandbox):
    """A Sandbox (bubblewrap, unshare or none: a user's) that runs the class grader's runner
    inside it once, for every run of one lab: LibTorch starts once per lab, not once per run.
    Each run is a forked child of the runner, with the limits of a Sandbox; after it the runner
    kills every other process of its PID namespace (bubblewrap, unshare), or the run's process
    group (none). The runner stops with the box: one student's labs never meet another's."""

    def __init__(self, program, module, runtime):
        sandbox.Sandbox.__init__(self, program, module, runtime)
        self.proc = None

    def _start(self, timeout):
        cmd, self.inside_home = self._command([self.seen(self.loads[0])], timeout)  # the runner, its runtime
        cmd = [w for w in cmd if w not in ("stdbuf", "-oL")]
        at = next(n for n, w in enumerate(cmd) if w.endswith("/bin/lab04_attention"))
        cmd = cmd[:at + 2]  # the runner and its runtime: it serves jobs
        self._fresh_home()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=self.home, env=self._env(self.inside_home), start_new_session=True,
                                     close_fds=True)
        if self.proc.stdout.readline() != b"ready\n":
            err = self.proc.stderr.read(4000).decode("utf-8", "replace").strip()
            self.stop()
            return err or "the runner did not start"
        return None

    def _empty_home(self):  # its contents only: the sandbox has the folder itself mounted
        for name in os.listdir(self.home):
            path = os.path.join(self.home, name)
            sandbox.remove_tree(path)

    def run(self, args, timeout, max_out, max_err):
        if self.proc is None or self.proc.poll() is not None:
            failed = self._start(timeout)
            if failed:
                return sandbox.Run(None, b"", ("could not be started: " + failed.splitlines()[-1][:200]).encode(), "start", None)
        self._empty_home()
        fields = ["M" + self.seen(self.loads[1]), "H" + self.inside_home, "T%d" % int(timeout * 1000),
                  "O%d" % max_out, "R%d" % max_err] + limit_fields(self.limits(timeout))
        fields += ["K"] if self.mode in ("bwrap", "unshare") else []
        fields += ["E%s=%s" % kv for kv in self._env(self.inside_home).items()] + ["A" + a for a in args]
        try:
            return answered(self, *ask_runner(self.proc, fields))
        except (OSError, ValueError, IndexError):  # the lab killed its runner: this run is lost
            self.stop()
            # The lab's own doing: in a user's sandbox its runner is within its reach.
            return sandbox.Run(-signal.SIGKILL, b"", b"its runner was killed during the run", None, None)

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                pipe.close()
            self.proc = None

    def close(self):
        self.stop()
        sandbox.Sandbox.close(self)


class ForkedBox(sandbox.Sandbox):
    """A Sandbox of mode "user" whose runs go through a Runner: the same user id of its own,
    limits, empty folder, environment and clean-up, without a LibTorch start per run."""

    def __init__(self, runner, module, hidden=()):  # pylint: disable=super-init-not-called
        """hidden: folders and files the lab must not see (the class, the project)."""
        self.runner, self.asan, self.uid, self.lock = runner, False, runner.uid, None
        runner.new_student()
        self.hidden = [os.path.realpath(p) for p in hidden if p] if runner.places else []
        self.mode, self.why, self.loads, self.libraries = "user", None, [], []
        self.work = tempfile.mkdtemp(prefix="lab04-sandbox-")
        os.chmod(self.work, 0o711)
        os.makedirs(os.path.join(self.work, "bin"))
        self.lab = os.path.join(self.work, "bin", "lab04_module.so")
        shutil.copy(module, self.lab)  # its user may load it, never change it
        os.chmod(os.path.join(self.work, "bin"), 0o755)
        os.chmod(self.lab, 0o755)
        self.home = os.path.join(self.work, "home")
        private = ("; each run with a /tmp, /var/tmp, /dev/shm, /run/lock, home folder (%sB each) and System V "
                   "IPC of its own, the class's submissions and the project hidden%s" % (
                       SCRATCH_SIZE.upper(), ", and other users' processes" if runner.own_proc else "")) \
            if runner.places else \
            "; what it left in /tmp, /var/tmp, /dev/shm and /run/lock removed after each run"
        share = ("; all its processes together: at most one core and %d GiB" % (sandbox.MEMORY >> 30)) if runner.cgroup.procs \
            else "; its share of the CPU not capped: %s" % runner.cgroup.why
        self.isolation = self._describe().replace("the lab ran as", "the lab ran, loaded into a child of a "
                                                  "process that has loaded LibTorch, as") + private + share

    def run(self, args, timeout, max_out, max_err):
        self._fresh_home()
        fields = ["M" + self.lab, "U%d" % self.uid, "H" + self.home, "T%d" % int(timeout * 1000),
                  "O%d" % max_out, "R%d" % max_err] + limit_fields(sandbox.limits(timeout))
        fields += ["P" + p for p in self.runner.places] + (["S" + SCRATCH_SIZE] if self.runner.places else [])
        fields += ["X" + p for p in self.hidden] + (["V"] if self.runner.own_proc else [])
        fields += ["G" + p for p in self.runner.cgroup.procs]
        fields += ["E%s=%s" % kv for kv in self._env(self.home).items()] + ["A" + a for a in args]
        answer = self.runner.job(fields)
        self._clean_up(None)
        return answered(self, *answer)

    def close(self):
        sandbox.remove_tree(self.work)
