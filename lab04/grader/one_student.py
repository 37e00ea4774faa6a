"""one_student.py: grades one student's lab, in a worker of the class's pool: its row of the
gradebook (gradebook.py), with its feedback.

A Worker is what one worker process grades with: how it compiles (compile_sandbox.Compiler),
its runner (LibTorch loaded once; as root), the checker's explainer, and what no run may see.
start_worker makes it, once per process (the pool's initializer), and grade_student, the
pool's job, hands it to grade_one with the student: nothing else is shared.
"""
import hashlib
import os
import signal
import tempfile
import time

from lab04 import PROJECT
from lab04.checker import (
    cases, compare, diagnosis, grading, isolation, own_inputs, running, sandbox, sandbox_users, verdict
)
from lab04.checker.engine import Ending
from lab04.checker.mistakes import MISTAKES
from lab04.grader import compile_sandbox, runner_client, similarity
from lab04.grader.row import Row
from lab04.grader.status import Status

ROOT = PROJECT
LESSON = os.path.join(ROOT, "lab04_attention.cpp")
COMPILER_LINES = 40  # lines of compiler errors kept in a student's feedback
GRADER_OWN = 60  # seconds of the grader's own work (reading, judging, diagnosing) one lab may cost
# The row's status for each way a lab's run can end early (an engine.Ending), the worst first:
# a row whose runs ended in several ways takes the first. START and CANCELLED are none of the
# lab's doing (the grader's failure, the watch's cancel), so no row's status.
STATUS_OF_ENDING = ((Ending.TIME, Status.TIMED_OUT), (Ending.CRASHED, Status.CRASHED),
                    (Ending.SIZE, Status.TOO_MUCH_OUTPUT), (Ending.SILENT, Status.FAILED_TO_RUN))


def grader_budget(timeout, n_cases, compile_timeout=compile_sandbox.TIMEOUT):
    """Seconds one student's grading may take in all: the compile, each case's run, the rest."""
    return int(compile_timeout + n_cases * (timeout + 5) + GRADER_OWN)


class OverBudget(Exception):
    """One student's grading took longer than its budget."""


class Worker:
    """What one worker grades with: paths (the build's, lab04_paths.txt), compiler
    (compile_sandbox.Compiler), runner (runner_client.Runner as root, else None), explainer
    (diagnosis.Explainer) and hidden (what else no run may see: --hide)."""

    def __init__(self, paths, compiler, runner, explainer, hidden):
        self.paths, self.compiler, self.runner, self.explainer, self.hidden = paths, compiler, runner, explainer, hidden


_worker = None  # this process's Worker: a pool's initializer can leave it nowhere else


def start_worker(paths, compile_command, hidden=()):
    """The pool's initializer: makes this process's Worker."""
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process stops the class
    _worker = new_worker(paths, compile_command, hidden)


def worker_sandbox():
    """How this process's Worker isolates a lab, as a value: (the compile's isolation, runs
    through a runner of its own user, a root of its own)."""
    return (_worker.compiler.isolation, _worker.runner is not None,
            bool(_worker.runner and _worker.runner.own_proc))


def new_worker(paths, compile_command, hidden=()):
    """A Worker for this process: as root (and the sandbox's users allowed), a runner whose
    labs, and compiles, run as a user of its own; else compiles in bubblewrap where it works,
    and runs through the checker's sandbox (isolation.py chooses, from what was had here)."""
    runner = None
    if isolation.own_users_asked():
        try:
            runner = runner_client.Runner(paths["runner"], paths["runtime"])
            if sandbox_users.user_cannot_run(runner.uid, paths["runner"]):
                runner.close()
                runner = None
            else:
                # No root of its own here (Docker's defaults): the compile and runs kept out of the
                # class, the project (but what the compile needs of the build) and --hide's places.
                runner.keep_out(list(hidden) + [ROOT], compile_sandbox.compile_needs(compile_command[1]))
        except sandbox.Refused:
            runner = None
    compiles = isolation.choose_compiles(bool(runner.own_proc) if runner else None, sandbox.bwrap_works)
    compiler = compile_sandbox.Compiler(compile_command, paths["module_link"], compiles, runner and runner.uid,
                                        runner and runner.own_proc, runner=paths["runner"])
    return Worker(paths, compiler, runner, diagnosis.Explainer(MISTAKES), list(hidden))


