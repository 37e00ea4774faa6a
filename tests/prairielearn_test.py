#!/usr/bin/env python3
"""PrairieLearn's external grader, run as PrairieLearn runs it: make_starter.py --prairielearn
writes the question and the image; where a Docker daemon of the tests' own can start
(docker_host.py: Debian's docker.io, as root), the image's Dockerfile is built in real Docker
FROM a Debian made with debootstrap, and each job runs as PrairieLearn's grader host runs it
(docker run --network none --memory 2g --cpus 0.9, the job's folder as /grade, Docker's default
capabilities and seccomp profile: no new namespaces). Where none can start (a chroot without
/sys, Docker not installed), it says why and runs the emulation: the Dockerfile's plain steps
(COPY, RUN, ENV, WORKDIR) on this machine into a folder standing for the image's root, each job
in PID, mount and network namespaces of its own and a cgroup of the same limits.
/grade is laid out as PrairieLearn lays it out (tests/, student/, data/data.json,
serverFilesCourse/) and each results.json is judged by PrairieLearn's own rules
(prairielearn_rules.py). The lesson scores 1; a lab with one mistake scores what check_lab.py
--grade gives it; softmax over dimension 0 scores below 1; no lab, another name, an empty file
or two labs are "gradable": false; a lab that does not compile scores 0 with the compiler's
message; a lab whose output is not UTF-8 and holds escape sequences still gives a valid file;
five jobs at once all pass, and five lessons at once beside two busy compiles of the lab (a grading
host at work) each score 1; a lab that reads every file it can finds nothing of /grade's tests,
data or course files (and, unsandboxed, finds them); where nothing keeps /grade from the lab
the job fails unless info.json opts in; a grader fault writes no results.json and the job
fails. Each job's seconds are printed (speeds are bench's, not a bound here).

usage: prairielearn_test.py BUILD WORK_DIR
  BUILD: the project's build, whose compile of the lab keeps the machine busy beside five jobs
Needs root (Docker's daemon, the image's steps install packages, the job's limits are cgroups);
prints SKIPPED with the reason elsewhere. In the emulation each job alone has a network
namespace of its own, as a container has, where the sandbox's user-id lock (an abstract socket,
sandbox_users.UidLock) is not shared: its graders take user ids from this test's own range
(LAB_SANDBOX_UIDS, one per test, set by tests/CMakeLists.txt), which no other test's grader
shares, or the two might take one id and stop each other's labs; Docker's jobs take the
default range, which no test's grader takes.
"""
import concurrent.futures
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import allowlist_test
import checklist
import docker_host
import hostile_labs_test
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


