#!/usr/bin/env python3
"""PrairieLearn's external grader, run as PrairieLearn runs it: make_starter.py --prairielearn
writes the question and the image; the image's Dockerfile is run step by step on this Debian
machine, without Docker (its steps are plain: COPY, RUN, ENV, WORKDIR), into a folder that
stands for the image's root; then each submission is graded by the question's entrypoint with
/grade laid out as PrairieLearn lays it out (tests/, student/, data/data.json,
serverFilesCourse/), in a job limited as PrairieLearn limits one (2 GiB of memory, 0.9 of a CPU,
1024 processes, no network, the timeout of info.json), and its results.json is judged by
PrairieLearn's own rules (prairielearn_rules.py). The lesson scores 1; a lab with one mistake
scores what check_lab.py --grade gives it; no lab, another name, an empty file or two labs are
"gradable": false; a lab that does not compile scores 0 with the compiler's message; a lab
whose output is not UTF-8 and holds escape sequences still gives a valid file; a grader fault
writes no results.json and the job fails.

usage: prairielearn_test.py WORK_DIR
Needs root (the image's steps install packages and the job's limits are cgroups); prints
SKIPPED with the reason elsewhere. Each job has a network namespace of its own, as a container
has, where the sandbox's user-id lock (an abstract socket, sandbox_users.UidLock) is not
shared: no other grader of this machine may run meanwhile (ctest's RESOURCE_LOCK
sandbox_user_ids), or the two may take one user id and stop each other's labs.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import checklist
import make_class
import prairielearn_rules
import project

MAKE_STARTER = os.path.join(project.ROOT, "instructor", "make_starter.py")
CHECK_LAB = os.path.join(project.CHECKER, "check_lab.py")
PEAKS = {}  # job: (its peak memory in bytes or None, OOM kills in its cgroup)
MEMORY, CPU_QUOTA, CPU_PERIOD, PIDS = 2 << 30, 90000, 100000, 1024  # PrairieLearn's grader host's defaults


def run_dockerfile(context, root, log):
    """Runs the Dockerfile of context step by step, with root standing for the image's /: a
    step that is not plain fails. Returns None, or what failed."""
    env, workdir = dict(os.environ), root
    os.makedirs(root, exist_ok=True)
    lines = open(os.path.join(context, "Dockerfile")).read().splitlines()
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word == "FROM":
            if not rest.startswith("debian:"):
                return "FROM %s is not Debian's image" % rest
        elif word == "ENV":
            key, _, value = rest.partition("=")
            env[key] = value
        elif word == "WORKDIR":
            workdir = os.path.join(root, rest.lstrip("/"))
            os.makedirs(workdir, exist_ok=True)
        elif word == "COPY":
            source, dest = shlex.split(rest)
            shutil.copytree(os.path.join(context, source), os.path.join(root, dest.lstrip("/")), symlinks=True)
        elif word == "RUN":
            started = time.monotonic()
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", rest], cwd=workdir, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            print("RUN %s: exit %d in %.0f s" % (rest[:70], done.returncode, time.monotonic() - started))
            if done.returncode != 0:
                return "RUN %s: exit %d (see %s)" % (rest[:80], done.returncode, log.name)
        else:
            return "%s is not one of the plain steps (FROM, ENV, WORKDIR, COPY, RUN)" % word
    return None


class Cgroup:
    """A job's cgroup with PrairieLearn's limits, on cgroup v2 or v1; unusable: why, in .missing."""

    def __init__(self, name):
        self.paths, self.missing = [], None
        try:
            if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
                path = "/sys/fs/cgroup/" + name
                os.mkdir(path)
                self.paths.append(path)
                for f, v in (("memory.max", MEMORY), ("memory.swap.max", 0), ("cpu.max", "%d %d" % (CPU_QUOTA, CPU_PERIOD)),
                             ("pids.max", PIDS)):
                    self._write(path, f, v)
            else:
                for controller, settings in (("memory", [("memory.limit_in_bytes", MEMORY)]),
                                             ("cpu", [("cpu.cfs_period_us", CPU_PERIOD), ("cpu.cfs_quota_us", CPU_QUOTA)]),
                                             ("pids", [("pids.max", PIDS)])):
                    if not os.path.isfile("/sys/fs/cgroup/%s/cgroup.procs" % controller):  # never a plain folder
                        raise OSError("no %s cgroup hierarchy is mounted" % controller)
                    path = "/sys/fs/cgroup/%s/%s" % (controller, name)
                    os.mkdir(path)
                    self.paths.append(path)
                    for f, v in settings:
                        self._write(path, f, v)
        except OSError as e:
            self.missing = "no cgroup for the job's limits here (%s)" % e
            self.close()

    @staticmethod
    def _write(path, name, value):
        with open(os.path.join(path, name), "w") as f:
            f.write(str(value))

    def enter_command(self):
        return "".join("echo $$ > %s/cgroup.procs; " % shlex.quote(p) for p in self.paths)

    def peak_memory(self):
        """The most memory the job's processes held at once (bytes), or None where not kept."""
        for p in self.paths:
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                try:
                    with open(os.path.join(p, name)) as f:
                        return int(f.read())
                except (OSError, ValueError):
                    pass
        return None

    def killed_for_memory(self):
        """How often the kernel's OOM killer acted in the job's cgroup (0 where not kept)."""
        for p in self.paths:
            for name, key in (("memory.oom_control", "oom_kill "), ("memory.events", "oom_kill ")):
                try:
                    with open(os.path.join(p, name)) as f:
                        for line in f:
                            if line.startswith(key):
                                return int(line.split()[1])
                except (OSError, ValueError):
                    pass
        return 0

    def close(self):
        for p in reversed(self.paths):
            for _ in range(50):
                try:
                    os.rmdir(p)
                    break
                except OSError:
                    time.sleep(0.1)
        self.paths = []


