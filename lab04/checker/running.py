"""running.py: one run of the lab on one case, and what became of it, as values.

run_case() runs the lab in a sandbox (sandbox.py) on a case of cases.py; ran() turns any run
(the sandbox's, the class runner's, the watch's own fork) into a Ran: the lines it printed, its
exit status, and how it ended, an engine.Ending, with the words that say it. Whoever decides
something from a run (a grade's status, the watch's one-line verdict) reads `ended`, never the
words.
"""
import signal

from lab04.checker import cases, cgroups, sandbox
from lab04.checker.engine import Ending


class Ran:
    """A run of the lab: command (words), status (exit status, negative for a signal, None
    when stopped), lines (its stdout), err (its stderr, text), ended (None when it ran to its
    end, else an Ending: TIME, SIZE, CRASHED or SILENT) and problem (ended in words, for the report; None with it)."""

    def __init__(self, command, status, lines, err, ended, problem):
        self.command, self.status, self.lines, self.err = command, status, lines, err
        self.ended, self.problem = ended, problem

    @property
    def timed_out(self):
        return self.ended == Ending.TIME


def ran(command, run, timeout, max_out=cases.MAX_STDOUT, max_err=cases.MAX_STDERR):
    """The Ran of a finished run: run has status, out and err (bytes), stopped (None,
    Ending.TIME or Ending.SIZE) and limit (which limit it met, in words, or None), as sandbox.Run has."""
    lines = bytes(run.out[:max_out]).decode("utf-8", "replace").splitlines()
    err = bytes(run.err[:max_err]).decode("utf-8", "replace").strip()
    ended = problem = None
    if run.stopped == Ending.TIME:
        ended, problem = Ending.TIME, "did not finish within %g s and was stopped%s" % (timeout, last_step(lines))
    elif run.stopped == Ending.SIZE:
        which, limit = ("output", max_out) if len(run.out) > max_out else ("standard error", max_err)
        ended = Ending.SIZE
        problem = "printed more than %s of %s without finishing and was stopped (a loop that never " \
                  "ends?)%s" % (size_text(limit), which, last_step(lines))
    elif run.status < 0:
        try:
            name = signal.Signals(-run.status).name
        except ValueError:
            name = "signal %d" % -run.status
        ended, problem = Ending.CRASHED, "crashed with %s%s" % (name, last_step(lines))
    elif not lines:
        ended = Ending.SILENT
        problem = "printed nothing (exit %d%s)" % (run.status, ", stderr: " + err.splitlines()[0][:200] if err else "")
    if problem and run.limit:
        problem += " (%s)" % run.limit
    return Ran(command, run.status, lines, err, ended, problem)


def run_case(box, case, timeout, program):
    """Runs the lab of box (a sandbox.Sandbox, or any object with its run()) on a case of
    cases.parse_case; its Ran, whose command names program (the lab as its user named it). sandbox.NotStarted when the sandbox cannot start it: the
    grader's failure, never the lab's grade."""
    args = cases.arguments(case)
    ooms = cgroups.oom_kills()
    # (leaky-softmax: LibTorch's softmax made to leak in the lab's process, engine/leaky_softmax.cpp)
    run = box.run(args, timeout, cases.MAX_STDOUT, cases.MAX_STDERR, **({"leaky": True} if case.leak else {}))
    if run.stopped == Ending.START:
        raise sandbox.NotStarted("the sandbox could not start the lab: %s"
                                 % run.err.decode("utf-8", "replace").strip()[:300])
    if run.status == -signal.SIGKILL and ooms is not None and (cgroups.oom_kills() or 0) > ooms:
        # (no limit of the lab's sends SIGKILL: its memory limit fails an allocation instead)
        raise sandbox.NotStarted("the out-of-memory killer ended the lab: the memory of the grader's cgroup (a "
                                 "container's limit, say) ran out during the run; grade with fewer jobs or more memory")
    return ran([program] + args, run, timeout)


def size_text(n):
    return "%d MB" % (n >> 20) if n >= 1 << 20 else "%d kB" % (n >> 10)


def last_step(lines):
    steps = [line for line in lines if line.startswith("STEP ")]
    return "; the last STEP line it printed: %r" % steps[-1][:120] if steps else "; it printed no STEP line"