def lay_out(job, question, files, correct_answers=None):
    """/grade as PrairieLearn lays it out for a submission of files {name: bytes}."""
    for sub in ("tests", "student", "data", "serverFilesCourse"):
        os.makedirs(os.path.join(job, sub))
    shutil.copytree(os.path.join(question, "tests"), os.path.join(job, "tests"), dirs_exist_ok=True)
    for name, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(job, "student", name)), exist_ok=True)
        with open(os.path.join(job, "student", name), "wb") as f:
            f.write(data)
    data = {"params": {}, "correct_answers": correct_answers or {}, "submitted_answers": {"_files": [{"name": n} for n in files]},
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


def run_job(entrypoint, job, timeout, name, namespaces, extra_env, together=False):
    """The entrypoint as PrairieLearn's grader host runs it: (exit status or "timed out",
    results.json's bytes or None, seconds, output, why it ran without limits or None).
    together: one of several jobs at once, which in containers would each have a /tmp of
    their own, and here share the machine's: each in this machine's network namespace, where
    the sandbox's user-id lock (an abstract socket) is one for all, so that no two take one id
    and remove each other's files."""
    group = Cgroup("lab04-prairielearn-%d-%s" % (os.getpid(), name))
    unshare, private = namespaces
    # As in a container, /sys/fs/cgroup is read-only: the grader's own cgroups (one per worker,
    # at the hierarchy's top) cannot be made, so every process of the job stays in its limits.
    # Only where the job's mounts are its own: otherwise the host's would change too.
    read_only = ('for m in /sys/fs/cgroup /sys/fs/cgroup/*; do mountpoint -q "$m" && mount -o remount,bind,ro "$m"; '
                 'done; ') if private else ""
    if together:  # jobs at once share this machine's /tmp: their graders must share the user-id lock
        unshare = [w for w in unshare if w != "--net"]
    words = unshare + ["sh", "-c", group.enter_command() + read_only + 'exec "$@"', "job", entrypoint]
    started = time.monotonic()
    proc = subprocess.Popen(words, env=dict(os.environ, PL_GRADE_ROOT=job, **extra_env), stdout=subprocess.PIPE,
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
    return status, results_of(job, status), seconds, out.decode("utf-8", "replace"), group.missing


def results_of(job, status):
    """The results.json a job that exited 0 left in its /grade, as bytes, or None."""
    try:
        with open(os.path.join(job, "results", "results.json"), "rb") as f:
            return f.read() if status == 0 else None
    except OSError:
        return None


class Emulation:
    """PrairieLearn's grader host, emulated where Docker cannot run: the Dockerfile's plain steps
    on this machine into a folder standing for the image's root, each job in PID, mount and
    network namespaces of its own (as a container's) and a cgroup of PrairieLearn's limits."""

    def __init__(self, why):
        self.name = "the emulation (Docker: %s)" % why
        self.namespaces = job_namespaces()
        self.root = None
        # A chroot whose / other users cannot enter (a fresh machine's): no user of the
        # sandbox's can run a lab there, nothing keeps /grade from it, and PrairieLearn's job
        # would fail; the jobs here are graded as info.json's opt-in grades them.
        self.closed = not os.stat("/").st_mode & 0o001
        self.env = {"LAB04_GRADE_UNISOLATED": "1"} if self.closed else {}
        if self.closed:
            print("/ is closed to other users here (mode %o): no lab can be isolated; the jobs are graded with "
                  "info.json's opt-in (LAB04_GRADE_UNISOLATED=1)" % (os.stat("/").st_mode & 0o777))

    def why_not(self):
        if self.namespaces is None:
            return "a job runs in PID, mount and network namespaces of its own, as in a container, and none can be made here"
        return None

    def build(self, context, work, log):
        self.root = os.path.join(work, "image-root")
        return run_dockerfile(context, self.root, log)

    def run(self, entrypoint, job, timeout, name, fault=False, env=None, user=None, together=False):
        """The job's (exit status or "timed out", results.json's bytes or None, seconds, output, why it ran
        without limits or None); fault: the grader's runner cannot run (a grader fault); user:
        a container's --user, which the emulation does not take (None)."""
        assert user is None
        runner = os.path.join(self.root, "opt", "lab04", "build", "lab04_runner")
        if fault:
            os.chmod(runner, 0o600)
        try:
            return run_job(os.path.join(self.root, entrypoint.lstrip("/")), job, timeout, name, self.namespaces,
                           dict(self.env, **(env or {})), together)
        finally:
            os.chmod(runner, 0o755)

    def check_lab(self, text):
        """check_lab.py --grade's report on a lab of text, built in the image's build."""
        built = os.path.join(self.root, "opt", "lab04")
        with open(os.path.join(built, "lab04_attention.cpp"), "wb") as f:
            f.write(text)
        made = subprocess.run(["cmake", "--build", "build", "--target", "lab04_attention"], cwd=built,
                              capture_output=True, text=True)
        graded = subprocess.run([sys.executable, os.path.join(built, "checker", "check_lab.py"), "--grade",
                                 os.path.join(built, "build", "lab04_attention")], capture_output=True, text=True)
        return made.stdout[-400:] + graded.stdout

    def close(self):
        pass


class RealDocker:
    """PrairieLearn's grader host for real: Debian's Docker (a daemon of the tests' own,
    docker_host.py), the question's Dockerfile built FROM a Debian made with debootstrap, each
    job run as the grader host runs it: docker run --network none --memory 2g --cpus 0.9 with
    the job's folder as /grade, the image's entrypoint, Docker's default capabilities and
    seccomp profile (no new namespaces in the container)."""

    IMAGE = "lab04-prairielearn-test:last"  # the last one kept: the next run reuses its layers

    def __init__(self, folder, env):
        self.folder, self.env = folder, env
        version = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], env=env,
                                 capture_output=True, text=True).stdout.strip()
        self.name = "real Docker (Debian's docker.io, daemon %s)" % version

    def build(self, context, work, log):  # (host_for_jobs() has made and run the base image)
        started = time.monotonic()
        done = subprocess.run(["docker", "build", "--network", "host", "-t", self.IMAGE, context], env=self.env,
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        print("docker build: exit %d in %.0f s" % (done.returncode, time.monotonic() - started))
        subprocess.run(["docker", "image", "prune", "-f"], env=self.env, capture_output=True)  # the run before's
        return None if done.returncode == 0 else "docker build: exit %d (see %s)" % (done.returncode, log.name)

    def run(self, entrypoint, job, timeout, name, fault=False, env=None, user=None, together=False):
        container = "lab04-prairielearn-%d-%s" % (os.getpid(), name)
        words = ["docker", "run", "--name", container, "--network", "none", "--memory", "2g", "--cpus", "0.9",
                 "--pids-limit", str(PIDS), "-v", job + ":/grade"] + (["--user", user] if user else [])
        if fault:  # the grader's runner is no program: a fault of the grader's own
            words += ["-v", "/dev/null:/opt/lab04/build/lab04_runner:ro"]
        for kv in (env or {}).items():
            words += ["-e", "%s=%s" % kv]
        # (no --rm: the container is inspected for its memory's kills, then removed)
        cidfile = os.path.join(tempfile.mkdtemp(prefix="lab04-cid-"), "cid")
        words += ["--cidfile", cidfile, self.IMAGE, entrypoint]
        started = time.monotonic()
        proc = subprocess.Popen(words, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        watch = MemoryWatch(cidfile, proc)
        try:
            out, _ = proc.communicate(timeout=timeout)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            subprocess.run(["docker", "kill", container], env=self.env, capture_output=True)
            out, _ = proc.communicate()
            status = "timed out"
        seconds = time.monotonic() - started
        watch.join()
        oom = subprocess.run(["docker", "inspect", "--format", "{{.State.OOMKilled}}", container], env=self.env,
                             capture_output=True, text=True).stdout.strip()
        PEAKS[name] = (watch.peak, max(watch.kills, 1 if oom == "true" else 0))
        subprocess.run(["docker", "rm", "-f", container], env=self.env, capture_output=True)
        shutil.rmtree(os.path.dirname(cidfile), ignore_errors=True)
        return status, results_of(job, status), seconds, out.decode("utf-8", "replace"), None

    def check_lab(self, text):
        lab = os.path.join(tempfile.mkdtemp(prefix="lab04-pl-lab-"), "lab04_attention.cpp")
        with open(lab, "wb") as f:
            f.write(text)
        done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", lab + ":/tmp/lab.cpp:ro",
                               "--entrypoint", "bash", self.IMAGE, "-c",
                               "cp /tmp/lab.cpp lab04_attention.cpp && cmake --build build --target lab04_attention "
                               ">/dev/null && python3 checker/check_lab.py --grade build/lab04_attention"],
                              env=self.env, capture_output=True, text=True)
        shutil.rmtree(os.path.dirname(lab), ignore_errors=True)
        return done.stdout + done.stderr[-400:]

    def close(self):
        docker_host.stop(self.folder)