def lay_out(job, question, files):
    """/grade as PrairieLearn lays it out for a submission of files {name: bytes}."""
    for sub in ("tests", "student", "data", "serverFilesCourse"):
        os.makedirs(os.path.join(job, sub))
    shutil.copytree(os.path.join(question, "tests"), os.path.join(job, "tests"), dirs_exist_ok=True)
    for name, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(job, "student", name)), exist_ok=True)
        with open(os.path.join(job, "student", name), "wb") as f:
            f.write(data)
    data = {"params": {}, "correct_answers": {}, "submitted_answers": {"_files": [{"name": n} for n in files]},
            "format_errors": {}, "partial_scores": {}, "score": 0, "feedback": {}, "variant_seed": 1, "options": {},
            "raw_submitted_answers": {}, "gradable": True}
    with open(os.path.join(job, "data", "data.json"), "w") as f:
        json.dump(data, f)


def control_characters(value):
    """The control characters (but newline and tab) in the strings of a parsed JSON value."""
    if isinstance(value, str):
        return re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", value)
    if isinstance(value, dict):
        value = list(value.values())
    return [c for v in value for c in control_characters(v)] if isinstance(value, list) else []


def job_namespaces():
    """The unshare words for a job (PID, mount and network namespaces, as a container's) and
    whether its mounts are its own: a chroot whose / is no mount point makes them only with
    propagation unchanged. None where no such namespaces can be made."""
    for propagation in ("private", "unchanged"):
        words = ["unshare", "--pid", "--fork", "--mount-proc", "--net", "--propagation", propagation]
        if subprocess.run(words + ["true"], capture_output=True).returncode == 0:
            return words, propagation == "private"
    return None


