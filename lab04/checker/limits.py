"""limits.py: the limits of one run of a lab, which the run engine sets (for the checker's
sandbox, the class runner and the watch's verdict), and how a report says them.

  limits(timeout, asan, processes)   {name: value}, the names those of the engine's L fields
  limits_in_words(asan)              the isolation line's words for them
  sanitizer_build()                  whether this grader was told its labs are AddressSanitizer
                                     builds (LAB_SANITIZED=1), which run without the memory limit
"""
import os

MEMORY = 4 << 30  # bytes of address space
PROCESSES = 1024  # processes and threads of a sandbox's own user
FILE_SIZE = 64 << 20  # bytes: the largest file the lab may write


def limits(timeout, asan=False, processes=PROCESSES):
    """The resource limits of one run of the lab, which the run engine sets (for the checker,
    the class runner and the watch's verdict): {name: value}, the names those of the engine's
    L fields. The CPU time follows the wall-time limit (SIGXCPU then), and there is no
    memory limit for an AddressSanitizer build (asan). processes: where the lab runs as a user
    who has processes of their own already, as many more."""
    found = {"nproc": processes, "fsize": FILE_SIZE, "cpu": int(timeout) + 5, "core": 0}
    if not asan:
        found["as"] = MEMORY
    return found


def limits_in_words(asan=False):
    return "limits: %s, %d processes, files up to %d MB, CPU time, no core files" % (
        "memory not limited (an AddressSanitizer build)" if asan else "memory %d GiB" % (MEMORY >> 30),
        PROCESSES, FILE_SIZE >> 20)


def sanitizer_build():
    """Whether the labs to run were built with AddressSanitizer, which reserves terabytes of
    address space and so runs without the memory limit: the grader's own setting
    (LAB_SANITIZED=1, which the sanitizer build's tests set), never read from the student's
    binary, which could claim it to lift its limit."""
    return os.environ.get("LAB_SANITIZED") == "1"