class MemoryWatch(threading.Thread):
    """Reads a running container's memory cgroup (v1 or v2, Docker's cgroupfs or systemd
    driver) every 0.2 s: its peak (bytes, or None where not kept) and its OOM kills, which the
    container's end removes."""

    def __init__(self, cidfile, proc):
        threading.Thread.__init__(self, daemon=True)
        self.cidfile, self.proc, self.peak, self.kills = cidfile, proc, None, 0
        self.start()

    def folders(self):
        try:
            with open(self.cidfile) as f:
                cid = f.read().strip()
        except OSError:
            return []
        return [p for p in ("/sys/fs/cgroup/memory/docker/" + cid, "/sys/fs/cgroup/docker/" + cid,
                            "/sys/fs/cgroup/system.slice/docker-%s.scope" % cid) if cid and os.path.isdir(p)]

    def run(self):
        while self.proc.poll() is None:
            for folder in self.folders():
                for name in ("memory.max_usage_in_bytes", "memory.peak", "memory.current"):
                    try:
                        with open(os.path.join(folder, name)) as f:
                            self.peak = max(self.peak or 0, int(f.read()))
                    except (OSError, ValueError):
                        pass
                for name in ("memory.oom_control", "memory.events"):
                    try:
                        with open(os.path.join(folder, name)) as f:
                            for line in f:
                                if line.startswith("oom_kill "):
                                    self.kills = max(self.kills, int(line.split()[1]))
                    except (OSError, ValueError):
                        pass
            time.sleep(0.2)


