#!/usr/bin/env python3
"""A job of the run engine, as a value (lab04/checker/engine.py's Job), is written as engine/runner_job.cpp
reads it, in this process (tier unit): each field a letter and its value, repeated fields in the
order given, a field left out when it is not set, and a value given as a dict (the sandbox's
limits and environment) written as NAME=value. The letters are those of runner_job.cpp's reader
(engine/runner.cpp's comment says what each is), read here from that file, so that a letter the runner does not read fails.

usage: runner_job_rules_test.py
"""
import os
import re
import sys

import project
import checklist

from lab04.checker import engine


def letters_the_runner_reads():
    with open(os.path.join(project.ROOT, "engine", "runner_job.cpp"), encoding="utf-8") as f:
        return set(re.findall(r"case '([A-Z])':", f.read()))


def main(argv):
    if argv:
        print("runner_job_rules_test: usage: runner_job_rules_test.py", file=sys.stderr)
        return 2
    checks = []
    job = engine.Job.of(command=["/bin/sh", "-c", "echo hi"], home="/w/home", wall_ms=1500, max_out=4096, max_err=512,
                        limits={"as": 1 << 30, "nproc": 64}, env={"PATH": "/usr/bin", "LANG": "C.UTF-8"})
    checks.append(("a program's job: its words in order, home, time, output, limits and environment",
                   job.fields() == ["C/bin/sh", "C-c", "Cecho hi", "H/w/home", "T1500", "O4096", "R512",
                                    "Las=1073741824", "Lnproc=64", "EPATH=/usr/bin", "ELANG=C.UTF-8"], job.fields()))
    job = engine.Job.of(module="/w/bin/lab.so", library="/w/bin/leak.so", uid=61005, home="/h", args=["--seed", "7", "-T", "4"],
                        places=["/tmp"], scratch_size="64m", own_proc=True, root="/w/root", shown=["/opt/torch"],
                        cgroups=["/sys/fs/cgroup/lab04/cgroup.procs"], alone=True, hidden=["/class"])
    fields = job.fields()
    expected = ["M/w/bin/lab.so", "W/w/bin/leak.so", "U61005", "H/h", "K", "P/tmp", "S64m", "X/class", "V", "I/w/root",
                "B/opt/torch", "G/sys/fs/cgroup/lab04/cgroup.procs", "A--seed", "A7", "A-T", "A4"]
    checks.append(("a module's job as root: every field once, its arguments in order", fields == expected, fields))
    checks.append(("user id 0 is written (a value, not an absent one)", "U0" in engine.Job(uid=0).fields(),
                   engine.Job(uid=0).fields()))
    checks.append(("a new student's job is N alone", engine.Job(new_student=True).fields() == ["N"],
                   engine.Job(new_student=True).fields()))
    checks.append(("an empty job writes no field", engine.Job().fields() == [], engine.Job().fields()))
    every = engine.Job.of(command=["c"], module="m", library="w", uid=1, home="h", wall_ms=1, max_out=1, max_err=1,
                          limits={"as": 1}, env={"A": "b"}, args=["a"], places=["p"], scratch_size="s", hidden=["x"],
                          own_proc=True, root="i", shown=["b"], cgroups=["g"], alone=True, new_student=True)
    written = {f[0] for f in every.fields()}
    read = letters_the_runner_reads()
    checks.append(("every letter a job writes is one runner_job.cpp reads, and every one it reads can be written",
                   written == read, "written %s, read %s" % (sorted(written), sorted(read))))
    checks.append(("a job is a value: equal parts make equal jobs, and it cannot be changed",
                   engine.Job.of(args=["a"]) == engine.Job(args=("a",)) and _frozen(engine.Job()), "changed"))
    return checklist.report(checks)


def _frozen(job):
    try:
        job.home = "elsewhere"
    except AttributeError:
        return True
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