def grade_student(job):
    """The pool's job: grades one student with this process's Worker. An error of the grader's
    own, or grading past the student's budget, costs this row (status "grader error": not
    graded), never the class."""
    return grade_within_budget(_worker, *job)


def grade_within_budget(worker, student, points, timeout, texts, template):
    budget = grader_budget(timeout, len(texts), worker.compiler.timeout)

    def over_budget(*_):
        raise OverBudget("grading this lab took longer than its budget of %d s" % budget)
    signal.signal(signal.SIGALRM, over_budget)
    signal.alarm(budget)
    try:
        return grade_one(worker, student, points, timeout, texts, template)
    except Exception as e:  # pylint: disable=broad-except
        if worker.runner:  # its answer may be half read: the next lab gets a new runner
            worker.runner.close_process()
        return grader_error(worker, student, points, "%s: %s" % (type(e).__name__, str(e)[:300]))
    finally:
        signal.alarm(0)


def grader_error(worker, student, points, why):
    return new_row(worker, student, points, status=Status.GRADER_ERROR, diagnosis=why,
                   feedback=["Not graded: the grader could not grade this lab (%s). This is not your grade: "
                             "your instructor will look at it." % why])


def new_row(worker, student, points, **fields):
    """A row of the gradebook (row.py), no points earned yet."""
    return Row(student=student.name, id=student.id, label=student.label, max_score=sum(points),
               compile_isolation=worker.compiler.isolation, **fields)


def grade_one(worker, student, points, timeout, texts, template=frozenset()):
    row = new_row(worker, student, points)
    problem = student.problem()
    if problem:
        row.status, row.diagnosis = problem
        row.feedback = ["Not graded: %s." % problem[1]]
        return row
    row.own_code = similarity.own_code(student.text, template)  # what the summary compares
    # The staged lab: a folder only the grader and this student's sandbox user can enter, in one
    # that others may cross but not list (and, as root, the compile's root beside it).
    top = tempfile.mkdtemp(prefix="lab04-class-")
    os.chmod(top, 0o711)
    work = os.path.join(top, "lab")
    os.mkdir(work, 0o700)
    clock = time.monotonic()
    try:
        module, failed = worker.compiler.compile(student.text, work)
        row.seconds = {"compile": time.monotonic() - clock}
        if module is None:
            return compile_failed(worker, student, points, row, failed)
        if worker.runner:
            box = runner_client.ForkedBox(worker.runner, module)
        else:
            box = runner_client.ServedBox(worker.paths["runner"], module, worker.paths["runtime"],
                                          hidden=[student.folder, ROOT] + worker.hidden)
        row.run_sandbox = box.mode
        row.isolation = box.isolation_of_any_student + "; " + \
            compile_sandbox.ISOLATION[worker.compiler.isolation]
        clock = time.monotonic()
        try:
            results, not_run = verdict.run_cases(lambda case: running.run_case(box, case, timeout, "lab04_attention"),
                                                 texts)
        finally:
            box.close()
        row.seconds["grade"] = time.monotonic() - clock
        clock = time.monotonic()
        judge(worker, row, results, not_run, points, student.text)
        row.seconds["diagnosis"] = time.monotonic() - clock
        return row
    finally:
        sandbox_users.remove_tree(top)
        if worker.runner:  # what the compiler, as the student's user, left in /tmp and the like
            sandbox_users.remove_files_of(worker.runner.uid)


