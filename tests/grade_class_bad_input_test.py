#!/usr/bin/env python3
"""grade_class.py refuses bad input with one line on stderr, exit 2, nothing on stdout and
nothing written.

usage: grade_class_bad_input_test.py WORK_DIR

Each case: a SUBMISSIONS folder that does not exist, is a file, is empty or holds no lab
shape; a GRADES folder that is not empty, or is a file, or lies inside the class's folder (as a
--similar-to folder may); a shard to merge that another user may write; a --shard that is not I/N with
1 <= I <= N; a bad -j, --points or --timeout; an unknown option; shards to merge that are
not of one class (other points, the same shard twice, a shard missing, other students), or
a shard whose class.json names no I/N; a
--deadline that is not a time with a zone; a --late-penalty that is not a rule; an LMS export
without the columns it needs or not CSV (an identifier that fits two students is no bad
input: lms_rows_test.py); --canvas-column
alone; an LMS export given to one shard; a --draw that is not a seed, a --shard without
--draw, shards of different draws to merge; a --preflight-record in a folder the grader cannot write;
a LAB_SANDBOX that names no sandbox (lab04/checker/isolation.py's modes), a LAB_SANDBOX_UIDS that names
no range of user ids it may take.
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys

import checklist
import project

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")


def snapshot(folder):
    return sorted((os.path.relpath(os.path.join(t, f), folder), os.path.getsize(os.path.join(t, f)))
                  for t, _, fs in os.walk(folder) for f in fs)


def shard(folder, i, n, points, students, draw=None, broken=None):
    """A shard's GRADES folder as --shard writes it (class.json is what --merge reads); broken:
    a change to its first row that no grader writes."""
    os.makedirs(folder)
    rows = [{"student": s, "score": 1.0, "max_score": 7.0, "steps": [1.0] + [0.0] * 6, "status": "graded",
             "diagnosis": "", "mistake": None, "feedback": []} for s in students[i - 1::n]]
    rows[0].update(broken or {})
    rows[0] = {k: v for k, v in rows[0].items() if v is not ...}
    with open(os.path.join(folder, "class.json"), "w") as f:
        json.dump({"cases": ["3,4,6,6"], "points": points, "shard": "%d/%d" % (i, n), "class": students,
                   "rows": rows, "draw": draw}, f)


def main(argv):
    if len(argv) != 1:
        print("grade_class_bad_input_test: usage: grade_class_bad_input_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    j = lambda *p: os.path.join(work, *p)
    os.makedirs(j("class", "alice"))
    with open(j("class", "alice", "lab04_attention.cpp"), "w") as f:
        f.write("int main() { return 0; }\n")
    os.makedirs(j("empty"))
    os.makedirs(j("no_lab_shapes"))
    with open(j("no_lab_shapes", "notes.txt"), "w") as f:
        f.write("not a lab\n")
    os.makedirs(j("full"))
    with open(j("full", "old.csv"), "w") as f:
        f.write("x\n")
    with open(j("a_file"), "w") as f:
        f.write("x\n")
    one = [1.0] * 7
    students = ["ann", "bob", "cy", "di"]
    shard(j("s1"), 1, 2, one, students)
    shard(j("s2"), 2, 2, one, students)
    shard(j("s2_other_points"), 2, 2, [2.0] + [1.0] * 6, students)
    shard(j("s2_other_class"), 2, 2, one, students + ["eve"])
    shard(j("s1_of_3"), 1, 3, one, students)
    shard(j("s1_draw_1"), 1, 2, one, students, draw=1)
    shard(j("s2_draw_2"), 2, 2, one, students, draw=2)
    shard(j("s2_unknown_status"), 2, 2, one, students, broken={"status": "passed with honours"})
    shard(j("s2_no_student"), 2, 2, one, students, broken={"student": ...})
    shard(j("s2_open"), 2, 2, one, students)
    shard(j("s2_no_shard"), 2, 2, one, students)
    with open(j("s2_no_shard", "class.json")) as f:
        named_no_shard = dict(json.load(f), shard="2 of 2")
    with open(j("s2_no_shard", "class.json"), "w") as f:
        json.dump(named_no_shard, f)
    os.chmod(j("s2_open"), 0o777)
    shard(j("s2_open_file"), 2, 2, one, students)
    os.chmod(j("s2_open_file", "class.json"), 0o666)
    exports = {
        "canvas_no_section.csv": "Student,ID,SIS User ID,SIS Login ID,Lab 03 (1)\nA,1,a,alice,3\n",
        "canvas_no_id.csv": "Student,SIS Login ID,Section\nA,alice,S\n",
        "canvas_two_labs.csv": "Student,ID,SIS Login ID,Section,Lab 04 (5),lab04 redo (6)\nA,1,alice,S,,\n",
        "canvas_utf16.csv": None,
        "moodle_no_email.csv": "First name,Last name,ID number\nAlice,Liddell,123\n",
        "moodle_twice.csv": "First name,Last name,ID number,Email address\nAl,Ice,alice,a@x\nAli,Ce,9,alice\n",
        "empty.csv": "",
    }
    for name, text in exports.items():
        with open(j(name), "wb") as f:
            f.write(text.encode() if text is not None else "Student,ID,Section\nA,1,S\n".encode("utf-16"))
    cls, new = j("class"), j("new")
    cases = [
        ("SUBMISSIONS that does not exist", [j("nowhere"), new], "no folder"),
        ("SUBMISSIONS that is a file", [j("a_file"), new], "no folder"),
        ("SUBMISSIONS that is empty", [j("empty"), new], "holds nothing to grade"),
        ("SUBMISSIONS with nothing in a shape it reads", [j("no_lab_shapes"), new], "holds nothing to grade"),
        ("GRADES that is not empty", [cls, j("full")], "is not an empty folder"),
        ("GRADES that is a file", [cls, j("a_file")], "is not an empty folder"),
        ("GRADES in a folder that does not exist", [cls, j("nowhere", "g")], "does not exist"),
        ("GRADES inside the class's folder", [cls, j("class", "grades")], "is inside the class's folder"),
        ("--similar-to a folder inside the class's folder", ["--similar-to", j("class", "alice"), cls, new],
         "is inside the class's folder"),
        ("--preflight-record without --prebuilt", ["--preflight-record", j("record"), cls, new],
         "give --prebuilt too"),
        ("--preflight-record that is a folder", ["--prebuilt", "--preflight-record", j("empty"), cls, new],
         "--preflight-record takes a file"),
        ("--preflight-record in a folder that does not exist",
         ["--prebuilt", "--preflight-record", j("nowhere", "record"), cls, new], "--preflight-record takes a file"),
        ("--grade-unisolated for a class", ["--grade-unisolated", cls, new], "is for PrairieLearn's submission"),
        ("merge: a shard another user may write", ["--merge", new, j("s1"), j("s2_open")], "may be written by another"),
        ("merge: a shard whose class.json another user may write", ["--merge", new, j("s1"), j("s2_open_file")],
         "may be written by another"),
        ("--shard 0/3", ["--shard", "0/3", cls, new], "--shard takes I/N"),
        ("--shard 4/3", ["--shard", "4/3", cls, new], "--shard takes I/N"),
        ("--shard 2", ["--shard", "2", cls, new], "--shard takes I/N"),
        ("--shard a/b", ["--shard", "a/b", cls, new], "--shard takes I/N"),
        ("--shard with no value", [cls, new, "--shard"], "--shard takes I/N"),
        ("-j 0", ["-j", "0", cls, new], "-j takes"),
        ("-j many", ["-j", "many", cls, new], "-j takes"),
        ("-j -3", ["-j", "-3", cls, new], "-j takes"),
        ("--points of 6 numbers", ["--points", "1,1,1,1,1,1", cls, new], "--points takes 7 numbers"),
        ("--timeout 0", ["--timeout", "0", cls, new], "--timeout takes"),
        ("an unknown option", ["--fast", cls, new], "unknown option"),
        ("one folder only", [cls], "usage"),
        ("merge: shards graded with other points", ["--merge", new, j("s1"), j("s2_other_points")], "other points"),
        ("merge: shards of other classes", ["--merge", new, j("s1"), j("s2_other_class")], "other students"),
        ("merge: the same shard twice", ["--merge", new, j("s1"), j("s1")], "both shard 1/2"),
        ("merge: a shard missing", ["--merge", new, j("s1")], "shard 2/2 is missing"),
        ("merge: shards cut in other numbers", ["--merge", new, j("s1"), j("s1_of_3")], "different numbers"),
        ("merge: a folder that is no shard", ["--merge", new, j("s1"), j("empty")], "no class.json"),
        ("merge: a shard whose class.json names no I/N", ["--merge", new, j("s1"), j("s2_no_shard")],
         "names no shard I/N"),
        ("merge: a row whose status is none of the grader's", ["--merge", new, j("s1"), j("s2_unknown_status")],
         "holds a row this grader cannot read"),
        ("merge: a row with no student", ["--merge", new, j("s1"), j("s2_no_student")],
         "holds a row this grader cannot read"),
        ("--deadline without a zone", ["--deadline", "2026-12-01T23:59", cls, new], "has no zone"),
        ("--deadline as a date alone", ["--deadline", "2026-12-01", cls, new], "has no zone"),
        ("--deadline in words", ["--deadline", "next friday", cls, new], "--deadline takes an ISO 8601 time"),
        ("--deadline out of range", ["--deadline", "2026-13-45T10:00Z", cls, new], "--deadline takes"),
        ("--deadline with no value", [cls, new, "--deadline"], "--deadline takes"),
        ("--pushes that is not a folder", ["--deadline", "2026-12-01T23:59Z", "--pushes", "/nonexistent", cls, new],
         "--pushes takes a folder"),
        ("--pushes with no value", ["--deadline", "2026-12-01T23:59Z", cls, new, "--pushes"], "--pushes takes a folder"),
        ("--pushes without --deadline", ["--pushes", cls, cls, new], "give --deadline too"),
        ("--trusted-tags without --deadline", ["--trusted-tags", cls, new], "give --deadline too"),
        ("--late-penalty as a number", ["--late-penalty", "10", cls, new], "--late-penalty takes"),
        ("--late-penalty over 100%", ["--late-penalty", "150%/day", cls, new], "--late-penalty takes"),
        ("--late-penalty with a bad cap", ["--late-penalty", "10%/day,max=0%", cls, new], "--late-penalty takes"),
        ("--canvas-gradebook that does not exist", ["--canvas-gradebook", j("nowhere.csv"), cls, new],
         "--canvas-gradebook takes"),
        ("a Canvas export without Section", ["--canvas-gradebook", j("canvas_no_section.csv"), cls, new],
         "no Section column"),
        ("a Canvas export without ID", ["--canvas-gradebook", j("canvas_no_id.csv"), cls, new], "no ID column"),
        ("an empty Canvas export", ["--canvas-gradebook", j("empty.csv"), cls, new], "no Student, ID, Section"),
        ("a Canvas export in UTF-16", ["--canvas-gradebook", j("canvas_utf16.csv"), cls, new], "not a CSV file in UTF-8"),
        ("two Canvas columns that could be the lab", ["--canvas-gradebook", j("canvas_two_labs.csv"), cls, new],
         "--canvas-column"),
        ("--canvas-column without an export", ["--canvas-column", "Lab 04", cls, new], "give both"),
        ("--canvas-column naming no column of the export", ["--canvas-gradebook", j("canvas_two_labs.csv"),
                                                             "--canvas-column", "Lab 4", cls, new], "no assignment named"),
        ("a Moodle export without Email address", ["--moodle-gradebook", j("moodle_no_email.csv"), cls, new],
         "no Email address column"),
        ("--draw that is no number", ["--draw", "x", cls, new], "--draw takes"),
        ("--draw below 0", ["--draw", "-1", cls, new], "--draw takes"),
        ("--draw past 2^63-1", ["--draw", "9223372036854775808", cls, new], "--draw takes"),
        ("--draw with no value", [cls, new, "--draw"], "--draw takes"),
        ("--shard without --draw", ["--shard", "1/2", cls, new], "--shard needs --draw"),
        ("merge: shards of different draws of cases", ["--merge", new, j("s1_draw_1"), j("s2_draw_2")],
         "different draws"),
        ("an LMS export given to a shard", ["--shard", "1/2", "--moodle-gradebook", j("moodle_twice.csv"), cls, new],
         "give them to --merge"),
    ]
    # A record in a folder the grader cannot write (a read-only image layer, a build of another
    # user's): refused before anything is graded, not kept in vain after the pre-flight. Root
    # writes any folder, so for root the folder is made read-only in a mount namespace.
    os.makedirs(j("read_only"))
    graded_as = [sys.executable, GRADE_CLASS]
    cases.append(("--preflight-record in a folder the grader cannot write",
                  ["--prebuilt", "--preflight-record", j("read_only", "record"), cls, new], "is not yours to write"))
    # What the instructor asked of the isolation, in the environment: a mode it does not take.
    cases += [("LAB_SANDBOX=%s, no sandbox's name" % mode, [cls, new], "LAB_SANDBOX takes user, bwrap, unshare or none",
               dict(os.environ, LAB_SANDBOX=mode)) for mode in ("bogus", "USER", "user ")]
    # ... or user ids it cannot take: a system account's, a range upside down or too wide, not a range.
    cases += [("LAB_SANDBOX_UIDS=%s" % ids, [cls, new], "LAB_SANDBOX_UIDS takes FIRST-LAST",
               dict(os.environ, LAB_SANDBOX_UIDS=ids))
              for ids in ("0-100", "62000-61000", "61000-961000", "61000", "60000-70000", "a-b", "61000-61999x")]
    checks = []
    for what, args, says, *env in cases:
        before = snapshot(work)
        unwritable = project.Unwritable(j("read_only") if "read_only" in " ".join(args) else None)
        with unwritable if unwritable.folder else contextlib.nullcontext(unwritable):
            done = subprocess.run(unwritable.prefix + graded_as + args, capture_output=True, text=True,
                                  env=env[0] if env else None)
        lines = done.stderr.splitlines()
        ok = (done.returncode == 2 and done.stdout == "" and len(lines) == 1 and lines[0].startswith("grade_class: ")
              and says in lines[0] and snapshot(work) == before and not os.path.exists(new))
        checks.append(("%s: one line on stderr (%r), exit 2, nothing written" % (what, says), ok,
                       "exit %d, stdout %r, stderr %r, written: %s" % (done.returncode, done.stdout[:200], done.stderr[:400],
                                                                     sorted(set(snapshot(work)) - set(before)))))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
