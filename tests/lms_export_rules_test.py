#!/usr/bin/env python3
"""Canvas's and Moodle's gradebooks, read from exports written here and filled back, in this
process (tier unit): lab04/grader/lms.py finds the lab's column (the one that says Lab 04, the one
named, or a new one worth the lab's points), scales a score to the column's Points Possible,
writes Moodle's percent by email address, keeps the export's separator and byte-order mark,
leaves a row not graded as the LMS had it, matches a student by any of their identities and
never a row that could be two students', and refuses an export it cannot use with one line.
Every expected cell is worked out by hand from the exports below; the class grader's own use of
them is tested on a graded class (lms_rows_test.py, deadlines_test.py).

usage: lms_export_rules_test.py
"""
import csv
import io
import os
import sys
import tempfile

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)
import checklist

from lab04.grader import lms  # noqa: E402
from lab04.grader.row import Row  # noqa: E402
from lab04.grader.status import Status  # noqa: E402

CANVAS = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 03 (1203)", "Lab 04: attention (1204)",
     "Current Score"],
    ["    Points Possible", "", "", "", "", "10", "10", "(read only)"],
    ["Lee, Ann", "101", "S1", "alee", "A", "9", "", "90"],
    ["Roe, Bob", "102", "S2", "broe", "A", "8", "5", "80"],
    ["Poe, Cyd", "103", "S3", "cpoe", "B", "7", "", "70"],
    ["Kim, Dee", "104", "S4", "dkim", "B", "6", "", "60"],
    ["Kim, Dee", "105", "S5", "dkim2", "B", "6", "", "60"],
]
MOODLE = [
    ["First name", "Last name", "ID number", "Institution", "Department", "Email address", "Lab 03 (Real)"],
    ["Ann", "Lee", "1001", "", "", "ann.lee@uni.example", "90"],
    ["Bob", "Roe", "", "", "", "bob@uni.example", "80"],
    ["Cyd", "Poe", "1003", "", "", "", "70"],
]


def written(folder, name, rows, separator=",", bom=False):
    path = os.path.join(folder, name)
    out = io.StringIO()
    csv.writer(out, delimiter=separator, lineterminator="\r\n").writerows(rows)
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as f:
        f.write(out.getvalue())
    return path


def graded(student, ident, score, status=Status.GRADED):
    return Row(student=student, id=ident, max_score=7.0, score=score, status=status)


def table(text):
    text = text.lstrip("\ufeff")
    first = text.split("\r\n", 1)[0]
    return list(csv.reader(io.StringIO(text), delimiter=";" if first.count(";") > first.count(",") else ","))


def refused(kind, path, *words):
    try:
        export = lms.read_export(kind, path)
        if kind == "canvas":
            export.choose_column(words[0] if words else None)
    except lms.Bad as e:
        return "\n" not in str(e) and str(e).startswith(path)
    return False