def run_job(entrypoint, job, timeout, name, namespaces):
    """The entrypoint as PrairieLearn's grader host runs it: (exit status or "timed out",
    results.json's bytes or None, seconds, output, why it ran without limits or None)."""
    group = Cgroup("lab04-prairielearn-%d-%s" % (os.getpid(), name))
    unshare, private = namespaces
    # As in a container, /sys/fs/cgroup is read-only: the grader's own cgroups (one per worker,
    # at the hierarchy's top) cannot be made, so every process of the job stays in its limits.
    # Only where the job's mounts are its own: otherwise the host's would change too.
    read_only = ('for m in /sys/fs/cgroup /sys/fs/cgroup/*; do mountpoint -q "$m" && mount -o remount,bind,ro "$m"; '
                 'done; ') if private else ""
    words = unshare + ["sh", "-c", group.enter_command() + read_only + 'exec "$@"', "job", entrypoint]
    started = time.monotonic()
    proc = subprocess.Popen(words, env=dict(os.environ, PL_GRADE_ROOT=job), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        status = "timed out"
    seconds = time.monotonic() - started
    PEAKS[name] = (group.peak_memory(), group.killed_for_memory())
    group.close()
    results = None
    if status == 0:
        try:
            with open(os.path.join(job, "results", "results.json"), "rb") as f:
                results = f.read()
        except OSError:
            pass
    return status, results, seconds, out.decode("utf-8", "replace"), group.missing


def main(argv):
    if len(argv) != 1:
        print("prairielearn_test: usage: prairielearn_test.py WORK_DIR", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("SKIPPED: the image's steps install Debian's packages and a job's limits are cgroups: as root only")
        return 0
    namespaces = job_namespaces()
    if namespaces is None:
        print("SKIPPED: a job runs in PID, mount and network namespaces of its own, as in a container, and none "
              "can be made here")
        return 0
    work = os.path.abspath(argv[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    checks = []
    out = os.path.join(work, "prairielearn")
    done = subprocess.run([sys.executable, MAKE_STARTER, "--prairielearn", out], capture_output=True, text=True)
    checks.append(("make_starter.py --prairielearn writes the question and the image", done.returncode == 0, done.stderr))
    if done.returncode != 0:
        return checklist.report(checks)
    question = os.path.join(out, "question")
    with open(os.path.join(question, "info.json")) as f:
        info = json.load(f)
    options = info.get("externalGradingOptions", {})
    checks.append(("info.json: graded externally, with an image, an entrypoint and a timeout of at most 600 s",
                   info.get("gradingMethod") == "External" and options.get("image") and options.get("entrypoint")
                   and 0 < options.get("timeout", 0) <= 600, info))
    html = open(os.path.join(question, "question.html")).read()
    checks.append(("question.html: a file editor for lab04_attention.cpp and the external grader's results",
                   re.search(r'<pl-file-editor [^>]*file-name="lab04_attention.cpp"', html) is not None
                   and "<pl-external-grader-results>" in html, html[:300]))

    root = os.path.join(work, "image-root")
    with open(os.path.join(work, "image-build.log"), "w") as log:
        failed = run_dockerfile(os.path.join(out, "image"), root, log)
    checks.append(("the image's Dockerfile runs step by step on Debian without Docker", failed is None, failed))
    if failed:
        return checklist.report(checks)
    entrypoint = os.path.join(root, options["entrypoint"].lstrip("/"))
    timeout = options["timeout"]

    lesson = open(os.path.join(project.ROOT, "lab04_attention.cpp"), "rb").read()
    no_scale = make_class.lab_text("no_scale").encode()
    garbage = lesson.replace(b"int main(int argc, char** argv) try {",
                             b'int main(int argc, char** argv) try {\n  std::printf("\\xff\\xfe\\x1b]0;title\\x07\\x1b[2J\\xc3(\\n");')
    broken = lesson.replace(b"torch::softmax(scores, /*dim=*/-1)", b"torch::softmax(scores, /*dim=*/-1")
    quoting = lesson.replace(b"int main(int argc, char** argv) try {",
                             b"int main(int argc, char** argv) try {\n  int x = \x1b[31m \x1b]0;title\x07;")
    jobs = [("lesson", {"lab04_attention.cpp": lesson}, ("score", 1.0)),
            ("one mistake (no scale)", {"lab04_attention.cpp": no_scale}, ("score", 6 / 7)),
            ("a lab that computes nothing (q, k and v zeros, STEP 3 to 6 constants)",
             {"lab04_attention.cpp": make_class.lab_text("computes_nothing").encode()}, ("at most", 2 / 7)),
            ("no file", {}, ("not gradable", None)),
            ("another name", {"main.cpp": lesson}, ("not gradable", None)),
            ("a file of 0 bytes", {"lab04_attention.cpp": b""}, ("not gradable", None)),
            ("two labs", {"lab04_attention.cpp": lesson, "more/lab04_attention.cpp": no_scale}, ("not gradable", None)),
            ("the lab and other files", {"lab04_attention.cpp": lesson, "notes.txt": b"\xff\xfe", "x.h": b"int x;"},
             ("score", 1.0)),
            ("output not UTF-8, with escape sequences", {"lab04_attention.cpp": garbage}, ("valid", None)),
            ("a lab that does not compile", {"lab04_attention.cpp": broken}, ("score", 0.0)),
            ("a compile error quoting escape sequences", {"lab04_attention.cpp": quoting}, ("score", 0.0)),
            ("a file that is not UTF-8 text", {"lab04_attention.cpp": b"\xff\xfe" + lesson}, ("not gradable", None))]
    seconds = {}
    for n, (what, files, (expect, value)) in enumerate(jobs):
        job = os.path.join(work, "job%d" % n)
        lay_out(job, question, files)
        status, data, took, output, no_limits = run_job(entrypoint, job, timeout, str(n), namespaces)
        seconds[what] = took
        if no_limits:
            print("the job ran without PrairieLearn's limits: %s" % no_limits)
        found, results = prairielearn_rules.problems(data) if data is not None else (["no results.json"], None)
        ok = status == 0 and not found
        if ok and expect == "score":
            ok = results.get("gradable", True) and abs(results["score"] - value) < 1e-9 and len(results.get("tests", [])) == 7
        if ok and expect == "at most":  # the untouched starter's score, or less
            ok = results.get("gradable", True) and results["score"] <= value + 1e-9 and len(results.get("tests", [])) == 7
        if ok and "quoting" in what:  # shown as text: no control character reaches the panel
            # (the compiler may show the escape as <U+001B> itself; the grader shows one left raw as \x1b)
            ok = any(shown in results.get("output", "") for shown in ("\\x1b", "<U+001B>")) \
                and not control_characters(results)
        if ok and expect == "not gradable":
            ok = results.get("gradable") is False and bool(results.get("format_errors"))
        checks.append(("%s: exit 0 in %.1f s of the %d s timeout, a results.json PrairieLearn takes, %s" % (
            what, took, timeout, {"score": "score %.4g" % (value or 0), "at most": "a score of at most %.4g" % (value or 0), "not gradable": '"gradable": false with the reason',
                                  "valid": "whatever its score"}[expect]),
            ok, "exit %s, problems %s, results %s, output %s" % (status, found, json.dumps(results)[:800], output[-800:])))

    # Each job ends within info.json's timeout (above: one that did not has no results.json).
    # How far within is a speed, measured where speeds are (bench), not a bound a test holds: with
    # three suites sharing two cores the lesson's job took 42 s of 60, and failed a bound of half.
    print("jobs at 0.9 of a CPU, seconds (of the %d s timeout): " % timeout
          + ", ".join("%s %.1f" % kv for kv in seconds.items()))
    print("their peak memory, MiB (OOM kills): " + ", ".join(
        "%s %s (%d)" % (k, "?" if p is None else p >> 20, o) for k, (p, o) in sorted(PEAKS.items())))

    # A fault of the grader's own: no results.json, the job fails (not a score).
    runner = os.path.join(root, "opt", "lab04", "build", "lab04_runner")
    os.chmod(runner, 0o600)
    job = os.path.join(work, "job-fault")
    lay_out(job, question, {"lab04_attention.cpp": lesson})
    status, data, took, output, _ = run_job(entrypoint, job, timeout, "fault", namespaces)
    os.chmod(runner, 0o755)
    checks.append(("a grader fault: no results.json, exit other than 0 (the job fails, no score)",
                   status not in (0, "timed out") and data is None and not os.path.exists(
                       os.path.join(job, "results", "results.json")) and "NOT GRADED" in output, (status, output[-600:])))

    # The lab with one mistake, built in the image and graded by the checker: the same points.
    built = os.path.join(root, "opt", "lab04")
    with open(os.path.join(built, "lab04_attention.cpp"), "wb") as f:
        f.write(no_scale)
    made = subprocess.run(["cmake", "--build", "build", "--target", "lab04_attention"], cwd=built, capture_output=True,
                          text=True)
    graded = subprocess.run([sys.executable, os.path.join(built, "checker", "check_lab.py"), "--grade",
                             os.path.join(built, "build", "lab04_attention")], capture_output=True, text=True)
    score = re.search(r"^score: ([\d.]+)/([\d.]+)$", graded.stdout, re.M)
    checks.append(("the lab with one mistake scores in PrairieLearn what check_lab.py --grade gives it",
                   made.returncode == 0 and score is not None and abs(float(score.group(1)) / float(score.group(2))
                                                                      - 6 / 7) < 1e-9,
                   made.stdout[-400:] + graded.stdout[-800:]))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
