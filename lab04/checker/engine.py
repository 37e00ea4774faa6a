"""engine.py: the Python side of the run engine (engine/run.h), the one program that starts a
student's lab, sets its limits, reads what it prints against its time limit and stops what is
left: lab04_runner (engine/runner.cpp, which says the job's fields and the answer's format).
The checker's sandbox (sandbox.py) and the class grader's runners (lab04/grader/runner_client.py)
ask it for every run, and a run comes back as a Run.

  program(lab)                    where lab04_runner is: LAB_RUNNER, else a build folder's
  leaky_softmax(runner)           lab04_leaky_softmax.so beside it (one case of a grade)
  Runner(command, env, cwd)       a runner process, started at its first job, stopped by stop()
  Job(...)                        one job, as a value: its fields named, its wire written by
                                  Job.fields() alone
  runner.ask(job) -> Run          one job; Run.stopped is Ending.START when it could not be done
  Run(status, out, err, stopped, limit)   a run, as a value
  Ending                          how a run ended, when not by running to its end: the one set
                                  of names from the engine to the gradebook

Where the engine is: a build of the project makes build/lab04_runner (engine/engine.cmake),
beside build/lab04_attention, and the starter and the autograders carry engine/ with the
checker (instructor/make_starter.py's COPIED_FOLDERS).
"""
import dataclasses
import enum
import os
import subprocess

from lab04 import PROJECT

