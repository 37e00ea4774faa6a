"""watch_verdict.py: the checker's verdict for the watch (watch/lab_watch.cpp), as the student saves.

usage: watch_verdict.py [--lazy] [--memo DIR] [PROGRAM]
  PROGRAM     the lab, as the report names it
  --memo DIR  where verdicts are kept (memo.py)
  --lazy      the judge starts at the first job the memo cannot answer, not at once (the
              tests see with it that a kept verdict needs no judge; the watch starts the
              judge at once, so that a verdict judged anew waits for no torch)

The watch starts it once, beside the first build, and talks to it on standard input and output
(the protocol is described in lab_watch.cpp): it says the cases and the limits of a run at
once, then loads torch, computes the reference of every case and warms the diagnosis, while
the lab builds. After each run the watch runs the cases itself (forks of a process that has
LibTorch loaded) and sends what they printed; this answers with the verdict, each line
starting with "check:", then "end <id>":

  right:    every STEP matches the reference in all cases (and the note on a finite fill)
  a blank:  which STEP a starter's run stopped at, not written yet, and nothing more
  stopped:  the first case the lab crashed, hung or flooded in, in one line
  wrong:    the first case NOT OK with what was printed and expected, then the diagnosis and
            its fix: the lines the test run ends with (verdict.py, the same compare and
            diagnosis)

A fault of its own is one "check:" line naming it; it then waits for the next job. When torch
cannot be loaded at all, it says so at the first job, then "final": the watch asks no more.

Two processes: this one greets and keeps verdicts (memo.py); a job whose runs printed what an
earlier job's printed is answered from there at once, even while torch loads. Every other job
goes to the judge, the same file started with --judge, which loads torch and the reference as
it starts and answers as above, followed by "keep" when the verdict may be kept.
"""
import os
import select
import subprocess
import sys

from lab04 import PROJECT
from lab04.checker import cases, engine, limits, memo, running, sandbox_users

LAB_SOURCE = os.path.join(PROJECT, "lab04_attention.cpp")
LAUNCHER = os.path.join(PROJECT, "checker", "watch_verdict.py")  # this module's command


