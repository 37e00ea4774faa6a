"""The student's loop (watch/lab_watch.cpp) on a copy of the project. The README's rebuild-run
(build/lab04_watch --once) prints what build/lab04_attention prints and exits with its status.
The watch, started with the README's command, driven like a student drives it: it shows the new run after a save, byte for byte what
build/lab04_attention prints; it shows a compile error and waits; it reports a crashing lab in
one line and goes on; Ctrl-C (SIGINT to its process group) and SIGTERM end it, during a build
and during a run that hangs, and leave no process behind; bad options are one line and exit 2.
After each run comes the checker's verdict, in lines that start with "check:": all right for
the lesson; the first wrong STEP and the diagnosis for a known mistake; one line for a crash
and for a case that hangs (within the checker's time limit); for a starter with STEP 3 written
and STEP 4 blank, what STEP 3 did in the cases (right, q times q transposed, a scale that ignores
--no-scale: three verdicts) and that STEP 4 is not written yet, by the watch and --once; a save during a verdict cancels it; --no-check leaves it out, and without a
Python that can import torch it says so once (root only: torch is hidden in a mount namespace).
After a save the watch and --once rebuild build/lab04_attention before they wait or end: it
prints what they ran. --once after the first is served by the server the first started (the same process for each,
one for each environment LibTorch starts in); a served --once ended by a signal dies of it and
its run is stopped; --stop ends the servers. After an edit, the command a verdict names prints
what the verdict says was printed. A student's first hour: each habit of Python's that does not
compile (HABITS) ends --once's messages, and the README's test command's, with the C++ way; the
Python lab's mask of floats and a transposed q are named by their cause.

usage: watch_test.py PROJECT_DIR WORK_DIR

Prints OK or NOT OK for each promise, and exits 1 if one did not hold.
"""
import os
import re
import signal
import subprocess
import sys
import time

import checklist
import project

from lab04.checker import cases  # noqa: E402  (the checker's own cases and limits)

OPTIONS = "--verbose -T 20 --heatmap --digits 4"  # added to the README's command
ALL_RIGHT = "check: every STEP matches the reference in all %d cases" % len(cases.DEFAULT_CASES)
SOFTMAX = ("torch::softmax(scores, /*dim=*/-1)", "torch::softmax(scores, /*dim=*/0)")  # a known mistake
LAST_LINE = "Next: run several heads.\n"
WAIT = 300  # seconds: the first start builds the watch's precompiled header and its code in the copy


