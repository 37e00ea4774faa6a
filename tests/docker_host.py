#!/usr/bin/env python3
"""docker_host.py: a Docker daemon of the tests' own, from Debian's docker.io, for running
PrairieLearn's grader image as PrairieLearn's grader host runs it; then stopped, leaving no
daemon and no rule in the machine's firewall.

usage: docker_host.py why-not        (why no Docker daemon can start here: one line, exit 1; else exit 0)
       docker_host.py why-not-machine  (the same, of the machine alone: before Docker is installed)
       docker_host.py start          (as root; prints the DOCKER_HOST to export, and the folder to stop)
       docker_host.py stop FOLDER
The daemon keeps its images in a cache (LAB04_DOCKER_CACHE, by default
/var/cache/lab04-tests/docker), so that the next run reuses the base image and the layers of
the packages; its socket, state and log are in a new folder of /tmp (a socket's path must be
short). Its default network is a bridge of its own (lab04br and the process id of its start,
made here and removed at its stop: with --bridge none, dockerd deletes the machine's docker0,
which the machine's own Docker needs; a name of each daemon's own, since runs of the tests in
chroots of one machine share its network interfaces) and it writes no firewall rule: jobs run with --network none, as PrairieLearn runs them,
and image builds use the machine's network.
No registry is reachable from these machines, so Debian's image comes from debootstrap and
docker import (base_image()). Exit 2 with one line when it cannot start.
"""
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

CACHE = os.environ.get("LAB04_DOCKER_CACHE", "/var/cache/lab04-tests/docker")
MIRROR = "http://deb.debian.org/debian"
BRIDGE_PREFIX = "lab04br"  # a daemon's default bridge: this and a process id (never the machine's docker0)
SIOCBRADDBR, SIOCBRDELBR, SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x89A0, 0x89A1, 0x8913, 0x8914, 0x1  # <linux/sockios.h>


def bridge(name, add):
    """Makes (add) or removes the bridge name, as `ip link add/del NAME type bridge` would
    (iproute2 is not on every system); a bridge that is already there, or gone, is no error."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            if add:
                fcntl.ioctl(s, SIOCBRADDBR, name.encode())
                return
            request = struct.pack("16sH14s", name.encode(), 0, b"")
            flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", name.encode(), flags & ~IFF_UP, b""))
            fcntl.ioctl(s, SIOCBRDELBR, name.encode())
        except OSError:
            pass


class NoDocker(Exception):
    """Why no Docker daemon, image or container can be had here: one line."""


def why_not_machine():
    """Why no Docker daemon can run on this machine, whatever is installed (None when one may)."""
    if os.environ.get("LAB04_NO_DOCKER"):
        return "LAB04_NO_DOCKER is set (the tests' emulation of Docker runs instead)"
    if os.geteuid() != 0:
        return "a Docker daemon of the tests' own starts as root only"
    if not os.path.ismount("/sys/fs/cgroup"):
        return "dockerd needs the machine's cgroups and /sys/fs/cgroup is not mounted here (a chroot without /sys?)"
    # Docker's daemon makes a mount namespace for each container: a container with Docker's
    # default capabilities (a CI job's) can make none, and its docker import fails.
    if subprocess.run(["unshare", "--mount", "--propagation", "unchanged", "true"], capture_output=True).returncode:
        return "no mount namespace can be made here (a container with Docker's default capabilities?), and dockerd makes one for each container"
    return None


def why_not():
    """Why a Docker daemon of the tests' own cannot start on this machine (None when it may)."""
    why = why_not_machine()
    if why:
        return why
    missing = [p for p in ("dockerd", "docker", "debootstrap") if not shutil.which(p, path=os.environ.get(
        "PATH", "") + ":/usr/sbin:/sbin")]
    if missing:
        return "no %s here: install Debian's docker.io and debootstrap (docs/maintaining.md)" % " or ".join(missing)
    holder = holder_of_cache()
    if holder:
        return "another Docker daemon of the tests' (process %d) uses the cache %s" % (holder, CACHE)
    return None