def host_for_jobs():
    """Real Docker where a daemon of the tests' own can start here, else the emulation, with why."""
    why = docker_host.why_not()
    if why is None:
        try:
            folder, env = docker_host.start()
        except docker_host.NoDocker as e:
            folder, why = None, str(e)
        if folder:  # a daemon that starts may still run no container (no namespaces): tried first
            try:
                docker_host.base_image(env)
                return RealDocker(folder, env)
            except docker_host.NoDocker as e:
                docker_host.stop(folder)
                why = str(e)
    return Emulation(why)


class BusyCompiles:
    """Compiles of the lesson, as the build at build compiles it (compile_commands.json), n at a
    time, over and over while the context lasts: the other work of a busy grading host. compiles:
    how many ended, said: in words."""

    def __init__(self, build, n, work):
        self.stop, self.compiles, self.threads = threading.Event(), 0, []
        with open(os.path.join(build, "compile_commands.json")) as f:
            entry = next(e for e in json.load(f) if os.path.basename(e["file"]) == "lab04_attention.cpp")
        words = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        self.command, self.directory, self.n, self.work = words, entry["directory"], n, work

    def compile_again_and_again(self, k):
        words, skip = [], 0
        for w in self.command:  # less Ninja's depfile, and an object of its own
            if skip:
                skip -= 1
            elif w in ("-MT", "-MF"):
                skip = 1
            elif w not in ("-MD", "-MMD"):
                words.append(w)
        words[words.index("-o") + 1] = os.path.join(self.work, "busy%d.o" % k)
        while not self.stop.is_set():
            subprocess.run(words, cwd=self.directory, capture_output=True)
            self.compiles += 1

    def __enter__(self):
        self.threads = [threading.Thread(target=self.compile_again_and_again, args=(k,), daemon=True)
                        for k in range(self.n)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()
        self.said = "%d compiles of the lab at a time on this machine (%d done meanwhile)" % (self.n, self.compiles)


def judged(status, data, expect, value):
    """Whether a job's end is what was expected of it: (ok, its results as parsed, problems)."""
    found, results = prairielearn_rules.problems(data) if data is not None else (["no results.json"], None)
    ok = status == 0 and not found
    if ok and expect in ("score", "at most", "below"):
        score, steps = results["score"], len(results.get("tests", []))
        ok = results.get("gradable", True) and steps == 7 and {
            "score": abs(score - value) < 1e-9, "at most": score <= value + 1e-9, "below": score < value}[expect]
    if ok and expect == "not gradable":
        ok = results.get("gradable") is False and bool(results.get("format_errors"))
    return ok, results, found


EXPECTED = {"score": "score %.4g", "at most": "a score of at most %.4g", "below": "a score below %.4g",
            "not gradable": '"gradable": false with the reason', "valid": "whatever its score"}


def main(argv):
    if len(argv) != 2:
        print("prairielearn_test: usage: prairielearn_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("SKIPPED: the image's steps install Debian's packages and a job's limits are cgroups: as root only")
        return 0
    networks = set(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else set()
    host = host_for_jobs()
    why = host.why_not() if isinstance(host, Emulation) else None
    if why:
        print("SKIPPED: %s (%s)" % (why, host.name))
        return 0
    print("PrairieLearn's jobs run in %s" % host.name)
    own = docker_host.bridge_of(host.folder) if isinstance(host, RealDocker) else None
    try:
        failed = checks_in(host, os.path.abspath(argv[0]), os.path.abspath(argv[1]))
    finally:
        host.close()
    # The tests' daemon leaves the machine's networks as they were: dockerd with --bridge none
    # deleted docker0, the machine's own Docker's bridge. The bridges of other runs of this
    # test (chroots of one machine share its interfaces) come and go as those runs do.
    after = set(os.listdir("/sys/class/net")) if networks else set()
    lost = sorted(n for n in networks - after if not n.startswith(docker_host.BRIDGE_PREFIX))
    print("%s  the machine's network interfaces are all there once the tests' Docker daemon has stopped (docker0 "
          "among them, where the machine's own Docker made it)%s" % ("OK    " if not lost else "NOT OK", ": gone: %s" % lost
                                                                     if lost else ""))
    left = own in after
    if own:
        print("%s  the daemon's own bridge %s is removed at its stop" % ("NOT OK" if left else "OK    ", own))
    return failed or (1 if lost or left else 0)


def checks_in(host, build, work):
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

    with open(os.path.join(work, "image-build.log"), "w") as log:
        failed = host.build(os.path.join(out, "image"), work, log)
    checks.append(("the image's Dockerfile builds (%s)" % host.name, failed is None, failed))
    if failed:
        return checklist.report(checks)
    entrypoint, timeout = options["entrypoint"], options["timeout"]

    lesson = open(os.path.join(project.ROOT, "lab04_attention.cpp"), "rb").read()
    no_scale = make_class.lab_text("no_scale").encode()
    dim_0 = lesson.replace(b"torch::softmax(scores, /*dim=*/-1)", b"torch::softmax(scores, /*dim=*/0)")
    nothing = make_class.lab_text("computes_nothing").encode()
    garbage = lesson.replace(b"int main(int argc, char** argv) try {",
                             b'int main(int argc, char** argv) try {\n  std::printf("\\xff\\xfe\\x1b]0;title\\x07\\x1b[2J\\xc3(\\n");')
    broken = lesson.replace(b"torch::softmax(scores, /*dim=*/-1)", b"torch::softmax(scores, /*dim=*/-1")
    quoting = lesson.replace(b"int main(int argc, char** argv) try {",
                             b"int main(int argc, char** argv) try {\n  int x = \x1b[31m \x1b]0;title\x07;")
    jobs = [("lesson", {"lab04_attention.cpp": lesson}, ("score", 1.0)),
            ("one mistake (no scale)", {"lab04_attention.cpp": no_scale}, ("score", 6 / 7)),
            ("softmax over dimension 0", {"lab04_attention.cpp": dim_0}, ("below", 1.0)),
            ("a lab that computes nothing (q, k and v zeros, STEP 3 to 6 constants)",
             {"lab04_attention.cpp": nothing}, ("at most", 2 / 7)),
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
        status, data, took, output, no_limits = host.run(entrypoint, job, timeout, str(n))
        seconds[what] = took
        if no_limits:
            print("the job ran without PrairieLearn's limits: %s" % no_limits)
        ok, results, found = judged(status, data, expect, value)
        if ok and "quoting" in what:  # shown as text: no control character reaches the panel
            # (the compiler may show the escape as <U+001B> itself; the grader shows one left raw as \x1b)
            ok = any(shown in results.get("output", "") for shown in ("\\x1b", "<U+001B>")) \
                and not control_characters(results)
        checks.append(("%s: exit 0 in %.1f s of the %d s timeout, a results.json PrairieLearn takes, %s" % (
            what, took, timeout, EXPECTED[expect] % (value or 0) if "%" in EXPECTED[expect] else EXPECTED[expect]),
            ok, "exit %s, problems %s, results %s, output %s" % (status, found, json.dumps(results)[:800], output[-800:])))

    # Each job ends within info.json's timeout (above: one that did not has no results.json).
    # How far within is a speed, measured where speeds are (bench), not a bound a test holds: with
    # three suites sharing two cores the lesson's job took 42 s of 60, and failed a bound of half.
    print("jobs at 0.9 of a CPU, seconds (of the %d s timeout): " % timeout
          + ", ".join("%s %.1f" % kv for kv in seconds.items()))

    # Five at once on this machine, as a grader host runs several: none fails (the user ids, the
    # ACLs, the grader's files of one job never meet another's). Each may take up to five times
    # the timeout: here the suite shares the cores with other tests, and five jobs of 0.9 CPU
    # share two; their times against the timeout itself are bench/prairielearn.py's.
    together = [jobs[0], jobs[1], jobs[2], jobs[3], jobs[0]]

    def one_of_five(n, name="together"):
        what, files, (expect, value) = together[n]
        job = os.path.join(work, "%s%d" % (name, n))
        lay_out(job, question, files)
        status, data, took, output, _ = host.run(entrypoint, job, 5 * timeout, "%s%d" % (name, n), together=True)
        ok, results, found = judged(status, data, expect, value)
        return ok, "%s: exit %s in %.1f s, %s, problems %s, output %s" % (
            what, status, took, (results or {}).get("score"), found, output[-300:])
    with concurrent.futures.ThreadPoolExecutor(len(together)) as pool:
        ends = list(pool.map(one_of_five, range(len(together))))
    checks.append(("five jobs at once (the lesson twice, no scale, softmax over dimension 0, a lab that computes "
                   "nothing): each exits 0 with the results.json it should have",
                   all(ok for ok, _ in ends), [said for _, said in ends]))
    print("five at once: " + "; ".join(said.split(", problems")[0] for _, said in ends))
    print("their peak memory, MiB (OOM kills): " + ", ".join(
        "%s %s (%d)" % (k, "?" if p is None else p >> 20, o) for k, (p, o) in sorted(PEAKS.items())))
    checks.append(("no job was killed for its memory (2 GiB)", not any(o for _, o in PEAKS.values()), PEAKS))

    # Five lessons at once while the machine is busy with two other compiles of the lab (a grading
    # host's other work): each job still writes its results.json, the lesson 1 in each.
    together = [jobs[0]] * 5
    with BusyCompiles(build, 2, work) as busy:
        with concurrent.futures.ThreadPoolExecutor(len(together)) as pool:
            ends = list(pool.map(lambda n: one_of_five(n, "busy"), range(len(together))))
    checks.append(("five lessons at once beside %s: each exits 0 with a results.json that gives 1" % busy.said,
                   busy.compiles and all(ok for ok, _ in ends), [busy.said] + [said for _, said in ends]))
    print("five lessons at once beside %s: " % busy.said + "; ".join(said.split(", problems")[0] for _, said in ends))

    checks += reading_lab(host, entrypoint, work, question, timeout, lesson)

    # A fault of the grader's own: no results.json, the job fails (not a score).
    job = os.path.join(work, "job-fault")
    lay_out(job, question, {"lab04_attention.cpp": lesson})
    status, data, took, output, _ = host.run(entrypoint, job, timeout, "fault", fault=True)
    checks.append(("a grader fault: no results.json, exit other than 0 (the job fails, no score)",
                   status not in (0, "timed out") and data is None and not os.path.exists(
                       os.path.join(job, "results", "results.json")) and "NOT GRADED" in output, (status, output[-600:])))

    # The lab with one mistake, built in the image and graded by the checker: the same points.
    graded = host.check_lab(no_scale)
    score = re.search(r"^score: ([\d.]+)/([\d.]+)$", graded, re.M)
    checks.append(("the lab with one mistake scores in PrairieLearn what check_lab.py --grade gives it",
                   score is not None and abs(float(score.group(1)) / float(score.group(2)) - 6 / 7) < 1e-9,
                   graded[-1200:]))
    return checklist.report(checks)


def reading_lab(host, entrypoint, work, question, timeout, lesson):
    """A lab that walks the file system and reads every file it can (allowlist_test's walker),
    with a marker in the course's hidden tests, in data.json's correct answers and in the
    course's files: none in its results; with the sandbox off (LAB_SANDBOX=none) the same lab
    finds them, so that the check can fail."""
    token = secrets.token_hex(6)
    lab = ("#include <iterator>\n" + allowlist_test.WALKER + hostile_labs_test.honest(lesson.decode())).encode()
    checks, said = [], {}
    # The jobs' folders near the top, as /grade is (the walk, breadth first, stops after 5 s).
    near_top = tempfile.mkdtemp(prefix="lab04-prairielearn-", dir="/srv" if os.path.isdir("/srv") else None)
    try:
        checks = reading_jobs(host, entrypoint, near_top, question, timeout, lab, token, said)
    finally:
        shutil.rmtree(near_top, ignore_errors=True)
    return checks


def reading_jobs(host, entrypoint, work, question, timeout, lab, token, said):
    checks = []
    for how, env in (("sandboxed", {}), ("without a sandbox", {"LAB_SANDBOX": "none", "LAB04_GRADE_UNISOLATED": "1"})):
        job = os.path.join(work, "job-reading-" + how.split()[0])
        lay_out(job, question, {"lab04_attention.cpp": lab}, {"secret": "LAB04-MARKER-DATA-" + token})
        with open(os.path.join(job, "tests", "hidden_cases.txt"), "w") as f:
            f.write("LAB04-MARKER-TESTS-%s\n" % token)
        with open(os.path.join(job, "serverFilesCourse", "notes.txt"), "w") as f:
            f.write("LAB04-MARKER-COURSE-%s\n" % token)
        # (its walk takes 5 s in each case it is run on: up to five times the timeout)
        status, data, took, output, _ = host.run(entrypoint, job, 5 * timeout, "reading-" + how.split()[0], env=env)
        seen = (data or b"").decode("utf-8", "replace")
        said[how] = (status, allowlist_test.walked(seen), allowlist_test.markers_in(seen, token), seen)
        print("the reading lab, %s: exit %s, read %s files, found %s" % (how, status, said[how][1],
                                                                          said[how][2] or "nothing"))
    shown = {how: (status, count, found, seen[-1500:]) for how, (status, count, found, seen) in said.items()}
    status, count, found, seen = said["sandboxed"]
    if getattr(host, "closed", False):
        print("SKIPPED (one check): a lab that reads what it can finds /grade here, where no lab can be isolated")
    else:
        checks.append(("a lab that reads every file it can finds nothing of /grade/tests, /grade/data or the course's "
                       "files, and its results say it ran", status == 0 and bool(count) and not found,
                       shown["sandboxed"]))
    checks.append(("... and without the sandbox (LAB_SANDBOX=none, info.json's opt-in) the same lab finds them (the "
                   "check can fail), and its results say it was not isolated",
                   {"TESTS", "DATA"} <= set(said["without a sandbox"][2]) and "not isolated" in said["without a sandbox"][3].lower(),
                   shown["without a sandbox"]))
    # Where nothing keeps /grade from the lab, and info.json does not opt in: the job fails.
    ways = [("LAB_SANDBOX=none", {"LAB_SANDBOX": "none", "LAB04_GRADE_UNISOLATED": ""}, None)]
    if isinstance(host, RealDocker):
        ways.append(("a container run as a user (--user 65534), not root", {}, "65534:65534"))
    for how, env, user in ways:
        job = os.path.join(work, "job-unisolated-%d" % len(checks))
        lay_out(job, question, {"lab04_attention.cpp": lab}, {"secret": "LAB04-MARKER-DATA-" + token})
        for top, dirs, files in os.walk(job):  # (a user's job must write /grade/results)
            os.chmod(top, 0o777)
        status, data, took, output, _ = host.run(entrypoint, job, timeout, "unisolated-%d" % len(checks), env=env,
                                                 user=user)
        checks.append(("nothing keeps /grade from the lab (%s) and info.json does not opt in: the job fails, no "
                       "results.json, and says why" % how,
                       status not in (0, "timed out") and data is None and not os.path.exists(
                           os.path.join(job, "results", "results.json")) and "nothing here keeps" in output
                       and "walked:" not in output, (status, output[-800:])))
    return checks


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