class Watch:
    """The README's watch command, run by bash in a session of its own."""

    def __init__(self, work, command):
        self.work = work
        self.out = open(os.path.join(work, "watch.out"), "w+b")
        self.err = open(os.path.join(work, "watch.err"), "w+b")
        self.process = subprocess.Popen(["bash", "-c", command], cwd=work, stdout=self.out,
                                        stderr=self.err, start_new_session=True)
        self.session = self.process.pid
        self.seen_out = self.seen_err = 0

    def text(self, stream):
        stream.flush()
        with open(stream.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def next_round(self, seconds=WAIT):
        """Waits for the watch's next "waiting for the next save" line (or its end); returns the
        standard output and standard error it wrote since the previous round."""
        deadline = time.time() + seconds
        while time.time() < deadline and self.process.poll() is None:
            err = self.text(self.err)
            if err.count("waiting for the next save", self.seen_err) > 0:
                break
            time.sleep(0.05)
        out, err = self.text(self.out), self.text(self.err)
        new_out, new_err = out[self.seen_out:], err[self.seen_err:]
        self.seen_out, self.seen_err = len(out), len(err)
        return new_out, new_err

    def verdict_waits_on_a_hang(self, seconds=WAIT):
        """Waits until the run has shown (standard output ends with the lesson's last line) and
        one case of the verdict has run for a second: a case that hangs (the others take a
        twentieth of that). True when it came; the output stays unread for next_round()."""
        deadline, case, since = time.time() + seconds, None, 0.0
        while time.time() < deadline and self.process.poll() is None:
            forks = self.watch_processes()[1:]  # the watch's forked runs: now, the verdict's cases
            if self.text(self.out)[self.seen_out:].endswith(LAST_LINE) and forks:
                if forks[0] != case:
                    case, since = forks[0], time.time()
                elif time.time() - since > 1.0:
                    return True
            time.sleep(0.05)
        return False

    def watch_processes(self):
        """The watch, then the run it forked, if one runs now (the same program). The watch is
        the one whose parent is not the watch: process ids wrap (at 32768 on the fresh machines,
        within minutes on a busy one), so a run's id may be lower than the watch's."""
        parents = {}
        for pid in self.processes():
            try:
                if os.readlink("/proc/%d/exe" % pid).endswith("/lab04_watch"):
                    parents[pid] = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
        return sorted(parents, key=lambda pid: (parents[pid] in parents, pid))

    def pid_of_watch(self):
        return (self.watch_processes() or [None])[0]

    def processes(self):
        """The live processes of the session: the watch, and all it started."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = open("/proc/%s/stat" % entry).read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[3]) == self.session and fields[0] != "Z":  # session id; not a zombie
                    found.append(int(entry))
        return found

    def ended_clean(self, seconds=10):
        """True when bash ended and no process of the session is left."""
        try:
            self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False, "still running after %d s" % seconds
        deadline = time.time() + 3
        while self.processes() and time.time() < deadline:
            time.sleep(0.05)
        left = [open("/proc/%d/cmdline" % p).read().replace("\0", " ")[:120] for p in self.processes()]
        return not left, "left behind: %s" % left if left else "exit %s" % self.process.returncode

    def kill(self):
        try:
            os.killpg(self.session, signal.SIGKILL)
        except OSError:
            pass


def lasting(pids, seconds):
    """Waits up to `seconds` for a process among pids() that is still there half a second after
    it was first seen: a run of the lab, not a child forked to start the checker or a build
    (that one is the watch's program too, for the moment before it execs). Its pid, or None."""
    deadline, first_seen = time.time() + seconds, {}
    while time.time() < deadline:
        now = time.time()
        first_seen = {pid: first_seen.get(pid, now) for pid in pids()}
        for pid, then in first_seen.items():
            if now - then >= 0.5:
                return pid
        time.sleep(0.02)
    return None


def save(path, text):
    """Writes the file as an editor does: a new file renamed over the old one."""
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def configured_copy(project_dir, work):
    """Copies the project into work and configures it with the default preset: cmake's result,
    or None, said in a NOT OK line."""
    project.copy(project_dir, work)
    configure = subprocess.run(["cmake", "--preset", "default"], cwd=work, capture_output=True, text=True)
    if configure.returncode != 0:
        print("NOT OK  the copy could not be configured:\n" + configure.stdout[-2000:] + configure.stderr[-2000:])
        return None
    return configure


# A starter with STEP 3 written and STEPs 4 to 6 still blank, STEP 3 in three ways: each verdict
# says what STEP 3 did in the cases, then that STEP 4 is not written yet (the run stops there).
STEP_3 = "torch::Tensor scores = q.matmul(k.transpose(-2, -1));"
STEP_3_WAYS = {
    "right": ([], "check: STEPs 1 to 3 right in all %d cases · STEP 4 not written yet" % len(cases.DEFAULT_CASES)),
    "q times q transposed": ([(STEP_3, STEP_3.replace("k.transpose", "q.transpose"))],
                             "check: STEP 3 wrong in %d of %d cases · STEP 4 not written yet" % (
                                 len(cases.DEFAULT_CASES), len(cases.DEFAULT_CASES))),
    "a scale that ignores --no-scale": ([("if (opt.scale) scores.mul_(", "scores.mul_(")],
                                        "check: STEP 3 wrong in 1 of %d cases · STEP 4 not written yet" % len(
                                            cases.DEFAULT_CASES)),
}


def starter_checks(work, lab_cpp, watch, rebuild_run):
    """The verdict on a starter whose STEP 3 is written, through the watch and --once."""
    starter = os.path.join(work, "starter_lab.cpp")
    made = subprocess.run([sys.executable, os.path.join(project.INSTRUCTOR, "make_starter.py"), "--blank", "4,5,6",
                           "--lab-only", starter], capture_output=True, text=True)
    if made.returncode != 0:
        return [("a starter with STEP 3 written: its verdicts", False, "make_starter.py failed: %s" % made.stderr[-300:])]
    text = open(starter).read()
    os.remove(starter)
    checks, seen = [], {}
    for way, (edits, last) in STEP_3_WAYS.items():
        lab = text
        for old, new in edits:
            assert old in lab, old
            lab = lab.replace(old, new, 1)
        save(lab_cpp, lab)
        _, err = watch.next_round()
        in_watch = [l for l in err.splitlines() if l.startswith("check: ")]
        once = subprocess.run(["bash", "-c", rebuild_run], cwd=work, capture_output=True, text=True, timeout=WAIT)
        by_once = [l for l in once.stderr.splitlines() if l.startswith("check: ")]
        seen[way] = in_watch
        checks.append(("a starter, STEP 3 %s, STEPs 4 to 6 blank: the watch's verdict and --once's end %r" % (way, last),
                       in_watch[-1:] and in_watch[-1].startswith(last) and by_once == in_watch
                       and (way == "right") == (len(in_watch) == 1),
                       "the watch: %s\n--once: %s" % (in_watch, by_once)))
    checks.append(("... three different verdicts", len({tuple(v) for v in seen.values()}) == len(seen), seen))
    return checks


def once_checks(work, rebuild_run):
    """The README's rebuild-run, with options added, against build/lab04_attention."""
    subprocess.run(["cmake", "--build", "build", "--target", "lab04_attention"], cwd=work, capture_output=True)
    checks = []
    for options, what in ((OPTIONS, "the same bytes and exit status 0"),
                          ("-T 1024 --digits 9", "the same bytes (LibTorch's threads at work) and exit status 0"),
                          ("--no-mask", "the same bytes, exit status 1 and the same line on standard error"),
                          ("--tokens 0", "nothing on standard output, exit status 2, one line on standard error")):
        try:
            got = subprocess.run(["bash", "-c", rebuild_run + " " + options], cwd=work, capture_output=True,
                                 text=True, timeout=WAIT)
        except subprocess.TimeoutExpired:
            checks.append(("`%s %s`: %s" % (rebuild_run, options, what), False, "still running after %d s" % WAIT))
            continue
        lab = subprocess.run([os.path.join(work, "build", "lab04_attention")] + options.split(),
                             capture_output=True, text=True)
        verdict = [line for line in got.stderr.splitlines(True) if line.startswith("check: ")]
        rest = "".join(line for line in got.stderr.splitlines(True) if not line.startswith("check: "))
        judged = verdict == ([] if lab.returncode == 2 else [ALL_RIGHT + "\n"])
        ok = got.stdout == lab.stdout and got.returncode == lab.returncode and rest == lab.stderr and judged
        checks.append(("`%s %s`: %s as build/lab04_attention, then %s" % (
            rebuild_run, options, what, "no verdict" if lab.returncode == 2 else "the verdict: all right"), ok,
                       "exit %d (lab %d)\nstdout %r\nlab's  %r\nstderr %r" % (
                           got.returncode, lab.returncode, got.stdout[-300:], lab.stdout[-300:], got.stderr[-300:])))
    return checks


def program_rebuilt(work, seconds=120):
    """Waits until build/lab04_attention is newer than the lab's last save: --once's server
    rebuilds it from the save it ran in the second or two after it answered. Whether it came."""
    lab, program = os.path.join(work, "lab04_attention.cpp"), os.path.join(work, "build", "lab04_attention")
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(program) and os.path.getmtime(program) >= os.path.getmtime(lab):
            return True
        time.sleep(0.1)
    return False


def command_line_checks(work, rebuild_run, lab_cpp, lesson):
    """After an edit (a dropped result: scores.mul(...) on a line of its own), --once's verdict
    names a case's command: run as it is, it prints the number the verdict says was printed; and
    so does build/lab04_attention with the case's options, which --once rebuilt from the save."""
    from lab04.checker import compare  # the checker's reader of a printed tensor
    scale = "scores.mul_(1.0 / std::sqrt(double(HEAD)));"
    save(lab_cpp, lesson.replace(scale, "scores.mul(1.0 / std::sqrt(double(HEAD)));", 1))
    got = subprocess.run(["bash", "-c", rebuild_run], cwd=work, capture_output=True, text=True, timeout=WAIT)
    said = "\n".join(l[len("check: "):].strip() for l in got.stderr.splitlines() if l.startswith("check: "))
    where = re.search(r"STEP \d: (\w[\w ]*?): .*worst at row (\d+), column (\d+): printed (-?[\d.]+|nan|-?inf)", said)
    command = re.search(r"^command: (.+)$", said, re.M)
    printed, by_program = None, None
    program_rebuilt(work)
    if where and command:
        header = next(h for _, name, h in cases.TENSORS if name == where.group(1))
        row, col = int(where.group(2)), int(where.group(3))

        def printed_by(words):
            ran = subprocess.run(words, cwd=work, capture_output=True, text=True, timeout=WAIT)
            block = compare.read_block(ran.stdout.splitlines(), header)
            return "%.9f" % block.values[row][col] if isinstance(block, compare.Tensor) else block
        printed = printed_by(["bash", "-c", command.group(1)])
        options = command.group(1).split(" --no-check ", 1)[-1].split()
        by_program = printed_by([os.path.join(work, "build", "lab04_attention")] + options)
    save(lab_cpp, lesson)
    return [("after an edit, the verdict's command: line, run as it is, prints what the verdict says was printed; "
             "so does build/lab04_attention with its options (--once rebuilt it from the save)",
             where is not None and command is not None and printed == where.group(4) == by_program,
             "verdict:\n%s\nthe command printed %s, build/lab04_attention %s" % (said[:1500], printed, by_program))]


# A Python-first student's compile errors: the edit, and the words the line after the compiler's
# messages must hold (cmake/python_habits.sh says them; this list is the test's own).
HABITS = [
    ("a keyword argument", "torch::softmax(scores, /*dim=*/-1)", "torch::softmax(scores, dim=-1)",
     "C++ has no keyword arguments"),
    ("True", "if (opt.scale) scores", "if (opt.scale == True) scores", "true and false in lower case"),
    ("len()", "torch::randn({T, C})", "torch::randn({len(opt), C})", "C++ has no len()"),
    (".T", "q.matmul(k.transpose(-2, -1))", "q.matmul(k.T)", "C++ has no .T"),
    ("@", "q.matmul(k.transpose(-2, -1))", "q @ k.t()", "C++ has no @"),
    ("**", "std::sqrt(double(HEAD))", "(HEAD ** 0.5)", "C++ has no **"),
    ("a slice", "weights.matmul(v);", "weights.matmul(v[:, :]);", "C++ has no slices with a colon"),
    ("math.sqrt", "std::sqrt(double(HEAD))", "math.sqrt(HEAD)", "C++ has no math module"),
    ("torch.softmax", "torch::softmax(scores, /*dim=*/-1)", "torch.softmax(scores, -1)", "with ::, not a dot"),
    ("F.softmax", "torch::softmax(scores, /*dim=*/-1)", "F.softmax(scores, -1)", "F.softmax (torch.nn.functional)"),
    ("None", "torch::Tensor out = weights.matmul(v);",
     "torch::Tensor out = weights.matmul(v);\n    if (out == None) return 1;", "C++ has no None"),
]
HINT = "hint (a habit of Python): "


def command_lines(output):
    """The lines of output that are a compiler's command line (Ninja prints one under a failed
    step's FAILED: line), or that FAILED: line."""
    return [l for l in output.splitlines() if l.startswith("FAILED: ") or (
        re.search(r"(clang\+\+|g\+\+|c\+\+)(-\d+)? ", l) and " -o " in l and " -c " in l)]


def first_hour_checks(work, rebuild_run, test_command, lab_cpp, lesson):
    """A student's first hour: each habit of Python's that does not compile ends --once's
    messages with the C++ way, with no compiler command line (and the README's test command's,
    which then shows no report of a run before the edit); the Python lab's mask of floats is
    named in the verdict; a q transposed is named by the student's own line, with its fix, and no
    later step is called wrong in itself."""
    checks = []
    for what, old, new, words in HABITS:
        save(lab_cpp, lesson.replace(old, new, 1))
        got = subprocess.run(["bash", "-c", rebuild_run], cwd=work, capture_output=True, text=True, timeout=WAIT)
        hints = [l for l in got.stderr.splitlines() if l.startswith(HINT)]
        checks.append(("--once, %s: the compiler's error, then one line that says the C++ way, and no compiler "
                       "command line" % what,
                       got.returncode != 0 and "error" in got.stderr and len(hints) == 1 and words in hints[0]
                       and not got.stdout and not command_lines(got.stderr),
                       "exit %d, stderr %r" % (got.returncode, got.stderr[-800:])))
        if what in ("a keyword argument", ".T"):
            got = subprocess.run(["bash", "-c", test_command], cwd=work, capture_output=True, text=True, timeout=WAIT)
            out = got.stdout + got.stderr
            checks.append(("the README's test command, %s: the C++ way after the compiler's error, no compiler "
                           "command line, and no test run reported (none ran)" % what, got.returncode != 0 and any(
                               l.startswith(HINT) and words in l for l in out.splitlines())
                           and "No test ran since lab04_attention.cpp was saved" in out and "=== what failed" not in out
                           and not command_lines(out), "exit %d, output %r" % (got.returncode, out[-1200:])))
    for what, edits, said, after in (
            ("the Python lab's mask of floats, 1 - tril", [("torch::ones({T, T}, torch::kBool).tril_();",
                                                          "torch::tril(torch::ones({T, T}));"),
                                                         ("scores.masked_fill_(tril.logical_not(), -INFINITY)",
                                                          "scores.masked_fill_(1 - tril, -INFINITY)")],
             ["masked_fill takes a mask of bool"], "STEP 5"),
            ("q transposed, so the scores are (HEAD, HEAD)", [("q.matmul(k.transpose(-2, -1))", "q.t().matmul(k)")],
             ["check: diagnosis: your line `torch::Tensor scores = q.t().matmul(k);` transposes q instead of k: write "
              "q.matmul(k.transpose(-2, -1))", "scores is a (6, 6) tensor"],
             "STEP 4")):
        text = lesson
        for old, new in edits:
            text = text.replace(old, new, 1)
        save(lab_cpp, text)
        got = subprocess.run(["bash", "-c", rebuild_run], cwd=work, capture_output=True, text=True, timeout=WAIT)
        verdict = "\n".join(l for l in got.stderr.splitlines() if l.startswith("check: "))
        wrong = re.search(r"wrong in themselves.*", verdict)
        checks.append(("--once, %s: the verdict names the cause (%s), and calls no step after it wrong in itself"
                       % (what, "; ".join(said)), all(w in verdict for w in said)
                       and (wrong is None or not re.search(after[:-1] + "[%s-7]" % after[-1], wrong.group(0))),
                       verdict[-1500:]))
    save(lab_cpp, lesson)
    return checks


def alive(pid):
    """Whether the process is there and not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def same_root(pid, ours):
    """Whether process pid has this process's root folder (ours: os.stat("/")); True where
    that cannot be read."""
    try:
        root = os.stat("/proc/%s/root" % pid)
    except OSError:
        return True
    return (root.st_dev, root.st_ino) == (ours.st_dev, ours.st_ino)


def servers_of(work, pids=False):
    """The --once servers of the copy's build folder (watch/once_server.cpp): {pid: its children's
    programs}, or with pids {pid: [(child's pid, its program)]}. A server is a daemon: its
    parent is no server. Only processes of this root count: where machines share one PID
    namespace (a chroot beside a container, each running this test), the other's servers have
    the same path and command line."""
    program = os.path.join(work, "build", "lab04_watch")
    found, parents = {}, {}
    ours = os.stat("/")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                line = f.read().split(b"\0")
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            exe = os.readlink("/proc/%s/exe" % entry)
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        parents[int(entry)] = (int(fields[1]), exe)
        if line[1:3] == [b"--serve", b"3"] and exe == program and same_root(entry, ours):
            found[int(entry)] = []
    # A server's fork (a build or the checker about to exec, a run of the lab) has the server's
    # program and command line for a moment: it is a child of a server, not a server.
    for pid in [pid for pid in found if parents[pid][0] in found]:
        del found[pid]
    for pid, (parent, exe) in parents.items():
        if parent in found:
            found[parent].append((pid, exe) if pids else exe)
    return found


def served_checks(work, rebuild_run):
    """--once, served: after the runs of once_checks, one server answers each --once (the same
    process), a client in another environment for LibTorch has a server of its own, a client
    ended by a signal dies of it and its run is stopped, and --stop leaves no server."""
    watch = os.path.join(work, "build", "lab04_watch")
    before = servers_of(work)
    lab = subprocess.run([os.path.join(work, "build", "lab04_attention"), "--digits", "5"], capture_output=True,
                         text=True)
    got = subprocess.run(["bash", "-c", rebuild_run + " --digits 5"], cwd=work, capture_output=True, text=True,
                         timeout=WAIT)
    after = servers_of(work)
    checks = [("--once again: the server that ran the --once before it runs it, as build/lab04_attention prints",
               len(before) == 1 and set(after) == set(before) and got.stdout == lab.stdout and got.returncode == 0,
               "servers before %s, after %s; exit %d" % (before, after, got.returncode))]
    got = subprocess.run(["bash", "-c", rebuild_run + " --digits 5"], cwd=work, capture_output=True, text=True,
                         timeout=WAIT, env=dict(os.environ, OMP_NUM_THREADS="1"))
    others = servers_of(work)
    checks.append(("--once with another OMP_NUM_THREADS: a server of its own, and the same bytes",
                   len(others) == 2 and set(after) < set(others) and got.stdout == lab.stdout, (others, got.returncode)))
    # A long run, and the client ended by SIGTERM meanwhile: it dies of it, the run is stopped.
    client = subprocess.Popen(["bash", "-c", "exec " + rebuild_run + " -T 4096 -C 512 --head 64 --verbose"],
                              cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The server's run of the lab: a forked child, the watch's program.
    running = lasting(lambda: [pid for kids in servers_of(work, pids=True).values() for pid, exe in kids
                               if exe == watch], WAIT)
    client.send_signal(signal.SIGTERM)
    status = client.wait(30)
    deadline = time.time() + 5
    while running and time.time() < deadline and alive(running):
        time.sleep(0.05)
    # That run's process, by its pid: a build the server forks next is the watch's program too.
    left = running and alive(running)
    checks.append(("SIGTERM to a served --once during its run: the client dies of it and the run is stopped",
                   running and status == -signal.SIGTERM and not left,
                   "run seen %s, client %s, the run still there %s; servers' children %s"
                   % (running, status, left, servers_of(work))))
    subprocess.run([watch, "--stop"], timeout=60)
    checks.append(("build/lab04_watch --stop: no server left", not servers_of(work), servers_of(work)))
    return checks


def verdict_off_checks(work, rebuild_run):
    """--no-check; and no Python that can import torch (torch hidden by an empty folder, in a
    mount namespace: root only)."""
    subprocess.run(["cmake", "--build", "build", "--target", "lab04_attention"], cwd=work, capture_output=True)
    lab = subprocess.run([os.path.join(work, "build", "lab04_attention")], capture_output=True, text=True)
    got = subprocess.run(["bash", "-c", rebuild_run + " --no-check"], cwd=work, capture_output=True, text=True,
                         timeout=WAIT)
    checks = [("`%s --no-check`: the run as build/lab04_attention's, and no verdict" % rebuild_run,
               got.stdout == lab.stdout and got.stderr == lab.stderr and got.returncode == 0,
               "exit %d, stderr %r" % (got.returncode, got.stderr[-400:]))]
    found = subprocess.run(["sh", os.path.join(project.CHECKER, "find_torch_python")], capture_output=True, text=True)
    origin = subprocess.run([found.stdout.split(" ")[0], "-c", "import torch; print(torch.__file__)"],
                            capture_output=True, text=True).stdout.strip() if found.returncode == 0 else ""
    # The folder that holds torch (and its metadata, which find_torch_python reads), hidden whole.
    torch_dirs = [os.path.dirname(os.path.dirname(origin))] if origin else []
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    if os.geteuid() != 0 or not torch_dirs or probe.returncode != 0:
        print("SKIPPED (part): no Python without torch can be made here (it needs root and a mount namespace)")
        return checks
    hide = "".join("mount -t tmpfs none %s && " % d for d in torch_dirs)
    got = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", hide + rebuild_run], cwd=work,
                         capture_output=True, text=True, timeout=WAIT)
    said = [l for l in got.stderr.splitlines() if l.startswith("check: ")]
    checks.append(("without a Python that can import torch: the run as build/lab04_attention's, then one line "
                   "saying so and how to install it", got.stdout == lab.stdout and got.returncode == 0 and len(said) == 1
                   and "no Python here can import torch" in said[0] and "python3-torch" in said[0],
                   "exit %d, stderr %r (hidden: %s)" % (got.returncode, got.stderr[-400:], torch_dirs)))
    return checks


def main(argv):
    if len(argv) != 2 or not os.path.isfile(os.path.join(argv[0], "README.md")):
        print("watch_test: usage: watch_test.py PROJECT_DIR WORK_DIR", file=sys.stderr)
        return 2
    project_dir, work = argv
    if not configured_copy(project_dir, work):
        return 1
    command = project.readme_command("watch", os.path.join(project_dir, "README.md")).strip()
    print("ran in %s: %s %s" % (work, command, OPTIONS))
    lab_cpp = os.path.join(work, "lab04_attention.cpp")
    lesson = open(lab_cpp).read()
    checks = []
    watches = []
    try:
        watch = Watch(work, command + " " + OPTIONS)
        watches.append(watch)
        first_out, first_err = watch.next_round()
        subprocess.run(["cmake", "--build", "build", "--target", "lab04_attention"], cwd=work, capture_output=True)
        expected = subprocess.run([os.path.join(work, "build", "lab04_attention")] + OPTIONS.split(),
                                  capture_output=True, text=True).stdout
        # Before it, standard output has the build's lines, from the README's `cmake --build`.
        checks.append(("its first run prints what build/lab04_attention %s prints, byte for byte" % OPTIONS,
                       first_out.endswith(expected) and expected.endswith(LAST_LINE),
                       "watch's run: %r...\nlab's run: %r..." % (first_out[-300:], expected[-300:])))
        checks.append(("then the checker's verdict on the lesson: every STEP right", ALL_RIGHT in first_err,
                       "stderr %r" % first_err[-600:]))

        save(lab_cpp, lesson.replace("Next: run several heads.", "Next: an edit shows."))
        out, err = watch.next_round()
        checks.append(("after a save it shows the new run, then how long the save took to show",
                       out.endswith("Next: an edit shows.\n") and "s from the save to the end of this run" in err,
                       "stdout ends %r; stderr %r" % (out[-80:], err)))

        save(lab_cpp, lesson.replace(*SOFTMAX))
        out, err = watch.next_round()
        verdict = [l for l in err.splitlines() if l.startswith("check: ")]
        checks.append(("a known mistake: the run first, then the first wrong STEP with what was printed and "
                       "expected, and the diagnosis last", out.endswith(LAST_LINE.replace("\n", "")) is False
                       and "STEP 3-5" in out and len(verdict) >= 3 and verdict[0] == "check: NOT OK  3,4,6,6"
                       and "STEP 5: weights:" in verdict[1] and "expected" in verdict[1]
                       and any(l.startswith("check: diagnosis: your line `torch::Tensor weights = torch::softmax(scores, /*dim=*/0);` "
                                      "makes each column sum to 1") for l in verdict)
                       and "s to the verdict" in err.splitlines()[-1], "stdout ends %r; stderr %r" % (out[-200:], err[-1500:])))
        # The program every other command runs is rebuilt from the save the watch ran, before the
        # watch waits for the next: an experiment after the verdict runs the dim-0 softmax too.
        program = subprocess.run([os.path.join(work, "build", "lab04_attention")] + OPTIONS.split(),
                                 capture_output=True, text=True)
        checks.append(("... and build/lab04_attention, run once the watch waits for the next save, prints what the "
                       "watch's run printed (the dim-0 weights), not the lesson's", program.stdout == out
                       and program.stdout != expected, "build/lab04_attention: %r...\nthe watch's run: %r..." % (
                           program.stdout[-300:], out[-300:])))
        its_command = next((l.split("command: ", 1)[1] for l in verdict if "command: " in l), "")
        checks.append(("... its command: line runs what the watch judged, as saved now: build/lab04_watch --once "
                       "--no-check with the case's options",
                       its_command.startswith(os.path.join(work, "build", "lab04_watch") + " --once --no-check --seed 3 "),
                       its_command))

        save(lab_cpp, lesson.replace(HABITS[0][1], HABITS[0][2], 1))
        out, err = watch.next_round()
        checks.append(("a compile error of a habit of Python's (dim=-1): the compiler's error, then the C++ way, and "
                       "the watch waits", "error:" in err and any(l.startswith(HINT) and HABITS[0][3] in l
                                                                   for l in err.splitlines()) and not out,
                       "stdout %r; stderr %r" % (out[-200:], err[-800:])))

        save(lab_cpp, lesson + "int broken = ;\n")
        out, err = watch.next_round()
        checks.append(("a compile error is shown as the compiler prints it, and the watch waits",
                       "error:" in err and "int broken = ;" in err and "does not compile" in err and not out
                       and watch.process.poll() is None, "stdout %r; stderr %r" % (out[-200:], err[-600:])))

        save(lab_cpp, lesson.replace("  // STEP 5:", "  std::abort();\n  // STEP 5:", 1))
        out, err = watch.next_round()
        crash_lines = [l for l in err.splitlines() if "crashed" in l and not l.startswith("check: ")]
        checks.append(("a crash of the lab is one line (what it printed before stays), and the watch goes on",
                       len(crash_lines) == 1 and "signal 6" in crash_lines[0] and "STEP 2:" in out
                       and watch.process.poll() is None, "stdout %r; stderr %r" % (out[-200:], err[-600:])))
        verdict = [l for l in err.splitlines() if l.startswith("check: ")]
        checks.append(("its verdict is one line: the case it crashed in", len(verdict) == 1
                       and verdict[0].startswith("check: NOT OK: in case 3,4,6,6 the lab crashed with SIGABRT"),
                       "stderr %r" % err[-600:]))

        hang = lesson.replace("  // STEP 5:", "  if (T == 5) for (volatile int i = 0;; i = 0) {}\n  // STEP 5:", 1)
        save(lab_cpp, hang)
        out, err = watch.next_round()
        verdict = [l for l in err.splitlines() if l.startswith("check: ")]
        checks.append(("a lab that hangs in one case: the run, then one line after the checker's time limit, "
                       "and the watch goes on", out.endswith(LAST_LINE) and len(verdict) == 1
                       and "did not finish within %g s" % cases.WATCH_TIMEOUT in verdict[0]
                       and "the other cases were not run" in verdict[0] and watch.process.poll() is None,
                       "stdout ends %r; stderr %r" % (out[-100:], err[-800:])))

        save(lab_cpp, hang + "// saved again\n")
        waiting = watch.verdict_waits_on_a_hang()  # its run has shown; a case of the verdict hangs
        saved = time.time()
        save(lab_cpp, lesson)
        out, err = watch.next_round()
        took = time.time() - saved
        # Waited out, the verdict would say the case did not finish; cancelled, it says nothing of
        # the old lab: the new lab's verdict is the only one. (Not a time: a rebuild's own time
        # varies more, on a loaded machine, than the limit it would wait out.)
        verdict = [l for l in err.splitlines() if l.startswith("check: ")]
        checks.append(("a save during a verdict cancels it: the next run and its verdict come without waiting "
                       "out the time limit", waiting and "did not finish" not in err and verdict == [ALL_RIGHT],
                       "%s; %.1f s after the save; stderr %r" % ("the verdict was waiting on the case that hangs"
                                                                  if waiting else "the verdict never waited on the "
                                                                  "case that hangs", took, err[-800:])))

        save(lab_cpp, lesson.replace("  // STEP 5:", "  if (T == 20) for (volatile int i = 0;; i = 0) {}\n  // STEP 5:", 1))
        time.sleep(2)  # its run hangs (the options above have 20 tokens)
        saved = time.time()
        save(lab_cpp, lesson)
        out, err = watch.next_round()
        checks.append(("a save during a run that hangs stops it, and the new lab is built and run at once",
                       out.endswith(expected) and "saved again during the run" in err and time.time() - saved < 30,
                       "stdout ends %r; stderr %r" % (out[-100:], err[-600:])))

        checks += starter_checks(work, lab_cpp, watch, project.readme_command(
            "rebuild-run", os.path.join(project_dir, "README.md")).strip())

        save(lab_cpp, lesson)
        out, err = watch.next_round()
        checks.append(("the lesson put back prints the lesson's run again, byte for byte, and its verdict is "
                       "all right", out == expected and ALL_RIGHT in err, "%r...; stderr %r" % (out[-300:], err[-300:])))

        os.killpg(watch.session, signal.SIGINT)  # what Ctrl-C does: the terminal's whole group
        ok, got = watch.ended_clean()
        checks.append(("Ctrl-C ends it and leaves no process", ok, got))

        watch = Watch(work, command)
        watches.append(watch)
        watch.next_round()
        save(lab_cpp, lesson + "// a save\n")
        time.sleep(0.3)  # the build is under way
        pid = watch.pid_of_watch()
        if pid:
            os.kill(pid, signal.SIGTERM)
        ok, got = watch.ended_clean()
        checks.append(("SIGTERM during a build ends it and leaves no process (cmake, ninja, the compiler)",
                       pid is not None and ok, got))

        watch = Watch(work, command)
        watches.append(watch)
        watch.next_round()
        save(lab_cpp, lesson.replace("  // STEP 5:", "  for (volatile int i = 0;; i = 0) {}\n  // STEP 5:", 1))
        lasting(lambda: watch.watch_processes()[1:], WAIT)  # the watch, then its run
        pid = watch.pid_of_watch()
        if pid:
            os.kill(pid, signal.SIGTERM)
        ok, got = watch.ended_clean()
        checks.append(("SIGTERM during a run that hangs ends it and leaves no process", pid is not None and ok, got))

        save(lab_cpp, lesson)
        checks += once_checks(work, project.readme_command("rebuild-run", os.path.join(project_dir, "README.md")).strip())
        checks += served_checks(work, project.readme_command("rebuild-run", os.path.join(project_dir, "README.md")).strip())
        checks += command_line_checks(work, project.readme_command("rebuild-run", os.path.join(project_dir, "README.md")).strip(),
                                      lab_cpp, lesson)
        checks += first_hour_checks(work, project.readme_command("rebuild-run", os.path.join(project_dir, "README.md")).strip(),
                                    project.readme_command("test", os.path.join(project_dir, "README.md")).strip(),
                                    lab_cpp, lesson)
        try:
            bad = subprocess.run([os.path.join(work, "build", "lab04_watch"), "--tokens", "0"], cwd=work,
                                 capture_output=True, text=True, timeout=30)
            ok, got = (bad.returncode == 2 and not bad.stdout and len(bad.stderr.splitlines()) == 1,
                       "exit %d, stdout %r, stderr %r" % (bad.returncode, bad.stdout[:200], bad.stderr[-400:]))
        except subprocess.TimeoutExpired:
            ok, got = False, "still running after 30 s (it went on watching)"
        checks.append(("bad options: exit 2, nothing on standard output, one line on standard error", ok, got))
        checks += verdict_off_checks(work, project.readme_command("rebuild-run", os.path.join(project_dir, "README.md")).strip())
    finally:
        for watch in watches:
            watch.kill()
        subprocess.run([os.path.join(work, "build", "lab04_watch"), "--stop"], capture_output=True, timeout=60)
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
