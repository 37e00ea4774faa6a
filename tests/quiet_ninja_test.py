"""The presets' Ninja (cmake/quiet-ninja) on a small project of its own, built as the presets
build the lab: a build after an edit of CMakeLists.txt (cmake runs inside the build and asks
the script for Ninja's version) ends instead of waiting for itself; a build started while
another holds the build folder's lock waits for it, then builds; what a build leaves running
does not hold the lock; a failed compile shows the compiler's message without the FAILED:
line and its command line, and exits non-zero. Prints OK or NOT OK for each check.

usage: quiet_ninja_test.py WORK_DIR
"""
import fcntl
import os
import shutil
import subprocess
import sys
import time

import checklist
import project

QUIET_NINJA = os.path.join(project.ROOT, "cmake", "quiet-ninja")
LISTS = """cmake_minimum_required(VERSION 3.16)
project(small CXX)
add_executable(small small.cpp)
# a step that leaves a process running after the build, as a server started by a build would
add_custom_target(leaves_one_running ALL COMMAND sh ${CMAKE_SOURCE_DIR}/leave.sh ${CMAKE_BINARY_DIR}/left.pids)
"""
TIMEOUT = 120  # a build of one small file; a build that waits for itself never ends


def build(folder, timeout=TIMEOUT):
    """`cmake --build folder`: (exit status, output), exit None if it did not end in time."""
    process = subprocess.Popen(["cmake", "--build", folder], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
        return process.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        return None, process.communicate()[0]


def lock_is_free(path):
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False


def main(argv):
    if len(argv) != 1:
        print("usage: quiet_ninja_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = argv[0]
    if not (shutil.which("ninja") or shutil.which("ninja-build")):
        print("SKIPPED: Ninja is not installed (the presets build with it; a plain cmake -S . -B build uses make)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    source, folder = os.path.join(work, "small"), os.path.join(work, "small", "build")
    os.makedirs(source)
    with open(os.path.join(source, "CMakeLists.txt"), "w") as f:
        f.write(LISTS)
    with open(os.path.join(source, "small.cpp"), "w") as f:
        f.write("int main() { return 0; }\n")
    with open(os.path.join(source, "leave.sh"), "w") as f:
        f.write('sleep 600 </dev/null >/dev/null 2>&1 &\necho $! >>"$1"\n')
    try:
        return checklist.report(checks_in(source, folder))
    finally:
        try:
            for pid in open(os.path.join(folder, "left.pids")).read().split():
                try:
                    os.kill(int(pid), 9)
                except OSError:
                    pass
        except OSError:
            pass


def checks_in(source, folder):
    checks = []
    configured = subprocess.run(["cmake", "-S", source, "-B", folder, "-G", "Ninja",
                                 "-DCMAKE_MAKE_PROGRAM=" + QUIET_NINJA], capture_output=True, text=True)
    status, out = build(folder) if configured.returncode == 0 else (None, configured.stderr)
    checks.append(("configured with quiet-ninja as the make program and built", status == 0, out[-600:]))
    lock = os.path.join(folder, ".lab04-build.lock")
    checks.append(("what the build left running (a sleep in the background) neither keeps the build from ending nor holds the build folder's lock",
                   os.path.exists(lock) and lock_is_free(lock), "the lock is held after the build ended"))

    with open(os.path.join(source, "CMakeLists.txt"), "a") as f:
        f.write("# an edit\n")
    started = time.monotonic()
    status, out = build(folder)
    checks.append(("a build after an edit of CMakeLists.txt (cmake regenerates inside it) ends, exit 0",
                   status == 0 and "Re-running CMake" in out,
                   "it did not end in %d s" % TIMEOUT if status is None else "exit %s: %s" % (status, out[-600:])))

    with open(os.path.join(source, "small.cpp"), "a") as f:
        f.write("// an edit\n")
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = subprocess.Popen(["cmake", "--build", folder], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        time.sleep(3)
        still = waiting.poll() is None
    try:
        out, _ = waiting.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(waiting.pid, 9)
        out = "(it did not end in %d s after the lock was given back)" % TIMEOUT
    checks.append(("a build started while another holds the lock waits for it, then builds",
                   still and waiting.returncode == 0 and "small.cpp" in out,
                   "ended before the lock was given back" if not still else out[-600:]))

    with open(os.path.join(source, "small.cpp"), "w") as f:
        f.write("int main() { return undeclared_name; }\n")
    status, out = build(folder)
    checks.append(("a failed compile: the compiler's message, no FAILED: line nor its command line, exit non-zero",
                   status not in (0, None) and "undeclared_name" in out and "FAILED:" not in out
                   and "-o CMakeFiles" not in out, "exit %s: %s" % (status, out[-800:])))
    return checks


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
