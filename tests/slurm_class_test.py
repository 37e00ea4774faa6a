#!/usr/bin/env python3
"""A class graded on a real Slurm cluster (grader/grade_on_slurm.py) is the class one machine
grades: on a one-node cluster started from Debian's packages (slurm_cluster.py), the class in
two array tasks and a merge that waits for them gives the same grades.csv, summary and
feedback as grade_class.py on one machine; a task killed while the class is graded leaves no
GRADES and one line naming the missing shard and its log, and --rerun grades that shard alone
and merges it to the same folder; Slurm refusing an option, a job that can never start, no
controller answering and no Slurm at all are one line each, exit 2, nothing written.

usage: slurm_class_test.py BUILD WORK_DIR
  BUILD     the project's build folder (its run engine built or buildable)
  WORK_DIR  a folder to make the cluster and the class in (emptied first)
Needs root (the cluster's daemons); prints SKIPPED with the reason elsewhere. Runs in a PID
namespace of its own, so that no daemon or job outlives it.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import checklist
import project
import slurm_cluster

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")
ON_SLURM = os.path.join(project.ROOT, "grader", "grade_on_slurm.py")
CLUSTER = os.path.join(project.ROOT, "tests", "slurm_cluster.py")
MAKE_CLASS = os.path.join(project.ROOT, "tests", "make_class.py")
DRAW = "20261204"


def in_pid_namespace(argv):
    """Runs this test again inside a PID namespace of its own: its exit status; None when it is
    there already; "none" where no PID namespace can be made (a chroot whose / is no mount
    point makes one only with its mounts' propagation unchanged)."""
    if os.environ.get("LAB04_SLURM_NAMESPACE") == "1":
        return None
    env = dict(os.environ, LAB04_SLURM_NAMESPACE="1")
    for propagation in ("private", "unchanged"):
        isolate = ["unshare", "--pid", "--fork", "--mount-proc", "--propagation", propagation]
        if subprocess.run(isolate + ["true"], capture_output=True).returncode == 0:
            return subprocess.run(isolate + [sys.executable, os.path.abspath(__file__)] + argv, env=env).returncode
    return "none"


def run(words, env=None):
    started = time.monotonic()
    done = subprocess.run([sys.executable] + words, capture_output=True, text=True, env=env)
    return done, time.monotonic() - started


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_line_refusal(done, status=2):
    return (done.returncode == status and not done.stdout and len(done.stderr.strip().splitlines()) == 1
            and "Traceback" not in done.stderr)


def job_of(grades):
    with open(grades + ".slurm/job.json") as f:
        return json.load(f)


def squeue(env, job):
    done = subprocess.run(["squeue", "--noheader", "--array", "--format=%i %T", "--jobs=" + job], env=env,
                          capture_output=True, text=True)
    return dict(x.split() for x in done.stdout.splitlines() if len(x.split()) == 2)


def main(argv):
    if len(argv) != 2:
        print("slurm_class_test: usage: slurm_class_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("SKIPPED: a Slurm cluster's daemons start as root; this test runs as uid %d" % os.geteuid())
        return 0
    if not shutil.which("slurmctld", path=os.environ.get("PATH", "") + ":/usr/sbin"):
        print("SKIPPED: no slurmctld: install Debian's slurmctld, slurmd, slurm-client and munge (the README's "
              "install line for instructors names them)")
        return 0
    why = slurm_cluster.why_not()
    if why:
        print("SKIPPED: " + why)
        return 0
    again = in_pid_namespace(argv)
    if again == "none":
        print("SKIPPED: no PID namespace can be made here, and the cluster's daemons and jobs must not outlive the test")
        return 0
    if again is not None:
        return again
    build, work = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    cluster = os.path.join(work, "cluster")
    started = subprocess.run([sys.executable, CLUSTER, "start", cluster], capture_output=True, text=True)
    if started.returncode != 0:
        print("NOT OK  the one-node cluster starts\n        got: " + started.stderr.strip())
        return 1
    env = dict(os.environ, SLURM_CONF=started.stdout.strip())
    try:
        return checks(build, work, env)
    finally:
        subprocess.run([sys.executable, CLUSTER, "stop", cluster])


def checks(build, work, env):
    checks = []
    the_class = os.path.join(work, "class")
    subprocess.run([sys.executable, MAKE_CLASS, "canvas", the_class], check=True)
    common = ["--draw", DRAW, "--build", build, "--timeout", "5"]

    one = os.path.join(work, "one-machine")
    done, one_time = run([GRADE_CLASS, "-j", "2"] + common + [the_class, one], env)
    checks.append(("one machine grades the class", done.returncode == 0, done.stderr[-1500:]))
    if done.returncode != 0:
        return checklist.report(checks)

    slurm = os.path.join(work, "on-slurm")
    done, slurm_time = run([ON_SLURM, "--tasks", "2", "--sbatch=--cpus-per-task=1"] + common + [the_class, slurm], env)
    checks.append(("two array tasks and a merge grade the class: exit 0, the summary printed",
                   done.returncode == 0 and done.stdout.startswith("# Lab 04"), done.stderr[-1500:]))
    if done.returncode == 0:
        checks.append(("the class on Slurm is the class on one machine: grades.csv, summary.md, every feedback file",
                       not checklist.differing_files(one, slurm), checklist.differing_files(one, slurm)))
        checks.append(("what Slurm needed (GRADES.slurm) is gone once merged", not os.path.exists(slurm + ".slurm"),
                       os.listdir(work)))
    print("one machine: %.1f s; on Slurm, 2 tasks and the merge: %.1f s" % (one_time, slurm_time))

    # A task killed while the class is graded: no GRADES, the shard named with its log; --rerun.
    # The kill races the task (it grades two labs in a few seconds): a kill that lands once the
    # shard is whole (its folder there, or the class merged) tests nothing, so the class is
    # submitted again, 3 times at most.
    submitted = killed_in_time = None
    for attempt in range(1, 4):
        killed = os.path.join(work, "killed-%d" % attempt)
        submitted, _ = run([ON_SLURM, "--tasks", "2", "--no-wait"] + common + [the_class, killed], env)
        if submitted.returncode != 0:
            break
        array = job_of(killed)["jobs"]["array"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and squeue(env, array).get(array + "_2") != "RUNNING":
            time.sleep(0.1)
        subprocess.run(["scancel", "--signal=KILL", array + "_2"], env=env)
        done, _ = run([ON_SLURM, "--wait", killed], env)
        if not os.path.isdir(os.path.join(killed + ".slurm", "shard-2")) and done.returncode != 0:
            killed_in_time = done
            break
        print("try %d: the kill came once shard 2 was whole; the class is submitted again" % attempt)
    checks.append(("--no-wait submits and returns", submitted.returncode == 0, submitted.stderr))
    if submitted.returncode == 0:
        checks.append(("a task is killed before its shard is whole (in 3 tries)", killed_in_time is not None,
                       "each kill came once shard 2 had written its folder"))
    if killed_in_time is not None:
        done = killed_in_time
        log = os.path.join(killed + ".slurm", "logs", "shard-2.log")
        checks.append(("a killed task: exit 1, one line names shard 2/2 and its log, and how to rerun",
                       done.returncode == 1 and "shard 2/2 did not finish" in done.stderr and log in done.stderr
                       and "--rerun" in done.stderr and "shard 1/2" not in done.stderr, done.stderr))
        checks.append(("a killed task: nothing written in GRADES", not os.path.exists(killed), os.listdir(work)))
        done, _ = run([ON_SLURM, "--rerun", killed, "--no-wait"], env)
        checks.append(("--rerun submits shard 2 alone, and the merge", done.returncode == 0 and re.search(
            r"shard 2 submitted again as job \d+, the merge as job \d+", done.stderr), done.stderr))
        done, _ = run([ON_SLURM, "--wait", killed], env)
        checks.append(("then --wait: merged, exit 0, the summary printed",
                       done.returncode == 0 and done.stdout.startswith("# Lab 04"), done.stderr[-1500:]))
        if done.returncode == 0:
            checks.append(("the rerun class is the class on one machine", not checklist.differing_files(one, killed),
                           checklist.differing_files(one, killed)))

    # Bad input: one line, exit 2, nothing written, no job left.
    cases = [("sbatch refuses an option", ["--sbatch=--constraint=no_such_feature"], env, "Slurm refused"),
             ("a job that can never start (a time over the partition's limit)", ["--time=2:00:00"], env,
              "can never start"),
             ("an option that is not grade_class.py's", ["--frobnicate"], env, "unknown option"),
             ("--shard, which is the command's own", ["--shard", "1/2"], env, "--shard"),
             ("no Slurm on PATH", [], dict(env, PATH="/nonexistent"), "no Slurm here")]
    dead = os.path.join(work, "dead.conf")
    with open(env["SLURM_CONF"]) as f, open(dead, "w") as g:
        g.write(re.sub(r"SlurmctldPort=\d+", "SlurmctldPort=%d" % free_port(), f.read()))
    cases.append(("no controller answering", [], dict(env, SLURM_CONF=dead), "Slurm"))
    for n, (what, options, with_env, said) in enumerate(cases):
        grades = os.path.join(work, "bad%d" % n)
        done, seconds = run([ON_SLURM] + options + common + [the_class, grades], with_env)
        left = [p for p in (grades, grades + ".slurm") if os.path.lexists(p)]
        checks.append(("%s: one line with what is wrong, exit 2, nothing written (%.1f s)" % (what, seconds),
                       one_line_refusal(done) and said in done.stderr and not left,
                       "exit %d, stdout %r, stderr %r, left %s" % (done.returncode, done.stdout[:200],
                                                                   done.stderr[-600:], left)))
    done, _ = run([ON_SLURM, "--wait", os.path.join(work, "never-submitted")], env)
    checks.append(("--wait on a class never submitted: one line, exit 2", one_line_refusal(done), done.stderr))
    queue = subprocess.run(["squeue", "--noheader"], env=env, capture_output=True, text=True).stdout
    checks.append(("no job of the class is left in the queue", not queue.strip(), queue))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