def compile_failed(worker, student, points, row, failed):
    """The row of a lab that did not compile: the student's, with the compiler's messages, or,
    when the fault is the grader's, a grader error."""
    status, errors = failed
    lines = errors.strip().splitlines()
    if status == Status.GRADER_ERROR:
        return grader_error(worker, student, points, errors)
    if not compile_sandbox.students_own(status, errors) and not worker.compiler.control_compiles(LESSON):
        return grader_error(worker, student, points, "the compile failed, and not on the lab's code: %s"
                            % (lines[0] if lines else "no message")[:300])
    first = next((l for l in lines if "error" in l.lower()), lines[0] if lines else "no message")  # (as: "Error")
    row.status, row.diagnosis = status, first[:300]
    row.feedback = ["Your lab did not compile. The compiler said:", ""] + lines[:COMPILER_LINES] + (
        ["... (%d more lines)" % (len(lines) - COMPILER_LINES)] if len(lines) > COMPILER_LINES else [])
    return row


def judge(worker, row, results, not_run, points, source=None):
    """Fills the row of a lab that ran from its cases' results: its points step by step, its
    status, the diagnosis (which quotes the student's own line where it finds it: slips.py) and
    the feedback."""
    score, total, grades, parts, report = verdict.grade_lines(results, not_run, points)
    problems = [line for line in map(verdict.problem_line, results) if line]
    steps = range(1, cases.STEPS + 1)
    row.score, row.steps = score, [points[n - 1] if grades[n] is None else 0.0 for n in steps]
    row.status = status_of(results)
    row.step_lines = [parts[n] for n in steps]
    row.right = [grades[n] is None for n in steps]
    lines = []
    if row.status != Status.GRADED:  # it did not run to the end: what happened is the diagnosis
        row.diagnosis = problems[0]
    elif compare.first_blank(results):
        row.blank = compare.first_blank(results)
        row.diagnosis = "STEP %d is not written yet (the starter's TODO)" % row.blank
    elif not all(r.judgement.ok for r in results):
        found = diagnosis.diagnose(results, MISTAKES, worker.explainer, source)
        lines, row.mistakes = found.lines, found.mistakes
        row.same_tensor, row.diagnosis = found.same_tensor, found.said
        if not row.mistakes:
            row.wrong_numbers = wrong_numbers(results)
    row.feedback = ["Your grade, step by step (each STEP judged on your lab's own numbers):", ""] + \
        problems + report + ([""] + lines if lines else [])
    row.reached = reached_steps(results, row.right, row.blank)


def reached_steps(results, right, blank):
    """Each STEP: whether the lab got to it in some case (it printed one of the step's tensors,
    or for the last STEP the one before it), and not past a starter's blank."""
    printed = {step for r in results for step, name, _ in cases.TENSORS if r.evidence.parsed.get(name) is not None}
    return [(right[n - 1] or n in printed or (n == cases.STEPS and n - 1 in printed)) and not (blank and n >= blank)
            for n in cases.STEP_NUMBERS]


def wrong_numbers(results):
    """What a lab printed where it first went wrong, in each case it got wrong, as a value two
    labs share only when they printed the same numbers there: {step, name, key}, or None (no
    tensor to compare: a wrong exit status, a STEP 8). The summary groups labs by it."""
    parts = []
    for r in results:
        block = (r.evidence.blocks or {}).get(r.judgement.name) if not r.judgement.ok else None
        if isinstance(block, compare.Tensor) and own_inputs.full(block) is not None and not grading.not_numbers(
                block.values, compare.expected_of(cases.parse_case(r.text), r.judgement.of_head)[r.judgement.name]):
            # (NaN is no number: two labs that print NaN printed nothing alike); the STEP as text,
            # as class.json has always kept it (and the key, its hash, with it)
            parts.append((r.text, str(r.judgement.step), r.judgement.name, r.judgement.of_head, tuple(block.shape),
                          block.values.tolist()))
    if not parts:
        return None
    return {"step": parts[0][1], "name": parts[0][2], "key": hashlib.sha256(repr(parts).encode()).hexdigest()[:20]}


def status_of(results):
    """The row's status from how its runs ended (their engine.Ending), the worst first."""
    endings = {r.run.ended for r in results}
    return next((status for ending, status in STATUS_OF_ENDING if ending in endings), Status.GRADED)
