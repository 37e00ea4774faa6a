"""runner_client.py: the class grader's side of its runner (engine/runner.cpp), which has loaded
LibTorch once and runs each lab's module in a forked child, in the sandbox of lab04/checker/sandbox.py.

  Runner(program, runtime)        as root: one per worker, holding a user id of its own
  ForkedBox(runner, module)       a Sandbox whose runs go through a Runner (root)
  ServedBox(program, module, runtime, hidden)  a Sandbox (bubblewrap, unshare or none) that runs the
                                  runner inside it once, for every run of one lab (a user)

Each has the run() of a Sandbox, so the checker's running.run_case() runs a case through it.
The limits of a run are the sandbox's (limits.limits()), sent as the runner's L fields; the
runner is asked through the engine's client (lab04/checker/engine.py).
"""
import atexit
import os
import shutil
import signal
import tempfile

from lab04.checker import allowlist, cgroups, engine, isolation, kept_out, limits, sandbox, sandbox_users

class Runner:
    """engine/runner.cpp, started once per worker of the class grader (root only): it has
    loaded LibTorch, and runs each lab in a forked child that first becomes this worker's user
    id (taken here, held until the worker ends) with the limits of a Sandbox, then loads the
    lab's module. It never runs student code itself."""

    def __init__(self, program, runtime):
        if os.geteuid() != 0:
            raise sandbox.Refused("the class runner needs root: its children become a user of their own")
        # Each student's runs in a fresh child. Its environment is a minimal one, never the
        # grader's: a lab is forked from it, and a process's environment stays in its memory (on
        # its stack) whatever clearenv() does.
        self.program = program
        self.engine = engine.Runner([program, runtime, "per-student"], engine.minimal_environment())
        self.uid, self.lock = sandbox_users.take_uid(program)
        self.places = sandbox.private_places()  # each run's own /tmp and the like, where possible
        # A /proc showing no other user's processes: the hidepid value this kernel takes, or None.
        self.own_proc = sandbox.root_hidepid() if self.places else None
        self.cgroup = cgroups.Cgroup("lab04-%d" % self.uid)  # this worker's students' CPU and memory
        self.kept_out = None  # keep_out()'s
        sandbox.become_subreaper()
        atexit.register(self.close)

    def _start(self):
        failed = self.engine.start()
        if failed:
            raise sandbox.Refused("the class runner did not start: " + failed)

    def new_student(self):
        """The runs that follow are another student's: served by a fresh child of the runner,
        whose memory holds nothing of the students before (engine/runner.cpp, N)."""
        self._start()
        try:
            self.engine.send(engine.Job(new_student=True))
            if self.engine.ready():
                return
        except OSError:
            pass
        self.close_process()  # a runner that did not answer: the next run starts a new one
        self._start()

    def job(self, job):
        """Runs one job (an engine.Job); its engine.Run."""
        try:
            return self.engine.ask(job)
        except (OSError, ValueError, IndexError):
            return engine.not_started("the grader's runner ended during the run")

    def close_process(self):
        self.engine.stop()
        sandbox_users.kill_user(self.uid, self.engine.command[0])

    def keep_out(self, places, needed=()):
        """Where no root of its own can be made (no private places): this worker's user id kept
        out of places (kept_out.KeptOut) until the worker ends."""
        if not self.places and self.kept_out is None:
            self.kept_out = kept_out.KeptOut(self.uid, places, needed)

    def close(self):
        if self.lock is None:  # closed already (then at exit): its user id may be another grader's now
            return
        if self.kept_out is not None:
            self.kept_out.close()
            self.kept_out = None
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

    def __init__(self, program, module, runtime, hidden=()):
        sandbox.Sandbox.__init__(self, program, module, runtime, hidden)

    def _start(self, timeout):
        cmd, self.inside_home = self._command([self.seen(self.loads[0])], timeout)  # the runner, its runtime
        cmd = [w for w in cmd if w not in ("stdbuf", "-oL")]
        at = next(n for n, w in enumerate(cmd) if w.endswith("/bin/lab04_attention"))
        self._fresh_home()
        self.engine = engine.Runner(cmd[:at + 2], self._env(self.inside_home), cwd=self.home, new_session=True)
        return self.engine.start()

    def _empty_home(self):  # its contents only: the sandbox has the folder itself mounted
        for name in os.listdir(self.home):
            path = os.path.join(self.home, name)
            sandbox_users.remove_tree(path)

    def run(self, args, timeout, max_out, max_err, leaky=False):
        if leaky and not self.leaky:
            return sandbox.no_leaky_softmax()
        if self.engine is None or self.engine.proc is None or self.engine.proc.poll() is not None:
            failed = self._start(timeout)
            if failed:
                return engine.not_started("could not be started: " + failed)
        self._empty_home()
        job = engine.Job.of(module=self.seen(self.loads[1]), home=self.inside_home, wall_ms=int(timeout * 1000),
                            max_out=max_out, max_err=max_err, limits=self.limits(timeout),
                            alone=self.mode in ("bwrap", "unshare"), env=self._env(self.inside_home), args=args,
                            library=self.seen(engine.LEAKY_SOFTMAX) if leaky else "")
        try:
            run = self.engine.ask(job)
        except (OSError, ValueError, IndexError):  # the lab killed its runner: this run is lost
            # The lab's own doing: in a user's sandbox its runner is within its reach.
            return engine.Run(-signal.SIGKILL, b"", b"its runner was killed during the run", None)
        run.limit = self._limit(run.status, run.err)
        return run

    def stop(self):
        if self.engine is not None:
            self.engine.stop()


