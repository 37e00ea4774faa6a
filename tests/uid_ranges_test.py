"""Every test of this build takes root's user ids from a range of its own (LAB_SANDBOX_UIDS, set
at the end of tests/CMakeLists.txt), so that tests that grade as root run side by side without
one lock: each range is one the grader accepts (lab04/checker/isolation.py), no two tests'
ranges share an id, and none shares one with the default range (61000-61999), which the tests'
containers and an instructor's grading on this machine take.

usage: uid_ranges_test.py BUILD   (reads the tests of BUILD as ctest lists them)
"""
import json
import os
import subprocess
import sys

import checklist
import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)
from lab04.checker import isolation


def ranges_of(build):
    """{test name: its LAB_SANDBOX_UIDS, or None}, as ctest would run them."""
    listed = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True,
                            check=True).stdout
    found = {}
    for test in json.loads(listed)["tests"]:
        values = [p["value"] for p in test.get("properties", []) if p["name"] == "ENVIRONMENT"]
        env = dict(kv.split("=", 1) for kv in (values[0] if values else []))
        found[test["name"]] = env.get(isolation.UIDS_VARIABLE)
    return found


def checks_of(ranges):
    """The checks on {test: its range's text, or None}."""
    checks = []
    missing = sorted(t for t, r in ranges.items() if r is None)
    checks.append(("each of the %d tests has a range of its own" % len(ranges), not missing,
                   "none for %s" % ", ".join(missing[:10])))
    taken, refused, shared = {}, [], []
    for test, text in sorted(ranges.items()):
        if text is None:
            continue
        os.environ[isolation.UIDS_VARIABLE] = text
        try:
            ids = isolation.user_ids()
        except isolation.Refused as e:
            refused.append("%s: %s" % (test, e))
            continue
        for other, (first, last) in taken.items():
            if ids[0] <= last and first <= ids[-1]:
                shared.append("%s (%s) and %s (%d-%d)" % (test, text, other, first, last))
        taken[test] = (ids[0], ids[-1])
    checks.append(("each range is one the grader takes (isolation.user_ids)", not refused, "\n".join(refused[:5])))
    checks.append(("no two tests' ranges share a user id", not shared, "\n".join(shared[:5])))
    default = isolation.DEFAULT_UIDS
    in_default = sorted(t for t, (first, last) in taken.items() if first <= default[-1] and default[0] <= last)
    checks.append(("no test's range shares an id with the default (%d-%d)" % (default[0], default[-1]), not in_default,
                   ", ".join(in_default[:10])))
    return checks


def main(argv):
    if len(argv) != 1:
        print("uid_ranges_test: usage: uid_ranges_test.py BUILD", file=sys.stderr)
        return 2
    return checklist.report(checks_of(ranges_of(argv[0])))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
