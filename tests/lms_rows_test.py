#!/usr/bin/env python3
"""Every grade lands in its own student's row of the LMS's import file, or in no row.

usage: lms_rows_test.py WORK_DIR

A class already graded (the class.json of one shard, as grade_class.py --shard writes it) is
merged with Canvas's and Moodle's exports of students who make a row easy to mistake: a student
whose name is "Points Possible" (Canvas's maximum row has that first cell), a repository whose
folder (a GitHub login) equals a classmate's SIS login, homonyms told apart by email, by ID
number or by nothing, an identifier in two students' columns, and two rows of the class that fit
one student. Each student's score is distinct, so a grade in another's cell is seen. Nothing is
compiled: the exports and the rows are the test.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

import checklist
import project

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")

# (student, id the submission gave, score of 7)
ROWS = [
    ("pposs", "", 7.0),               # Canvas: "Points Possible" is her name
    ("bob", "", 6.0),                 # Robert's GitHub login, his Integration ID, and Bob Brown's SIS login
    ("bbrown", "", 5.0),              # Bob Brown's GitHub login, his Integration ID
    ("carla", "carla@uni.example", 4.0),  # Canvas and Moodle homonyms "Carla Diaz", told apart by email
    ("carla2", "cdiaz2@uni.example", 3.0),
    ("dee", "", 2.0),                 # fits two Canvas students (one's SIS login, the other's SIS id)
    ("eve", "", 6.0),                 # two rows of the class for one Canvas student (login and name)
    ("Eve Ng", "", 5.0),
    ("Fay Ho", "", 4.0),              # Moodle homonyms with nothing to tell them apart: no one
    ("gus", "", 3.0),                 # plain: by SIS login / Moodle ID number
]

CANVAS = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section", "Lab 04 (42)", "Current Score"],
    ["    Points Possible", "", "", "", "", "", "10.00", "(read only)"],
    ["Points Possible", "201", "S201", "pposs", "", "A", "", "90"],
    ["Brown, Bob", "202", "S202", "bob", "bbrown", "A", "", "80"],
    ["Jones, Robert", "203", "S203", "rjones", "bob", "A", "", "70"],
    ["Diaz, Carla", "204", "carla@uni.example", "cdiaz", "", "A", "", "60"],
    ["Diaz, Carla", "205", "cdiaz2@uni.example", "cdiaz2", "", "A", "", "50"],
    ["Ode, Dee", "206", "S206", "dee", "", "A", "", "40"],
    ["Other, Dan", "207", "dee", "dother", "", "A", "", "30"],
    ["Ng, Eve", "208", "S208", "eve", "", "A", "", "20"],
    ["Ito, Gus", "209", "S209", "gus", "", "A", "", "10"],
]

MOODLE = [
    ["First name", "Last name", "ID number", "Institution", "Department", "Email address", "Lab 03 (Real)"],
    ["Carla", "Diaz", "c1", "U", "CS", "carla@uni.example", "1"],
    ["Carla", "Diaz", "c2", "U", "CS", "cdiaz2@uni.example", "2"],
    ["Fay", "Ho", "f1", "U", "CS", "fay.ho@uni.example", "3"],
    ["Fay", "Ho", "f2", "U", "CS", "fho@uni.example", "4"],
    ["Gus", "Ito", "gus", "U", "CS", "gito@uni.example", "5"],
]


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\r\n").writerows(rows)


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def shard(folder):
    """One shard, 1/1, of the class above, as grade_class.py --shard writes it."""
    os.makedirs(folder)
    rows = [{"student": s, "id": i, "score": score, "max_score": 7.0, "steps": [1.0] * int(score) + [0.0] * (7 - int(score)),
             "status": "graded", "diagnosis": "", "mistake": None, "feedback": []} for s, i, score in ROWS]
    with open(os.path.join(folder, "class.json"), "w") as f:
        json.dump({"cases": ["3,4,6,6"], "points": [1.0] * 7, "shard": "1/1", "class": [s for s, _, _ in ROWS],
                   "rows": rows, "draw": 1}, f)


def main(argv):
    if len(argv) != 1:
        print("lms_rows_test: usage: lms_rows_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    canvas, moodle = os.path.join(work, "canvas.csv"), os.path.join(work, "moodle.csv")
    write_csv(canvas, CANVAS)
    write_csv(moodle, MOODLE)
    shard(os.path.join(work, "s1"))
    grades = os.path.join(work, "grades")
    run = subprocess.run([sys.executable, GRADE_CLASS, "--merge", "--no-similarity", "--canvas-gradebook", canvas,
                          "--moodle-gradebook", moodle, grades, os.path.join(work, "s1")], capture_output=True, text=True)
    checks = [("the class is merged with both exports (exit 0)", run.returncode == 0,
               "exit %d, stderr %r" % (run.returncode, run.stderr[-600:]))]
    if run.returncode != 0:
        return checklist.report(checks)
    with open(os.path.join(grades, "summary.md"), encoding="utf-8") as f:
        summary = f.read()
    table = read_csv(os.path.join(grades, "canvas-import.csv"))
    lab = CANVAS[0].index("Lab 04 (42)")
    cells = {r[1]: r[lab] for r in table[1:]}
    points = lambda score: "%g" % round(score * 10 / 7, 2)
    checks += [
        ("Canvas's Points Possible row keeps its 10: a student named Points Possible is not it",
         table[1][lab] == "10.00" and table[1][0] == "    Points Possible", table[1]),
        ("the student named Points Possible gets her own grade (7 of 7: 10), scaled by the real row's 10",
         cells.get("201") == points(7.0), cells),
        ("a folder equal to a classmate's SIS login that is also its own student's Integration ID matches no one: "
         "Robert Jones's 6 goes into neither his cell nor Bob Brown's, where Bob's own 5 goes (his Integration ID)",
         cells.get("202") == points(5.0) and cells.get("203") == "", cells),
        ("Canvas homonyms told apart by the email in SIS User ID: each Carla Diaz gets her own grade",
         cells.get("204") == points(4.0) and cells.get("205") == points(3.0), cells),
        ("an identifier in two Canvas students' columns (one's SIS login, the other's SIS User ID) writes neither",
         cells.get("206") == "" and cells.get("207") == "", cells),
        ("two rows of the class that fit one Canvas student (by login and by name) write nothing into her row",
         cells.get("208") == "", cells),
        ("a plain login still matches: gus gets his 3", cells.get("209") == points(3.0), cells),
        ("every other cell and row of Canvas's export comes back as it was",
         [r[:lab] + r[lab + 1:] for r in table] == [r[:lab] + r[lab + 1:] for r in CANVAS], table),
        ("the summary lists each row that matched no one with why (Robert's login, dee, the two eves)",
         all(w in summary for w in ("Matched no one", "bob: fits 2 students", "dee: fits 2 students", "eve:", "Eve Ng:")),
         summary[-1500:]),
    ]
    moodle_rows = read_csv(os.path.join(grades, "moodle-import.csv"))
    percent = lambda score: "%g" % round(100 * score / 7, 2)
    checks += [
        ("Moodle homonyms with their emails are each written by email with their own percent; homonyms with nothing "
         "to tell them apart are left out, not refused as a whole import; gus by ID number",
         sorted(moodle_rows[1:]) == sorted([["carla@uni.example", percent(4.0)], ["cdiaz2@uni.example", percent(3.0)],
                                           ["gito@uni.example", percent(3.0)]]) and moodle_rows[0][0] == "Email address",
         moodle_rows),
        ("the summary says Fay Ho matched no one because two students have that name",
         "Fay Ho: 2 students of Moodle's export have that name" in summary, summary[-1500:]),
    ]
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
