"""A g++ AddressSanitizer build of the lesson is checked like any other build: the checker runs
it in its sandbox with its output line by line (stdbuf's LD_PRELOAD), which g++'s ASan runtime
refuses unless told not to ("ASan runtime does not come first in initial library list").

usage: gcc_sanitizer_build_test.py PROJECT_DIR WORK_DIR

Builds the lesson with g++, -DLAB_SANITIZE=ON and -DCMAKE_BUILD_TYPE=Debug in WORK_DIR (no
precompiled header: one compile), then runs the checker on it: every case must be OK. Exit 77
(skipped) where there is no g++. Prints OK or NOT OK for each promise.
"""
import os
import shutil
import subprocess
import sys

import checklist
import project


def main(argv):
    if len(argv) != 2:
        print("gcc_sanitizer_build_test: usage: gcc_sanitizer_build_test.py PROJECT_DIR WORK_DIR", file=sys.stderr)
        return 2
    project_dir, work = argv
    if not shutil.which("g++"):
        print("SKIPPED: no g++ here")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    built = subprocess.run(["sh", "-c", 'cmake -S "$0" -B "$1" -G Ninja -DCMAKE_CXX_COMPILER=g++ -DLAB_SANITIZE=ON '
                            '-DCMAKE_BUILD_TYPE=Debug -DLAB_PCH=OFF && cmake --build "$1" --target lab04_attention',
                            project_dir, work], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lab = os.path.join(work, "lab04_attention")
    checks = [("the lesson builds with g++ and the sanitizers", built.returncode == 0, built.stdout[-1500:])]
    if built.returncode == 0:
        with open(lab, "rb") as f:
            checks.append(("... against g++'s AddressSanitizer runtime", b"__asan_init" in f.read(), "no ASan in it"))
        run = subprocess.run([sys.executable, os.path.join(project.CHECKER, "check_lab.py"), lab],
                             capture_output=True, text=True, env=dict(os.environ, LAB_SANITIZED="1"))
        checks.append(("the checker finds every case OK", run.returncode == 0 and "6 passed, 0 failed" in run.stdout,
                       "exit %d\n%s%s" % (run.returncode, run.stdout[-1500:], run.stderr[-500:])))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