class ForkedBox(sandbox.Sandbox):
    """A Sandbox of mode "user" whose runs go through a Runner: the same user id of its own,
    limits, empty folder, environment and clean-up, without a LibTorch start per run."""

    def __init__(self, runner, module):  # pylint: disable=super-init-not-called
        self.runner, self.asan, self.uid, self.lock = runner, False, runner.uid, None
        self.engine = None  # the runner's
        runner.new_student()
        self.chosen = isolation.OWN_USER  # the runner's children become its user
        self.loads, self.libraries = [], []
        self.work = tempfile.mkdtemp(prefix="lab04-sandbox-")
        os.chmod(self.work, 0o711)
        os.makedirs(os.path.join(self.work, "bin"))
        self.lab = os.path.join(self.work, "bin", "lab04_module.so")
        shutil.copy(module, self.lab)  # its user may load it, never change it
        os.chmod(os.path.join(self.work, "bin"), 0o755)
        os.chmod(self.lab, 0o755)
        self.leaky = sandbox.keep_leaky_softmax(self.work, runner.program)
        self.home = os.path.join(self.work, "home")
        private = ("; each run in %s, with a /tmp and a home folder (%sB each) and System V IPC of its own%s" % (
                       allowlist.SEES, sandbox.SCRATCH_SIZE.upper(), ", other users' processes hidden" if runner.own_proc else "")) \
            if runner.places else \
            ("; what it left in /tmp, /var/tmp, /dev/shm and /run/lock removed after each run; " + kept_out.kept_out_in_words(
                runner.kept_out, "the class's submissions, the project, the gradebook and the places --hide names"))
        share = ("; all its processes together: at most one core and %d GiB" % (limits.MEMORY >> 30)) if runner.cgroup.procs \
            else "; its share of the CPU not capped: %s" % runner.cgroup.why
        line = lambda who: ("the lab ran, loaded into a child of a process that has loaded LibTorch, as "
                            + who + " of its own (no groups, no privileges)" + private + share + "; "
                            + limits.limits_in_words(self.asan))
        self.isolation = "isolation: " + line("user id %d" % self.uid)
        # The same words without the user id, for a class's gradebook (where each worker has its own),
        # which writes its own label before them (gradebook.py)
        self.isolation_of_any_student = line("a user id")

    def run(self, args, timeout, max_out, max_err, leaky=False):
        if leaky and not self.leaky:
            return sandbox.no_leaky_softmax()
        self._fresh_home()
        private = {}
        if self.runner.places:  # a root of its own (the allowlist), its /tmp and home private tmpfs
            private = dict(places=("/tmp",), scratch_size=sandbox.SCRATCH_SIZE, own_proc=bool(self.runner.own_proc),
                           **allowlist.engine_allowlist(self.new_root(), [os.path.join(self.work, "bin")]))
        job = engine.Job.of(module=self.lab, uid=self.uid, home=self.home, wall_ms=int(timeout * 1000),
                            max_out=max_out, max_err=max_err, limits=limits.limits(timeout),
                            cgroups=self.runner.cgroup.procs, env=self._env(self.home), args=args,
                            library=os.path.join(self.work, "bin", engine.LEAKY_SOFTMAX) if leaky else "", **private)
        run = self.runner.job(job)
        self._clean_up()
        run.limit = self._limit(run.status, run.err)
        return run

    def close(self):
        sandbox_users.remove_tree(self.work)
