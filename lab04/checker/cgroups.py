"""cgroups.py: the class grader's cgroups (a worker's students' share of the CPU and memory) and
the out-of-memory killer's count, read so that a SIGKILL the memory's limit sent is told from
one sent by anything else.

  Cgroup(name)     a cgroup of one worker (root only): procs, its cgroup.procs files to join;
                   why, where none could be made
  oom_kills()      how many processes the out-of-memory killer ended in this process's cgroup
"""
import os

from lab04.checker.limits import MEMORY


class Cgroup:
    """A cgroup for the runs of one worker of the class grader (root only), so that a
    student's runs, however many processes they make, share at most one core and MEMORY
    bytes between them: the other workers' students keep their share. cgroup v2, or v1's
    cpu and memory hierarchies; where neither can be made, procs is empty and why says so."""

    def __init__(self, name):
        self.folders, self.procs, self.why = [], [], None
        v2 = "/sys/fs/cgroup/cgroup.controllers"
        settings = ([("", {"cpu.max": "100000 100000", "memory.max": str(MEMORY)})] if os.path.isfile(v2) else
                    [("cpu", {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "100000"}),
                     ("memory", {"memory.limit_in_bytes": str(MEMORY)})])
        try:
            if os.geteuid() != 0:
                raise OSError("not root")
            for hierarchy, values in settings:
                # Only inside a mounted hierarchy (its folders all have cgroup.procs): where none
                # is mounted (a chroot or container without /sys), a folder made there would be
                # a plain one, and no run could join it.
                if not os.path.isfile(os.path.join("/sys/fs/cgroup", hierarchy, "cgroup.procs")):
                    raise OSError("no cgroup hierarchy at /sys/fs/cgroup/%s" % hierarchy)
                folder = os.path.join("/sys/fs/cgroup", hierarchy, name)
                try:
                    os.mkdir(folder)
                except FileExistsError:
                    pass
                self.folders.append(folder)
                for key, value in values.items():
                    with open(os.path.join(folder, key), "w") as f:
                        f.write(value)
                self.procs.append(os.path.join(folder, "cgroup.procs"))
        except OSError as e:
            self.procs, self.why = [], "no cgroup could be made (%s)" % (e.strerror or e)
            self.close()

    def close(self):
        for folder in self.folders:
            try:
                os.rmdir(folder)
            except OSError:
                pass


def oom_kills():
    """How many processes the out-of-memory killer has ended in this process's memory cgroup and
    the cgroups below it (cgroup v2's memory.events, v1's memory.oom_control), or None where
    neither can be read. In a container it is the container's: read before and after a run, a
    rise says that a SIGKILL no limit of the run's sends came from the memory's limit."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return None
    where = []
    for _, controllers, path in (l for l in lines if len(l) == 3):
        if controllers == "":  # v2: the path is the cgroup namespace's (a container's own is /)
            where += [("/sys/fs/cgroup" + path.rstrip("/") + "/memory.events", "oom_kill ")]
        elif "memory" in controllers.split(","):  # v1: a container sees its own cgroup at the top
            where += [("/sys/fs/cgroup/memory" + path.rstrip("/") + "/memory.oom_control", "oom_kill "),
                      ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill ")]
    for path, key in where:
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return None
