#!/usr/bin/env python3
"""slurm_cluster.py: a Slurm cluster of one node, this machine, made from Debian's packages
(munge, slurmctld, slurmd, slurm-client) in a folder of its own, for the tests and CI to grade
a class on a real Slurm; then stopped, leaving no daemon.

usage: slurm_cluster.py start FOLDER   (as root; prints the slurm.conf to export as SLURM_CONF)
       slurm_cluster.py stop FOLDER
       slurm_cluster.py why-not           (why this machine cannot be a node: one line, exit 1; else exit 0)
Start writes FOLDER/slurm.conf (free ports of this machine, the node's CPUs and memory as they
are, partition "lab" with MaxTime 60 minutes), a new munge key, then starts munged, slurmctld
and slurmd with their sockets, state, logs and process ids all in FOLDER, and waits until the
node answers idle. Processes are tracked and signalled without cgroups (proctrack/linuxproc),
so that it runs in a container. slurmd still reads the node's /sys (its CPUs, its cgroup
hierarchies), which a chroot made without /sys lacks: why-not says so, and the tests and CI
skip the cluster there (a real node always has /sys). Exit 2 with one line when it cannot start.
"""
import os
import signal
import socket
import subprocess
import sys
import time

DAEMONS = ("slurmd", "slurmctld", "munged")  # stopped in this order


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(folder, host):
    cpus = os.cpu_count() or 1
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20) - 512
    p = lambda name: os.path.join(folder, name)  # noqa: E731
    return "\n".join([
        "ClusterName=lab04",
        "SlurmctldHost=%s(127.0.0.1)" % host,
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", "AuthInfo=socket=%s" % p("munge.socket"),
        "SlurmctldPort=%d" % free_port(), "SlurmdPort=%d" % free_port(),
        "StateSaveLocation=%s" % p("state"), "SlurmdSpoolDir=%s" % p("spool"),
        "SlurmctldPidFile=%s" % p("slurmctld.pid"), "SlurmdPidFile=%s" % p("slurmd.pid"),
        "SlurmctldLogFile=%s" % p("slurmctld.log"), "SlurmdLogFile=%s" % p("slurmd.log"),
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
        "ReturnToService=2", "MpiDefault=none",
        "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=%d State=UNKNOWN" % (host, cpus, max(memory, 256)),
        "PartitionName=lab Nodes=ALL Default=YES MaxTime=60 State=UP", ""])


def why_not():
    """Why slurmd cannot start on this machine (None when it can): it needs /sys/fs/cgroup."""
    if not os.path.ismount("/sys/fs/cgroup"):
        return "slurmd needs the node's cgroups and /sys/fs/cgroup is not mounted here (a chroot without /sys?)"
    return None


def start(folder):
    if os.geteuid() != 0:
        raise SystemExit("slurm_cluster: start runs as root (its daemons run as root here)")
    for program in ("munged", "slurmctld", "slurmd", "sinfo"):
        if not any(os.access(os.path.join(d, program), os.X_OK) for d in os.environ.get("PATH", "").split(":") + [
                "/usr/sbin", "/sbin"]):
            raise SystemExit("slurm_cluster: no %s: install Debian's munge, slurmctld, slurmd and slurm-client" % program)
    folder = os.path.abspath(folder)
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    os.chmod(folder, 0o755)
    host = socket.gethostname().split(".")[0]
    conf = os.path.join(folder, "slurm.conf")
    with open(conf, "w") as f:
        f.write(config(folder, host))
    key = os.path.join(folder, "munge.key")
    if not os.path.exists(key):
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    env = dict(os.environ, SLURM_CONF=conf, PATH=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    p = lambda name: os.path.join(folder, name)  # noqa: E731
    for words in (["munged", "--key-file=" + key, "--socket=" + p("munge.socket"), "--pid-file=" + p("munged.pid"),
                   "--log-file=" + p("munged.log"), "--seed-file=" + p("munge.seed"), "--force"],
                  ["slurmctld", "-i"], ["slurmd"]):
        done = subprocess.run(words, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            stop(folder)
            raise SystemExit("slurm_cluster: %s did not start: %s" % (
                words[0], (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "--noheader", "--format=%t"], env=env, capture_output=True, text=True)
        if state.returncode == 0 and state.stdout.strip() == "idle":
            print(conf)
            return 0
        time.sleep(0.5)
    stop(folder)
    raise SystemExit("slurm_cluster: the node did not become idle within 60 s (see %s/slurmd.log)" % folder)


def stop(folder):
    for daemon in DAEMONS:
        try:
            with open(os.path.join(folder, daemon + ".pid")) as f:
                pid = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return 0


def main(argv):
    if argv == ["why-not"]:
        why = why_not()
        if why:
            print(why)
        return 1 if why else 0
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("slurm_cluster: usage: slurm_cluster.py start|stop FOLDER or slurm_cluster.py why-not", file=sys.stderr)
        return 2
    try:
        return start(argv[1]) if argv[0] == "start" else stop(argv[1])
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
