"""Prints a test's checks as OK or NOT OK lines, with what came for each NOT OK, and a count;
when some failed, it ends with them again, each with the start of what came (a report cut to its
last lines, as tools/report_failures.py cuts a long one, still shows what failed).

checks: (what was promised, whether it held, what came). Returns the exit status: 0 when every
check held, 1 otherwise. Shared by the tests that check several promises of one run, with
differing_files(), what two graded folders hold that is not the same.
"""
import filecmp
import os


def report(checks):
    failed = 0
    for what, ok, got in checks:
        print("%s  %s" % ("OK    " if ok else "NOT OK", what))
        if not ok:
            print("        got: " + str(got).replace("\n", "\n        "))
            failed += 1
    print("%d passed, %d failed" % (len(checks) - failed, failed))
    for what, ok, got in checks if failed else ():
        if not ok:
            first = str(got).strip().splitlines()[:1] or [""]
            print("NOT OK  %s: got %s" % (what, first[0][:300]))
    return 1 if failed else 0


def differing_files(a, b, ignore=("class.json",)):
    """The files of folders a and b that differ or stand in one only, at any depth (the
    ignored names aside: class.json holds timings)."""
    diff = filecmp.dircmp(a, b, ignore=list(ignore))
    problems = diff.left_only + diff.right_only + diff.diff_files
    for sub in diff.common_dirs:
        problems += [sub + "/" + p for p in differing_files(os.path.join(a, sub), os.path.join(b, sub), ignore)]
    return problems
