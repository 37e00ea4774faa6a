"""Prints a test's checks as OK or NOT OK lines, with what came for each NOT OK, and a count.

checks: (what was promised, whether it held, what came). Returns the exit status: 0 when every
check held, 1 otherwise. Shared by the tests that check several promises of one run.
"""


def report(checks):
    failed = 0
    for what, ok, got in checks:
        print("%s  %s" % ("OK    " if ok else "NOT OK", what))
        if not ok:
            print("        got: " + str(got).replace("\n", "\n        "))
            failed += 1
    print("%d passed, %d failed" % (len(checks) - failed, failed))
    return 1 if failed else 0