def holder_of_cache():
    """The process id of a running daemon that keeps its images in the cache, or None."""
    try:
        with open(os.path.join(CACHE, "lab04-dockerd.pid")) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def start():
    """Starts the daemon: (folder, environment with DOCKER_HOST). Raises NoDocker."""
    why = why_not()
    if why:
        raise NoDocker(why)
    os.makedirs(CACHE, mode=0o700, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="lab04-docker-")
    name = BRIDGE_PREFIX + str(os.getpid())  # at most 14 characters: a Linux interface name has 15
    with open(os.path.join(folder, "bridge"), "w") as f:
        f.write(name)
    bridge(name, True)
    socket = os.path.join(folder, "docker.sock")
    log = open(os.path.join(folder, "dockerd.log"), "wb")
    daemon = subprocess.Popen([shutil.which("dockerd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"),
                               "--data-root", CACHE, "--exec-root", os.path.join(folder, "exec"),
                               "--host", "unix://" + socket, "--pidfile", os.path.join(folder, "dockerd.pid"),
                               "--bridge", name, "--iptables=false", "--ip-masq=false", "--userland-proxy=false"],
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    with open(os.path.join(CACHE, "lab04-dockerd.pid"), "w") as f:
        f.write("%d\n" % daemon.pid)
    env = dict(os.environ, DOCKER_HOST="unix://" + socket)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            break
        if subprocess.run(["docker", "version"], env=env, capture_output=True).returncode == 0:
            return folder, env
        time.sleep(0.5)
    stop(folder)
    raise NoDocker("dockerd did not start: %s" % last_line(os.path.join(folder, "dockerd.log")))


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
        return lines[-1][-300:] if lines else "no message"
    except OSError:
        return "no log"


def stop(folder):
    """Stops the daemon started in folder (its containers with it) and removes the folder."""
    try:
        with open(os.path.join(folder, "dockerd.pid")) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        pid = None
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(300):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if holder_of_cache() in (None, pid):
        try:
            os.remove(os.path.join(CACHE, "lab04-dockerd.pid"))
        except OSError:
            pass
    subprocess.run(["umount", "-R", "-l", os.path.join(folder, "exec")], capture_output=True)
    name = bridge_of(folder)
    if name:
        bridge(name, False)
    shutil.rmtree(folder, ignore_errors=True)


def bridge_of(folder):
    """The name of the bridge of the daemon started in folder (None before it had one)."""
    try:
        with open(os.path.join(folder, "bridge")) as f:
            return f.read().strip() or None
    except OSError:
        return None


def base_image(env, tag="debian:13", suite="trixie"):
    """Debian's image for FROM tag, made with debootstrap and docker import when the daemon
    lacks it (no registry is reachable here); then a container of it must run. Raises NoDocker."""
    if subprocess.run(["docker", "image", "inspect", tag], env=env, capture_output=True).returncode != 0:
        root = tempfile.mkdtemp(prefix="lab04-debootstrap-", dir=CACHE)
        try:
            made = subprocess.run(["debootstrap", "--variant=minbase", suite, root, MIRROR], capture_output=True,
                                  text=True)
            if made.returncode != 0:
                raise NoDocker("debootstrap %s could not make Debian's base image: %s" % (
                    suite, (made.stdout + made.stderr).strip().splitlines()[-1:] or "no message"))
            tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
            imported = subprocess.run(["docker", "import", "-", tag], stdin=tar.stdout, env=env, capture_output=True,
                                      text=True)
            tar.stdout.close()
            tar.wait()
            if imported.returncode != 0:
                raise NoDocker("docker import could not load Debian's base image: %s" % imported.stderr.strip()[:300])
        finally:
            shutil.rmtree(root, ignore_errors=True)
    ran = subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "true"], env=env, capture_output=True,
                         text=True)
    if ran.returncode != 0:
        raise NoDocker("a container of %s does not run here: %s" % (tag, ran.stderr.strip()[-300:]))


def main(argv):
    if argv in (["why-not"], ["why-not-machine"]):
        why = why_not() if argv == ["why-not"] else why_not_machine()
        if why:
            print(why)
            return 1
        return 0
    if argv == ["start"]:
        try:
            folder, env = start()
        except NoDocker as e:
            print("docker_host: %s" % e, file=sys.stderr)
            return 2
        print("DOCKER_HOST=%s %s" % (env["DOCKER_HOST"], folder))
        return 0
    if len(argv) == 2 and argv[0] == "stop":
        stop(argv[1])
        return 0
    print("docker_host: usage: docker_host.py why-not | why-not-machine | start | stop FOLDER", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
