"""compile_sandbox.py: the class grader's compile of one student's lab, isolated and bounded.

A student's file is untrusted from its first byte: its compile sees only the staged lab and
the system's files (as a user of its own in a root of its own as root, in bubblewrap without
root), and is stopped past its time, CPU, memory, file size or messages. A Compiler is how one
worker compiles: the build's command, how it is isolated there, and those limits; compile()
gives the module, or the status and the compiler's messages.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

from lab04.checker import allowlist, cgroups, engine, limits, sandbox_users
from lab04.grader.status import Status

TIMEOUT = 120  # seconds one student's compile may take, and of CPU (the lesson: about 0.5 s)
CPU = TIMEOUT
MEMORY = limits.MEMORY  # bytes of address space: no more than a run's (the lesson's compile: 0.2 GB)
FILE = 256 << 20  # bytes: the largest file it writes (the module: about 1 MB)
OUTPUT = 1 << 20  # bytes of compiler messages read; more stops the compile (its limit)


def unconfigured(build):
    """Why build is not a configured build of the project (one line), or None."""
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        return ("no configured build at %s: run the README's build first (cmake --preset default), or name one "
                "with --build" % build)
    return None


def build_grader(build):
    """Builds what the class's compiles and runs need in the build at build (the run engine
    and the lesson's module, with its precompiled header); None, or what is wrong in one line."""
    problem = unconfigured(build)
    if problem:
        return problem
    made = subprocess.run(["cmake", "--build", build, "--target", "lab04_runner", "lab04_module"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if made.returncode != 0:
        return "the build at %s could not build the grader's runner: %s" % (
            build, (made.stdout.strip().splitlines() or ["no output"])[-1][:200])
    return None


# How a compile is isolated, as a row's "compile_isolation" says it, and in words.
ISOLATION = {
    "user": "the compile ran as that user, in a root of its own that holds the system's files and the lab alone",
    "user-kept-out": "the compile ran as that user, kept out of the same places; every other file any user may "
                     "read, it may read too (no root of its own can be made here)",
    "bwrap": "the compile ran in bubblewrap, in a root that holds the system's files and the lab alone",
    "none": "the compile was NOT isolated: it ran with the grader's rights and could read what the grader can "
            "(as root, or where bubblewrap can make user namespaces, it is isolated)",
}

# The grader's own failures, never the student's: each is tried once more, then the row is a
# grader error that names it. KILLED: SIGKILL, which none of the compile's limits sends (the
# memory's out-of-memory killer, an operator); NOT_STARTED: the run engine could not start it.
KILLED = "was killed from outside"
NOT_STARTED = "could not be started"
OUT_OF_MEMORY = re.compile(rb"out of memory|std::bad_alloc|Cannot allocate memory|memory exhausted")

# As root, the compile runs as the sandbox's user in a root of its own, which the run engine
# makes (engine/runner.cpp, fields I and B), with allowlist.py's allowlist: the system's programs,
# libraries and headers (/usr, /etc), the precompiled header's files, the lab's own folder, an
# empty /tmp, /dev/null and its kin, and a /proc that shows only its own processes. Nothing else
# is there: not the lesson, not the build's compiled lesson, not the class, not the grader's
# files. #include or .incbin of any of them finds no file.


class Compiler:
    """How one worker compiles a lab: the build's compile command, (directory, words), less its
    file names; the link of a module; how the compile is isolated (ISOLATION's keys) and, as
    "user" or "user-kept-out" (no mount namespace here), the sandbox's user id and its /proc's
    hidepid; and the limits."""

    def __init__(self, command, link, isolation="none", uid=None, own_proc=None, timeout=TIMEOUT, runner=None):
        """runner: the run engine's program (engine.program()'s by default), which runs the
        compile within its limits."""
        self.command, self.link, self.isolation = command, link, isolation
        self.uid, self.own_proc, self.timeout = uid, own_proc, timeout
        self.engine = engine.Runner([runner or engine.program() or engine.PROGRAM, "-"], engine.minimal_environment())

    def close(self):
        self.engine.stop()

    def compile(self, text, work):
        """Compiles and links the lab (its text, as the grader read it) as a module in work,
        within the compile's limits: (module path, None), or (None, (status, errors)) with
        status "did not compile", "did not compile (limit)", or "grader error" (killed from
        outside, twice)."""
        lab = os.path.join(work, "lab04_attention.cpp")
        with open(lab, "w", encoding="utf-8") as f:
            f.write(text)
        prefix, isolation = self._isolated(work)
        both = prefix + ["sh", "-c", " && ".join(shlex.join(step) for step in self._steps())]
        # (both steps in one sandbox: its root costs about 25 ms to make, each within the limits)
        ooms = cgroups.oom_kills()
        status, output, limit = self.run(both, work, isolation)
        if limit in (KILLED, NOT_STARTED):  # once more: neither is a limit of the student's
            time.sleep(1)
            status, output, limit = self.run(both, work, isolation)
            if limit in (KILLED, NOT_STARTED):
                return None, (Status.GRADER_ERROR, grader_fault(limit, output, ooms, cgroups.oom_kills()))
        if limit:
            return None, (Status.COMPILE_LIMIT, "lab04_attention.cpp: the compile %s, and was stopped (its "
                          "limits: %d s, %d s of CPU, %d GiB of memory, %d kB of messages, files of %d MB)" % (
                              limit, self.timeout, CPU, MEMORY >> 30, OUTPUT >> 10, FILE >> 20))
        if status != 0:
            return None, (Status.DID_NOT_COMPILE, trim_crash(output.decode("utf-8", "replace").replace(work + "/", "")))
        return os.path.join(work, "lab04_module.so"), None

    def _steps(self):
        directory, words = self.command
        return [words + ["-o", "lab04_attention.o", "-c", "lab04_attention.cpp"],
                self.link.split() + ["-o", "lab04_module.so", "lab04_attention.o"]]

    def _isolated(self, work):
        """What the compile's command runs under: the compiler reads the student's file, so as
        root it runs as the student's user id, in a root of its own (the run engine's fields);
        without root, in bubblewrap's: (prefix of the command, the job's parts: engine.Job's)."""
        if self.isolation == "bwrap":
            return bwrap_root(work, self.command[1]), {}
        if self.isolation not in ("user", "user-kept-out"):
            return [], {}
        os.chown(work, self.uid, self.uid)
        os.chown(os.path.join(work, "lab04_attention.cpp"), self.uid, self.uid)
        if self.isolation == "user-kept-out":  # no mount namespace here: the user alone (Runner.keep_out)
            return [], {"uid": self.uid}
        new = os.path.join(os.path.dirname(work), "root")
        os.mkdir(new, 0o755)
        return [], dict(uid=self.uid, own_proc=True, **allowlist.engine_allowlist(new, compile_needs(self.command[1])))

    def run(self, command, work, isolation=None):
        """Runs the compile through the run engine: (exit status, its messages, None) or, when
        it broke a limit, (status, messages, what it did). Its messages are read as they come,
        up to OUTPUT bytes: past that, or past its time, it is stopped."""
        # Nothing of the grader's environment but its PATH (the compiler's own /proc/self/environ
        # is in reach of an .incbin); TMPDIR: a crash's reproducer files go with the work folder.
        env = dict(engine.minimal_environment(), PATH=os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                   TMPDIR=work)
        job = engine.Job.of(command=[shutil.which(command[0]) or command[0]] + command[1:], home=work,
                            wall_ms=self.timeout * 1000, max_out=OUTPUT, max_err=OUTPUT,
                            limits={"as": MEMORY, "cpu": CPU, "fsize": FILE, "core": 0}, env=env, **(isolation or {}))
        try:
            run = self.engine.ask(job)
        except (OSError, ValueError, IndexError):
            run = engine.not_started("the run engine ended during the compile")
        output, status = run.out[:OUTPUT] + run.err[:OUTPUT], run.status
        if run.stopped == engine.Ending.TIME:
            return status, output, "took longer than %d s" % self.timeout
        if run.stopped == engine.Ending.SIZE:
            return status, output[:OUTPUT], "wrote more than %d kB of messages" % (OUTPUT >> 10)
        if run.stopped == engine.Ending.START:
            return None, run.err, NOT_STARTED  # the grader's: tried again, then its error
        if 128 < status < 128 + 65:  # the shell that runs the steps says a step's signal so
            status = -(status - 128)
        if status == -signal.SIGXCPU:
            return status, output, "used more than %d s of CPU" % CPU
        if status == -signal.SIGXFSZ:
            return status, output, "wrote a file larger than %d MB" % (FILE >> 20)
        if status != 0 and OUT_OF_MEMORY.search(output):  # its address space: the allocation fails
            return status, output, "ran out of its %d GiB of memory" % (MEMORY >> 30)
        if status == -signal.SIGKILL:  # not a limit of its own (those are signals it can name, or ENOMEM)
            return status, output, KILLED
        return status, output, None

    def control_compiles(self, lesson):
        """Whether the project's own lab (lesson, its path) compiles through the same path just
        now: when it does, a failed compile whose messages do not name the lab (an .incbin, an
        #include of a file it cannot have) is the student's; when it does not, the fault is the
        grader's."""
        top = tempfile.mkdtemp(prefix="lab04-control-")
        try:
            os.chmod(top, 0o711)
            work = os.path.join(top, "lab")
            os.mkdir(work, 0o700)
            with open(lesson, encoding="utf-8") as f:
                module, _ = self.compile(f.read(), work)
            return module is not None
        finally:
            sandbox_users.remove_tree(top)


def grader_fault(limit, output, ooms_before, ooms_after):
    """The row's words for a compile that failed twice for no fault of the student's: what
    stopped it, as far as the grader can tell."""
    if limit == NOT_STARTED:
        said = output.decode("utf-8", "replace").strip().splitlines()
        return "the compile could not be started, twice (the grader's run engine: %s)" % (
            said[-1][:200] if said else "no reason given")
    if ooms_before is not None and ooms_after is not None and ooms_after > ooms_before:
        return ("the compile was killed twice by SIGKILL from the out-of-memory killer: the memory of this grader's "
                "cgroup (a container's limit, say) ran out while it compiled (%d kills there); grade with fewer "
                "--jobs or more memory" % (ooms_after - ooms_before))
    return ("the compile was killed twice by SIGKILL, which none of its limits sends%s" % (
        "" if ooms_after is None else " (not by the out-of-memory killer of this grader's memory cgroup)"))


def compile_needs(command):
    """What a compile command needs beyond the system's files: the folder of each file it names
    (the precompiled header's: the PCH checks the files it was built from), and the files its
    header includes by their paths. All the compile may see of the project and its build."""
    needed = set()
    for w in command:
        if w.startswith("/") and not w.startswith(("/usr/", "/etc/")) and os.path.isfile(w):
            needed.add(os.path.dirname(os.path.realpath(w)))
            if w.endswith((".hxx", ".h")):
                with open(w, errors="replace") as f:  # cmake_pch.hxx: #include "/abs/path"
                    needed.update(os.path.realpath(m) for m in re.findall(r'^#include "(/[^"]+)"', f.read(), re.M)
                                  if os.path.isfile(m))
    return sorted(needed)


def bwrap_root(work, command):
    """bubblewrap's command line for a compile without root: a root of its own with allowlist.py's
    allowlist, the precompiled header's files and the lab's folder; no network, no other
    processes. The checkout, its .git, the runner's home and its job's files are not there."""
    return allowlist.bwrap_allowlist(compile_needs(command), [(work, work, True)]) + ["--chdir", work, "--"]


def trim_crash(text):
    """The compiler's messages, less a crash's stack dump and reproducer notes (the grader's
    paths and clang's internals, which help no student): what came before, and one line."""
    cut = re.search(r"^(PLEASE submit a bug report|Stack dump:|clang(\+\+)?: error: clang frontend command failed)",
                    text, re.M)
    if not cut:
        return text
    return text[:cut.start()] + "the compiler itself crashed on this code (its own fault, not an error in C++): " \
        "change what the last message points at\n"


def students_own(status, errors):
    """Whether a failed compile is the student's: a limit stopped it, or the compiler's
    messages name the lab's file (an error in it, a file it includes) or its object. A failure
    that names neither (a precompiled header the grader cannot read, a missing compiler) is
    the grader's own."""
    return status == Status.COMPILE_LIMIT or bool(re.search(r"lab04_attention\.(cpp|o)\b", errors))