def saved_source():
    """The lab as saved: the file the watch builds and runs (the project's, or a starter's),
    whose lines a diagnosis quotes (slips.py); None where it cannot be read."""
    try:
        with open(LAB_SOURCE, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def greet(out):
    """The cases and the limits of each run, before torch loads (the watch needs them first)."""
    found = limits.limits(cases.WATCH_TIMEOUT, limits.sanitizer_build(),
                           limits.PROCESSES + len(sandbox_users.processes_of(os.getuid())) + 64)
    lines = ["cases %d %d %d %d" % (len(cases.DEFAULT_CASES), int(cases.WATCH_TIMEOUT * 1000), cases.MAX_STDOUT,
                                    cases.MAX_STDERR),
             "limits " + " ".join("%s=%d" % kv for kv in found.items())]
    lines += ["case %s %s" % (text, " ".join(cases.arguments(cases.parse_case(text)))) for text in cases.DEFAULT_CASES]
    out.write(("\n".join(lines) + "\n").encode())
    out.flush()


class Sent:
    """A run the watch made, as sandbox.Run has it."""

    def __init__(self, status, stopped, out, err):
        self.status = None if stopped != "-" else status
        self.stopped = None if stopped == "-" else engine.Ending(stopped)
        self.out, self.err, self.limit = out, err, None


def read_raw_job(stream):
    """(id, how many runs, the runs as the watch sent them: bytes) of the next job, or None at
    the end of the input."""
    head = stream.readline().split()
    if not head:
        return None
    if len(head) != 3 or head[0] != b"job":
        raise ValueError("expected a job, got %r" % b" ".join(head)[:80])
    raw = []
    for _ in range(int(head[2])):
        line = stream.readline()
        word, _, _, _, n_out, n_err = line.split()
        assert word == b"ran"
        raw += [line, stream.read(int(n_out) + int(n_err))]
    return head[1].decode(), int(head[2]), b"".join(raw)


def parse_runs(raw, program):
    """{case text: running.Ran} of a job's runs; program: the lab's program, as the report
    names it (a case's command)."""
    runs, at = {}, 0
    while at < len(raw):
        end = raw.index(b"\n", at)
        word, text, status, stopped, n_out, n_err = raw[at:end].split()
        at = end + 1
        out, err = raw[at:at + int(n_out)], raw[at + int(n_out):at + int(n_out) + int(n_err)]
        at += int(n_out) + int(n_err)
        text = text.decode()
        command = [program] + cases.arguments(cases.parse_case(text))
        runs[text] = running.ran(command, Sent(int(status), stopped.decode(), out, err), cases.WATCH_TIMEOUT)
    return runs


def read_job(stream, program):
    """(id, {case text: running.Ran}) of the next job, or None at the end of the input."""
    job = read_raw_job(stream)
    return job and (job[0], parse_runs(job[2], program))


def judged(runs, explainer):
    """The verdict's lines, without their "check: "."""
    from lab04.checker import compare
    from lab04.checker import verdict
    results, not_run = verdict.run_cases(lambda case: runs[case.text], cases.DEFAULT_CASES)
    blank = compare.first_blank(results)
    if blank and not any(verdict.wrong_before_blank(r, blank) for r in results):
        return [verdict.starter_line(results, blank)]  # what is written is right: no more to say
    stopped = next((r for r in results if r.run.ended), None)
    if stopped:
        return ["NOT OK: in case %s the lab %s%s" % (stopped.text, stopped.run.problem,
                                                     "; the other cases were not run" if not_run else "")]
    lines, ok, _ = verdict.check_lines(results, not_run, explainer, saved_source())
    if ok:
        return ["every STEP matches the reference in all %d cases" % len(results)] + verdict.fill_notes(results)
    return verdict.case_lines(verdict.first_wrong(results), later=False) + lines


def warm(explainer, stream):
    """Predicts what each known mistake prints in each case, while no job waits: the first
    diagnosis then costs what a later one does."""
    from lab04.checker.mistakes import MISTAKES
    for m in MISTAKES:
        for text in cases.DEFAULT_CASES:
            if select.select([stream], [], [], 0)[0]:
                return
            explainer.shown(text, (m,), "x")


def serve(read, answer, out):
    """Answers each job read() reads with answer(job), until the end of the input (0), a job it
    cannot read (said on out: 1), or an answer that could not be given (False: 1)."""
    while True:
        try:
            job = read()
        except (ValueError, AssertionError) as e:
            out.write(("check: the checker could not read the watch's runs (%s)\n" % e).encode())
            out.flush()
            return 1
        if job is None:
            return 0
        if answer(job) is False:
            return 1


def front(memo_folder, program, lazy):
    """Greets, starts the judge (unless lazy), and answers each job: from the memo, or as the
    judge does."""
    out, stream = sys.stdout.buffer, sys.stdin.buffer
    greet(out)
    kept = memo.Memo(memo_folder)
    def start_judge():
        return subprocess.Popen([sys.executable, LAUNCHER, "--judge", program],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    judge = None if lazy else start_judge()

    def answer(job):
        nonlocal judge
        ident, count, raw = job
        from lab04.checker import slips
        key = kept.key("watch", program, raw, repr(slips.signature(saved_source())))  # (a diagnosis quotes them)
        lines = kept.get(key, lambda v: isinstance(v, list) and all(isinstance(line, str) for line in v))
        if lines is None:
            judge = judge or start_judge()
            judge.stdin.write(b"job %s %d\n" % (ident.encode(), count) + raw)
            judge.stdin.flush()
            lines, keep = [], False
            for line in iter(judge.stdout.readline, b""):
                line = line.rstrip(b"\n").decode("utf-8", "replace")
                if line == "keep":
                    keep = True
                elif line == "end " + ident:
                    break
                else:
                    lines.append(line)
            else:
                return False  # the judge ended: so does this, and the watch starts the checker again
            if keep:
                kept.put(key, lines)
        out.write(("".join(line + "\n" for line in lines) + "end %s\n" % ident).encode())
        out.flush()
        return True
    return serve(lambda: read_raw_job(stream), answer, out)


def judge_jobs(program):
    """The judge: loads torch and the reference, then answers each job."""
    out = sys.stdout.buffer
    stream = sys.stdin.buffer
    try:
        import torch
        torch.set_num_threads(1)  # small tensors: one thread, and no pool left waiting
        from lab04.checker import compare
        from lab04.checker import diagnosis
        from lab04.checker.mistakes import MISTAKES
        for text in cases.DEFAULT_CASES:
            compare.expected_of(cases.parse_case(text))  # the reference, once for the watch
        explainer = diagnosis.Explainer(MISTAKES)
    except Exception as e:  # pylint: disable=broad-except  (a torch that cannot load: said once, at the first job)
        job = read_job(stream, program)
        if job:
            out.write(("check: no verdict: torch cannot be loaded here (%s: %s); install python3-torch (Debian), or "
                       "name another Python in LAB_PYTHON\nfinal\nend %s\n" % (type(e).__name__, str(e)[:200], job[0])).encode())
            out.flush()
        return 1
    warm(explainer, stream)

    def answer(job):
        ident, runs = job
        keep = True
        try:
            lines = judged(runs, explainer)
        except Exception as e:  # pylint: disable=broad-except  (a fault of the checker's own: one line)
            lines, keep = ["the checker failed: %s: %s; the next save tries again" % (type(e).__name__, str(e)[:200])], False
        text = "".join("check: %s\n" % cases.printable(line) for line in lines)
        out.write((text + ("keep\n" if keep else "") + "end %s\n" % ident).encode())
        out.flush()
    return serve(lambda: read_job(stream, program), answer, out)


def main(argv):
    """The command (checker/watch_verdict.py): ends quietly when its reader goes (Ctrl-C, a closed
    pipe)."""
    try:
        return command(argv)
    except (KeyboardInterrupt, BrokenPipeError):
        return 0


def command(argv):
    if argv[:1] == ["--judge"] and len(argv) == 2:
        return judge_jobs(argv[1])
    folder, lazy = None, argv[:1] == ["--lazy"]
    argv = argv[1:] if lazy else argv
    if argv[:1] == ["--memo"] and len(argv) >= 2:
        folder, argv = argv[1], argv[2:]
        try:
            folder = memo.folder_argument(folder)
        except ValueError:
            folder = None  # the verdicts are judged every time: slower, never wrong
    if len(argv) > 1 or argv[:1] and argv[0].startswith("-"):
        print("watch_verdict: usage: watch_verdict.py [--lazy] [--memo DIR] [PROGRAM]", file=sys.stderr)
        return 2
    return front(folder, argv[0] if argv else "lab04_attention", lazy)