PROGRAM = "lab04_runner"
SAFE_ENV = ("LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
# LibTorch's number of threads in a lab's process: the one the lab fixes itself (kThreads, in
# use_a_fixed_number_of_threads). With it as LibTorch's default the lab does not set it again,
# which would start another pool of threads: about 20 ms of CPU in every run. A lab that drops
# that line still runs with the lesson's number.
LAB_THREADS = {"OMP_NUM_THREADS": "2"}


def minimal_environment():
    """The environment of a process whose memory a lab may see (the class runner it is forked
    from): nothing of the grader's but what a program needs, the lab's number of threads
    (LAB_THREADS), and the loader's and sanitizers' settings (SAFE_ENV)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **LAB_THREADS}
    env.update({k: os.environ[k] for k in SAFE_ENV if k in os.environ})
    return env


class Ending(enum.StrEnum):
    """How a run ended, when it did not run to its end: the project's one set of these names,
    from the engine to the gradebook. The engine stops a run (its time, its output, a cancel)
    or could not start it (the sandbox could not be entered: the grader's failure, not the
    lab's): engine/run.h's Stopped, kTime to kCancelled, whose names (stopped_name) are these
    values on the runner's wire. What the run's own end says is judged by running.ran: a
    signal ended it (CRASHED), or it printed nothing (SILENT). lab04/grader/one_student.py gives each
    the status of a gradebook's row (lab04/grader/status.py's words)."""
    TIME = "time"
    SIZE = "size"
    START = "start"
    CANCELLED = "cancelled"
    CRASHED = "crashed"
    SILENT = "silent"


# The endings the engine itself gives a run (engine/run.h's Stopped, but kNo).
STOPPED_BY_ENGINE = (Ending.TIME, Ending.SIZE, Ending.START, Ending.CANCELLED)


class Run:
    """One run of a lab: status (its exit status, negative for a signal, None when stopped),
    out and err (bytes, at most one past their limits), stopped (None, or the Ending the
    engine gave it: one of STOPPED_BY_ENGINE) and limit
    (which of its limits the lab ran into, in words, or None)."""

    def __init__(self, status, out, err, stopped, limit=None):
        self.status, self.out, self.err = status, out, err
        self.stopped = Ending(stopped) if stopped else None
        self.limit = limit


def not_started(why):
    """The Run of a job that could not be done."""
    return Run(None, b"", why.encode() if isinstance(why, str) else why, Ending.START)


def program(lab=None):
    """The path of lab04_runner: LAB_RUNNER when set (the tests set it), else the one of the
    build folder that holds the lab (beside it, or one or two folders up: build/tests/...),
    else the project's build/. None when there is none."""
    named = os.environ.get("LAB_RUNNER")
    if named:
        return named if os.access(named, os.X_OK) else None
    places = []
    if lab:
        folder = os.path.dirname(os.path.abspath(lab))
        places = [folder, os.path.dirname(folder), os.path.dirname(os.path.dirname(folder))]
    project = PROJECT
    places.append(os.path.join(project, "build"))
    for folder in places:
        path = os.path.join(folder, PROGRAM)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


LEAKY_SOFTMAX = "lab04_leaky_softmax.so"


def leaky_softmax(runner):
    """The path of lab04_leaky_softmax.so (engine/leaky_softmax.cpp), which a build makes
    beside lab04_runner (the program's path: runner), or None where there is none. A case of
    cases.py with leaky-softmax runs with it loaded into the lab: a module by the job's W
    field, a program by LD_PRELOAD in its sandbox's command (sandbox.py)."""
    path = os.path.join(os.path.dirname(os.path.abspath(runner)), LEAKY_SOFTMAX) if runner else None
    return path if path and os.path.isfile(path) else None


@dataclasses.dataclass(frozen=True)
class Job:
    """One job of the run engine's program, as a value: each of its fields named (engine/runner.cpp
    says what each does; its letter is in the comment). fields() writes the wire, the one place
    that does: a module builds a Job (Job.of), with the parts another decides given as a dict."""
    command: tuple = ()  # C: a program and its arguments (a path first: the engine executes it)
    module: str = ""  # M: instead, a lab's module, loaded into a child of the runner
    library: str = ""  # W: with a module, a library of the grader's loaded before it
    args: tuple = ()  # A: the module's arguments
    env: tuple = ()  # E: the run's whole environment, as (name, value)
    home: str = ""  # H: its working folder
    wall_ms: int = 0  # T: its wall-time limit
    max_out: int = 0  # O: the bytes of its stdout read
    max_err: int = 0  # R: and of its stderr
    limits: tuple = ()  # L: its resource limits, as (name, value) (limits.limits())
    uid: object = None  # U: the user id it runs as (root only), or None
    alone: bool = False  # K: the runner is alone in a PID namespace (bubblewrap, unshare)
    places: tuple = ()  # P: places any user may write, each an empty one of its own
    scratch_size: str = ""  # S: the size of each of those, and of the home folder
    hidden: tuple = ()  # X: folders or files it must not see
    own_proc: bool = False  # V: a /proc that shows no other user's processes
    root: str = ""  # I: a root of its own, made at that empty folder
    shown: tuple = ()  # B: with a root of its own, what of this system it shows, read-only
    cgroups: tuple = ()  # G: cgroups' procs files it joins
    new_student: bool = False  # N: alone in its job, a fresh child for the next student's runs

    def fields(self):
        """The job as the runner reads it: NUL-free strings, a letter and a value each."""
        f = ["C" + w for w in self.command] + (["M" + self.module] if self.module else [])
        f += ["W" + self.library] if self.library else []
        f += ["U%d" % self.uid] if self.uid is not None else []
        f += ["H" + self.home] if self.home else []
        f += ["T%d" % self.wall_ms] if self.wall_ms else []
        f += ["O%d" % self.max_out] if self.max_out else []
        f += ["R%d" % self.max_err] if self.max_err else []
        f += ["L%s=%d" % kv for kv in self.limits]
        f += ["K"] if self.alone else []
        f += ["P" + p for p in self.places] + (["S" + self.scratch_size] if self.scratch_size else [])
        f += ["X" + p for p in self.hidden] + (["V"] if self.own_proc else [])
        f += (["I" + self.root] if self.root else []) + ["B" + p for p in self.shown]
        f += ["G" + p for p in self.cgroups] + (["N"] if self.new_student else [])
        f += ["E%s=%s" % kv for kv in self.env] + ["A" + a for a in self.args]
        return f

    @classmethod
    def of(cls, **parts):
        """A Job of these parts (each given once: the parts a sandbox decides are a dict to
        spread): limits and environment as dicts, as the sandbox keeps them, words as lists."""
        for name in ("limits", "env"):
            if isinstance(parts.get(name), dict):
                parts[name] = tuple(parts[name].items())
        for name in ("command", "args", "places", "hidden", "shown", "cgroups"):
            if name in parts:
                parts[name] = tuple(parts[name])
        return cls(**parts)


class Runner:
    """A lab04_runner process: command (its program and arguments), env and cwd (its own, which
    a lab forked from it may find in its memory: never the grader's), started at the first job
    and again after it ended. ask() sends a job and reads the answer; stop() ends it (it never
    outlives this process either: PR_SET_PDEATHSIG)."""

    def __init__(self, command, env, cwd=None, new_session=False):
        self.command, self.env, self.cwd, self.new_session = command, env, cwd, new_session
        self.proc = None
        self.busy = False  # a job sent and its answer not read whole (an exception came between)

    def start(self):
        """Starts the runner unless it runs; None, or why it could not start (one line)."""
        if self.busy:  # what it says next is the answer to a job nobody waits for
            self.stop()
        if self.proc is not None and self.proc.poll() is None:
            return None
        self.proc = None
        try:
            proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, close_fds=True, env=self.env, cwd=self.cwd,
                                    start_new_session=self.new_session)
        except OSError as e:
            return "the run engine (%s) could not be started: %s" % (self.command[0], e.strerror)
        if proc.stdout.readline() != b"ready\n":
            err = proc.stderr.read(4000).decode("utf-8", "replace").strip()
            self._end(proc)
            return (err.splitlines() or ["the run engine did not start"])[-1][:200]
        self.proc = proc
        return None

    def send(self, job):
        """Sends one job (a Job; the empty field that ends it added); its answer must be read
        next (ready() or ask())."""
        self.busy = True
        self.proc.stdin.write(b"".join(f.encode() + b"\0" for f in job.fields()) + b"\0")
        self.proc.stdin.flush()

    def ready(self):
        """Reads a "ready" line (the answer to N); False when something else came."""
        answer = self.proc.stdout.readline()
        self.busy = False
        return answer == b"ready\n"

    def ask(self, job):
        """Sends one job (a Job) and reads its Run (limit left None: the caller knows its limits).
        A runner that ends during the job (OSError, ValueError or IndexError here) is
        stopped and the error raised: whose fault that was is the caller's to say."""
        failed = self.start()
        if failed:
            return not_started(failed)
        try:
            self.send(job)
            head = self.proc.stdout.readline().split()
            out, err = self.proc.stdout.read(int(head[2])), self.proc.stdout.read(int(head[3]))
            self.busy = False
        except (OSError, ValueError, IndexError):
            self.stop()
            raise
        ended, stopped = head[0].decode(), head[1].decode()
        if stopped != "-":
            return Run(None, out, err, stopped)
        kind, _, number = ended.partition(":")
        return Run(int(number) if kind == "exit" else -int(number), out, err, None)

    @staticmethod
    def _end(proc):
        try:
            os.killpg(proc.pid, 9) if proc.pid == os.getpgid(proc.pid) else proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()

    def stop(self):
        if self.proc is not None:
            self._end(self.proc)
            self.proc = None
        self.busy = False
