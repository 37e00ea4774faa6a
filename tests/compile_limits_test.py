"""The class grader's compile is bounded, and tells its limits from a fault of the machine's:
grader/compile_sandbox.py's Compiler (its run and compile), given stand-in compilers (sh scripts)
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
import sys
import time

import checklist
import project

sys.path.insert(0, os.path.join(project.ROOT, "grader"))
import compile_sandbox  # noqa: E402


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
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
