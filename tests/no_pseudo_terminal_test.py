"""Where no pseudo-terminal can be made (a container without /dev/pts), the tests that need one
are reported skipped, with the reason, instead of failing.

usage: no_pseudo_terminal_test.py BUILD_DIR TEST_NAME...

Each named test's command is taken from ctest (--show-only=json-v1) with its
SKIP_REGULAR_EXPRESSION, and run where no terminal can be made: in a mount namespace of its own
whose /dev/pts is an empty tmpfs, where script(1) fails as it does in such a container
("failed to create pseudo-terminal: No such device"). Where no mount namespace can be made
(unprivileged, in a container) a stand-in script(1) that fails the same way is put first on
PATH, and the test says so. Prints OK or NOT OK for each promise; exit 77 (skipped) if neither
way can be set up.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import checklist

HIDE_PTS = "mount --make-private /dev/pts 2>/dev/null; mount -t tmpfs none /dev/pts && exec \"$@\""
NAMESPACES = (["unshare", "--mount"], ["unshare", "--mount", "--propagation", "unchanged"],
              ["unshare", "--user", "--map-root-user", "--mount"])
STAND_IN = "#!/bin/sh\necho 'script: failed to create pseudo-terminal: No such device' >&2\nexit 1\n"


def no_terminal_prefix(stand_in_dir):
    """A command prefix under which no pseudo-terminal can be made, and how it was made."""
    for namespace in NAMESPACES:
        prefix = namespace + ["sh", "-c", HIDE_PTS, "sh"]
        try:
            tried = subprocess.run(prefix + ["script", "-qec", "true", "/dev/null"], capture_output=True,
                                   text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if "pseudo-terminal" in tried.stderr:
            return prefix, "a mount namespace whose /dev/pts is empty (%s)" % " ".join(namespace)
    with open(os.path.join(stand_in_dir, "script"), "w") as f:
        f.write(STAND_IN)
    os.chmod(os.path.join(stand_in_dir, "script"), 0o755)
    path = stand_in_dir + os.pathsep + os.environ.get("PATH", "")
    return ["env", "PATH=" + path], "a stand-in script(1) that fails as without /dev/pts (no mount namespace here)"


def main(argv):
    if len(argv) < 2:
        print("no_pseudo_terminal_test: usage: no_pseudo_terminal_test.py BUILD_DIR TEST_NAME...", file=sys.stderr)
        return 2
    build, names = argv[0], argv[1:]
    shown = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
    try:
        tests = {t["name"]: t for t in json.loads(shown.stdout)["tests"]}
    except (ValueError, KeyError):
        print("NOT OK  ctest --show-only=json-v1 gave no list of tests: " + shown.stderr[-500:])
        return 1
    with tempfile.TemporaryDirectory() as stand_in_dir:
        prefix, how = no_terminal_prefix(stand_in_dir)
        print("no terminal here by: " + how)
        checks = []
        for name in names:
            test = tests.get(name)
            if test is None:
                checks.append(("%s is a test of this build" % name, False, sorted(tests)))
                continue
            props = {p["name"]: p["value"] for p in test.get("properties", [])}
            skips = props.get("SKIP_REGULAR_EXPRESSION", [])
            skips = [skips] if isinstance(skips, str) else skips
            run = subprocess.run(prefix + test["command"], capture_output=True, text=True, timeout=120,
                                 cwd=props.get("WORKING_DIRECTORY", build))
            output = run.stdout + run.stderr
            print("ran: %s\n%s" % (" ".join(map(shlex.quote, test["command"])), output.strip()))
            skipped = any(re.search(s, output) for s in skips)
            checks.append(("%s is reported skipped where no pseudo-terminal can be made" % name,
                           skipped, "exit %d, not skipped (its skip patterns: %s)" % (run.returncode, skips)))
            checks.append(("... and says why: the terminal could not be made", "No such device" in output
                           and "pseudo-terminal" in output, output[-500:]))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