def canvas_checks(folder):
    checks = []
    export = lms.read_export("canvas", written(folder, "canvas.csv", CANVAS))
    export.choose_column()
    checks.append(("the column that says Lab 04 is the lab's (Lab 03 and Current Score are not)",
                   export.column == 6, export.column))
    checks.append(("Canvas's Points Possible row is found (the row whose first cell says it, with no ID)",
                   export.points_row == 1, export.points_row))
    rows = [graded("Ann Lee", "101", 7.0), graded("bob", "broe", 3.5), graded("Cyd Poe", "", 0.0, Status.NO_LAB),
            graded("Dee Kim", "", 6.0), graded("zed", "999", 7.0)]
    found, unmatched, why = export.match([r.key for r in rows])
    checks.append(("Ann by Canvas's ID, Bob by his SIS login, Cyd by the name as First Last",
                   found.get(("Ann Lee", "101")) == 2 and found.get(("bob", "broe")) == 3
                   and found.get(("Cyd Poe", "")) == 4, found))
    checks.append(("two students named Dee Kim: the row matches neither, and says why",
                   ("Dee Kim", "") not in found and "2 students" in why.get(("Dee Kim", ""), ""), why))
    checks.append(("a row fitting no one matches no one, and the export's students nobody matched are named",
                   ("zed", "999") not in found and unmatched == ["Kim, Dee", "Kim, Dee"], (found, unmatched)))
    found_too, _, why_too = export.match([("Ann Lee", "102")])
    checks.append(("a row whose identifier is Bob's and whose name is Ann's matches neither, and says so",
                   not found_too and "its identifier fits Roe, Bob and its name Lee, Ann" == why_too.get(("Ann Lee", "102")),
                   (found_too, why_too)))
    text, column, _ = export.filled(rows, found, 7.0)
    out = table(text)
    checks.append(("7 of 7 in a 10-point column is 10; 3.5 of 7 is 5", (out[2][6], out[3][6]) == ("10", "5"), out))
    checks.append(("a row not graded (no lab) is left as Canvas had it (empty), not 0", out[4][6] == "", out[4]))
    checks.append(("every other cell is as read, the Points Possible row too", [r[:6] + r[7:] for r in out]
                   == [r[:6] + r[7:] for r in CANVAS] and out[1][6] == "10", out))
    checks.append(("the column keeps its header", column == "Lab 04: attention (1204)", column))
    # no column says Lab 04: a new one, worth the lab's points
    plain = [r[:6] + r[7:] for r in CANVAS]
    export = lms.read_export("canvas", written(folder, "plain.csv", plain))
    export.choose_column()
    found, _, _ = export.match([("Ann Lee", "101")])
    text, column, _ = export.filled([graded("Ann Lee", "101", 6.0)], found, 7.0)
    out = table(text)
    checks.append(("without a Lab 04 column a new one is added, its Points Possible the lab's 7, Ann's 6 unscaled",
                   column == lms.LAB_COLUMN and out[0][-1] == lms.LAB_COLUMN and out[1][-1] == "7" and out[2][-1] == "6",
                   out[:3]))
    # --canvas-column by its name, without its id
    export = lms.read_export("canvas", written(folder, "named.csv", CANVAS))
    export.choose_column("Lab 03")
    checks.append(("--canvas-column Lab 03 names the column Lab 03 (1203)", export.column == 5, export.column))
    two = [r[:7] + [r[6]] + r[7:] for r in CANVAS]
    two[0][7] = "lab4 redo (1205)"
    checks.append(("two columns that could be Lab 04 are refused, with one line",
                   refused("canvas", written(folder, "two.csv", two)), two[0]))
    checks.append(("--canvas-column naming a column the export lacks is refused, with one line",
                   refused("canvas", written(folder, "canvas.csv", CANVAS), "Lab 09"), "accepted"))
    checks.append(("an export without Canvas's ID column is refused, with one line",
                   refused("canvas", written(folder, "noid.csv", [[c for c in r[:1] + r[2:]] for r in CANVAS])),
                   "accepted"))
    return checks


def moodle_checks(folder):
    checks = []
    path = written(folder, "moodle.csv", MOODLE, separator=";", bom=True)
    export = lms.read_export("moodle", path)
    rows = [graded("Ann Lee", "", 7.0), graded("bob", "", 3.5), graded("Cyd Poe", "1003", 5.0),
            graded("Bob Roe", "", 1.0, Status.GRADER_ERROR)]
    found, _, why = export.match([r.key for r in rows])
    checks.append(("Ann by her name, Cyd by the ID number; bob (the email's part before the @) and Bob Roe (his name) "
                   "both fit Bob's row, so neither is matched",
                   found.get(("Ann Lee", "")) == 1 and found.get(("Cyd Poe", "1003")) == 3
                   and ("bob", "") not in found and ("Bob Roe", "") not in found and ("bob", "") in why, (found, why)))
    text, column, no_email = export.filled(rows, found, 7.0)
    checks.append(("Moodle's file keeps the export's byte-order mark and its separator", text.startswith("\ufeff")
                   and text.splitlines()[0] == "\ufeffEmail address;" + lms.LAB_COLUMN, text[:80]))
    out = table(text)
    checks.append(("Ann's 7 of 7 is 100 (percent), by her email address; Cyd, who has none, is left out and said",
                   out[1:] == [["ann.lee@uni.example", "100"]] and [r.student for r in no_email] == ["Cyd Poe"],
                   (out, no_email)))
    checks.append(("an export without Moodle's Email address column is refused, with one line",
                   refused("moodle", written(folder, "noemail.csv", [r[:5] + r[6:] for r in MOODLE])), "accepted"))
    with open(os.path.join(folder, "latin1.csv"), "wb") as f:
        f.write("First name,Last name,Email address\r\nJos\xe9,Ruiz,j@x\r\n".encode("latin-1"))
    checks.append(("an export not in UTF-8 is refused, with one line",
                   refused("moodle", os.path.join(folder, "latin1.csv")), "accepted"))
    checks.append(("an export that is not there is refused, with one line",
                   refused("moodle", os.path.join(folder, "none.csv")), "accepted"))
    return checks


def main(argv):
    if argv:
        print("lms_export_rules_test: usage: lms_export_rules_test.py", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lab04-lms-") as folder:
        return checklist.report(canvas_checks(folder) + moodle_checks(folder))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
