"""The class grader's compile is bounded, and tells its limits from a fault of the machine's:
lab04/grader/compile_sandbox.py's Compiler (its run and compile), given stand-in compilers (sh scripts)
that break each limit, or are killed by a signal no limit sends.

usage: compile_limits_test.py WORK_DIR

A compile that runs out of its memory (its allocation fails: "out of memory"), uses up its CPU
time (SIGXCPU), writes a file past its size (SIGXFSZ), floods messages past compile_sandbox.OUTPUT or
runs past its time is the student's "did not compile (limit)", each named; the flood and
the hang are stopped at once, their processes gone. A compile killed by SIGKILL from outside
(the system's out-of-memory killer) is no limit of the student's: it is tried again, and killed
twice it is a "grader error", never a 0. Prints OK or NOT OK for each.
"""
import os
import shutil
import subprocess
import sys
import time

import checklist
import project

from lab04.grader import compile_sandbox  # noqa: E402


def compiler(script):
    """A stand-in compile command: sh runs script, whatever arguments follow."""
    return ["sh", "-c", script, "sh"]


def main(argv):
    if len(argv) != 1:
        print("compile_limits_test: usage: compile_limits_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = argv[0]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    checks = []

    def limit_of(script, timeout=compile_sandbox.TIMEOUT):
        start = time.monotonic()  # (not isolated: the stand-ins are the test's own)
        status, output, limit = compile_sandbox.Compiler(("", []), "true", timeout=timeout).run(compiler(script), work)
        return limit, time.monotonic() - start

    limit, _ = limit_of("echo 'LLVM ERROR: out of memory'; kill -ABRT $$")
    checks.append(("its allocation failing (out of memory): the memory limit, named", limit is not None and
                   "memory" in limit, limit))
    limit, _ = limit_of("kill -XCPU $$")
    checks.append(("SIGXCPU: the CPU limit, named", limit is not None and "CPU" in limit, limit))
    limit, _ = limit_of("kill -XFSZ $$")
    checks.append(("SIGXFSZ: the file size limit, named", limit is not None and "file" in limit, limit))
    limit, seconds = limit_of("while :; do echo 'lab04_attention.cpp:1:1: warning: again and again'; done")
    checks.append(("a flood of messages is stopped once past %d kB, at once" % (compile_sandbox.OUTPUT >> 10),
                   limit is not None and "messages" in limit and seconds < 30, (limit, seconds)))
    limit, seconds = limit_of("sleep 60 & sleep 60", timeout=2)
    checks.append(("a compile past its time is stopped then, its processes with it", limit is not None
                   and "longer than" in limit and seconds < 10, (limit, seconds)))
    limit, _ = limit_of("echo 'lab04_attention.cpp:3:1: error: expected ;'; exit 1")
    checks.append(("an error in the lab's code is no limit", limit is None, limit))
    limit, _ = limit_of("kill -KILL $$")
    checks.append(("SIGKILL from outside is no limit of the compile's (no 'memory')", limit == compile_sandbox.KILLED,
                   limit))
    lab = os.path.join(work, "lab")
    os.makedirs(lab)
    counter = os.path.join(work, "tries")
    module, failed = compile_sandbox.Compiler(("", compiler("echo x >> %s; kill -KILL $$" % counter)),
                                              "true").compile("int main() {}\n", lab)
    with open(counter) as f:
        tries = len(f.readlines())
    checks.append(("a compile killed from outside twice is a grader error (not graded), never the student's 0",
                   module is None and failed[0] == "grader error" and tries == 2, (failed, tries)))
    os.remove(counter)
    module, failed = compile_sandbox.Compiler(("", compiler(
        "if [ -s %s ]; then exit 0; fi; echo x >> %s; kill -KILL $$" % (counter, counter))), "true").compile(
        "int main() {}\n", lab)
    checks.append(("killed once, then compiled: the lab is graded", module is not None and failed is None, failed))
    status, output, limit = compile_sandbox.Compiler(("", []), "true").run([os.path.join(work, "no-such-compiler")], work)
    said = compile_sandbox.grader_fault(limit, output, None, None)
    checks.append(("a compile the run engine cannot start: no limit of the student's, and its grader error says so with "
                   "the engine's reason (not 'killed')", limit == compile_sandbox.NOT_STARTED
                   and "could not be started" in said and "No such file" in said and "killed" not in said, (limit, said)))
    checks += killed_for_memory(work)
    return checklist.report(checks)


MEMORY_OF_TEST = 256 << 20  # bytes: the cgroup killed_for_memory() grades in


def killed_for_memory(work):
    """A grader in a memory cgroup of its own (as a container's limit is) whose compile grows past
    it: the out-of-memory killer ends the compile, and the grader error names it. Where no cgroup
    can be made here (not root, a container), said and left out."""
    v2 = os.path.isfile("/sys/fs/cgroup/cgroup.controllers")
    top = "/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/memory"
    group = os.path.join(top, "lab04-compile-test-%d" % os.getpid())
    try:
        os.mkdir(group)
        with open(os.path.join(group, "memory.max" if v2 else "memory.limit_in_bytes"), "w") as f:
            f.write(str(MEMORY_OF_TEST))
        for name, value in ((("memory.swap.max", "0"),) if v2 else (("memory.memsw.limit_in_bytes", str(MEMORY_OF_TEST)),
                                                                     ("memory.swappiness", "0"))):
            try:
                with open(os.path.join(group, name), "w") as f:
                    f.write(value)
            except OSError:
                pass
    except OSError as e:
        print("left out: a compile killed for the memory of its grader's cgroup (no memory cgroup can be made here: %s)"
              % (e.strerror or e))
        try:
            os.rmdir(group)
        except OSError:
            pass
        return []
    lab = os.path.join(work, "lab-oom")
    os.makedirs(lab)
    grader = ("import sys; sys.path[:0] = [%r]; from lab04.grader import compile_sandbox; "
              "m, failed = compile_sandbox.Compiler(('', ['sh', '-c', 'tail /dev/zero', 'sh']), 'true').compile("
              "'int main() {}', %r); print(failed)" % (project.ROOT, lab))
    try:
        done = subprocess.run(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, sys.executable, "-c", grader],
                              capture_output=True, text=True, timeout=600)
    finally:
        os.rmdir(group)
    said = done.stdout.strip()
    return [("a compile that grows past its grader's memory cgroup (%d MB) is killed twice: a grader error that names "
             "the out-of-memory killer" % (MEMORY_OF_TEST >> 20),
             "grader error" in said and "out-of-memory killer" in said, said or done.stderr[-800:])]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
