#!/usr/bin/env python3
"""grade_class.py grades a class as check_lab.py --grade grades each lab alone, and says
what the class got wrong.

usage: grade_class_test.py BUILD WORK_DIR LINK_TARGET LINK_RECORD
  BUILD        the project's build folder, of any generator: each lab is also built alone with
               the build's own compile and link commands (build_commands)
  WORK_DIR     a folder to make the classes in (emptied first)
  LINK_TARGET  the build's target whose link writes the lab's link command into LINK_RECORD

A class made by make_class.py (the lesson, forms of it, one and two known mistakes, a copy
slip, a compile error, a hang, a crash, a lab that kills its grader, one that floods processes
and one that forges its runner's answers (also graded in bubblewrap), no lab, two labs, a file
that is not text, an empty and an enormous one), and the same labs as Canvas's and Gradescope's
downloads (a group of two). Checks: every student has a row, with the status make_class.py
gave its lab; each distinct lab's score and steps equal check_lab.py --grade of that lab built
alone as a program; the summary counts each known mistake as often as make_class.py made it;
a feedback file per student; grades.csv reads back through Python's csv module, every column;
two shards merged equal the unsharded gradebook; a shard's files are readable by the grader alone,
the merged ones have the modes of its umask. Runs inside a PID namespace of its own (the
hostile lab calls kill(-1)); where the sandbox cannot isolate a lab, that lab is left out.
Skipped, with the reason, where the grader refuses the build (as root, a build or project
that other users cannot enter: it compiles each lab as a user of its own there).
"""
import csv
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import checklist
import make_class
import project
from built_alone import build_alone, build_commands

from lab04.grader.status import Status  # noqa: E402

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")
DRAW = "20261202"  # the draw of cases every class here is graded on, and each lab alone
MAKE_CLASS = os.path.join(project.ROOT, "tests", "make_class.py")
CHECK_LAB = os.path.join(project.CHECKER, "check_lab.py")


def in_pid_namespace(argv):
    """Runs this test again inside a PID namespace of its own; None when it is there already."""
    if os.environ.get("LAB04_CLASS_NAMESPACE") == "1":
        return None
    for isolate in (["unshare", "--pid", "--fork", "--mount-proc"],
                    ["unshare", "--pid", "--fork", "--mount-proc", "--propagation", "unchanged"]):
        if subprocess.run(isolate + ["true"], capture_output=True).returncode == 0:
            env = dict(os.environ, LAB04_CLASS_NAMESPACE="1")
            return subprocess.run(isolate + [sys.executable, os.path.abspath(__file__)] + argv, env=env).returncode
    return "none"


def grade_class(*args):
    return subprocess.run([sys.executable, GRADE_CLASS] + list(args), capture_output=True, text=True)


def alone_grade(lab, timeout):
    """(score, steps) of check_lab.py --grade LAB: the steps' points from its STEP lines."""
    done = subprocess.run([sys.executable, CHECK_LAB, "--grade", "--draw", DRAW, "--timeout", str(timeout), lab],
                          capture_output=True, text=True)
    steps = [float(m.group(1)) for m in re.finditer(r"^STEP \d  .*? (\d+(?:\.\d+)?)/\d", done.stdout, re.M)]
    score = re.search(r"^score: ([\d.]+)/", done.stdout, re.M)
    return (float(score.group(1)) if score else None), steps, "\n".join(
        line.strip() for line in done.stdout.splitlines() if " wrong in case " in line)[:600] or done.stderr[-300:]


def as_a_cell(text):
    """What the docs promise a CSV cell of student data holds: control characters as \\xNN, and
    a leading apostrophe before what could start a formula."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: "\\x%02x" % ord(m.group()), text)
    return "'" + text if text[:1] in "=+-@" and text else text


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def mistake_counts(summary):
    return {m.group(2): int(m.group(1)) for m in re.finditer(r": (\d+) students? \(.*\) \[([\w+]+)\]$", summary, re.M)}


def picture_shown(grades, summary):
    """Whether GRADES/class.png is a PNG of some size and the summary shows it before its first
    section, with words for what it shows."""
    try:
        with open(os.path.join(grades, "class.png"), "rb") as f:
            head = f.read(24)
    except OSError:
        return False
    first = summary.split("\n## ")[0]
    return head[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(head[16:20], "big") >= 400 and re.search(
        r"^!\[The class at a glance: \d+ students' scores from .+\]\(class\.png\)$", first, re.M) is not None


def main(argv):
    if len(argv) != 4:
        print("grade_class_test: usage: grade_class_test.py BUILD WORK_DIR LINK_TARGET LINK_RECORD", file=sys.stderr)
        return 2
    again = in_pid_namespace(argv)
    if isinstance(again, int):
        return again
    from lab04.checker import sandbox
    from lab04.checker import sandbox_users
    box = sandbox.Sandbox("/bin/true")
    box.close()
    build, work = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    checks = []
    timeout = 5
    classes = {}
    for shape in ("folders", "canvas", "gradescope"):
        folder, manifest = os.path.join(work, shape), os.path.join(work, shape + ".json")
        subprocess.run([sys.executable, MAKE_CLASS, shape, folder, manifest], check=True)
        with open(manifest) as f:
            classes[shape] = json.load(f)
    if again == "none" or box.mode == "none":  # kill(-1) would reach this test's own processes
        print("the hostile labs (%s) are left out: %s" % (", ".join(make_class.HOSTILE),
              "no PID namespace can be made here" if again == "none" else box.isolation))
        for n, e in list(classes["folders"].items()):
            if e["kind"] in make_class.HOSTILE:
                shutil.rmtree(os.path.join(work, "folders", n))
                del classes["folders"][n]

    results = {}
    for shape in classes:
        grades = os.path.join(work, shape + "-grades")
        done = grade_class("--draw", DRAW, "--timeout", str(timeout), "--build", build, os.path.join(work, shape), grades)
        results[shape] = grades
        if done.returncode == 2 and "cannot enter" in done.stderr:
            print("SKIPPED: the class grader refuses this build: " + done.stderr.strip())
            return 77
        checks.append(("the %s class is graded: exit 0, its summary printed" % shape,
                       done.returncode == 0 and done.stdout.startswith("# Lab 04"), done.stderr[-2000:] or done.stdout[:500]))
        if done.returncode != 0:
            return checklist.report(checks)
        rows = {r["student"]: r for r in read_csv(os.path.join(grades, "grades.csv"))}
        manifest = classes[shape]
        checks.append(("%s: a row per student, and no other" % shape, sorted(rows) == sorted(manifest),
                       (sorted(rows), sorted(manifest))))
        wrong = ["%s: %s, expected %s" % (n, rows.get(n, {}).get("status"), e["status"]) for n, e in manifest.items()
                 if rows.get(n, {}).get("status") != e["status"]]
        checks.append(("%s: each row's status is its lab's" % shape, not wrong, wrong))
        missing = [n for n in manifest if not os.path.isfile(os.path.join(grades, "feedback", n + ".txt"))]
        checks.append(("%s: a feedback file per student" % shape, not missing, missing))
        expected = {}
        for e in manifest.values():
            for m in e["mistakes"]:
                expected[m] = expected.get(m, 0) + 1
        with open(os.path.join(grades, "summary.md")) as f:
            summary = f.read()
        nothing = [n for n, e in manifest.items() if e["kind"] == "computes_nothing"]
        if nothing:
            checks.append(("%s: a lab that computes nothing (q, k and v zeros, STEP 3 to 6 constants) scores no more "
                           "than the untouched starter's 2, its later steps not judged" % shape,
                           all(float(rows[n]["score"]) <= 2 for n in nothing),
                           [(rows[n]["score"], rows[n]["diagnosis"]) for n in nothing]))
        checks.append(("%s: the summary counts each known mistake as often as the class made it" % shape,
                       mistake_counts(summary) == expected, (mistake_counts(summary), expected)))
        checks.append(("%s: the picture of the class is a PNG, shown first in the summary, described in words" % shape,
                       picture_shown(grades, summary), summary[:600]))
        not_graded = {"no lab", "more than one lab", "empty file", "not a text file", "file too large"}
        graded = [n for n, e in manifest.items() if e["status"] not in not_graded]
        told = {int(m.group(1)): tuple(map(int, m.group(2, 3, 4, 5))) for m in re.finditer(
            r"^- STEP (\d), [^:]*: (\d+) of (\d+) right \(\d+%\), (\d+) wrong, (\d+) not reached$", summary, re.M)}
        step_counts = {}
        for k in range(1, 8):  # right: its point earned; never reached: a lab that did not compile, at least
            right = sum(1 for n in graded if float(rows[n]["STEP %d" % k]) == 1)
            unbuilt = sum(1 for n in graded if manifest[n]["status"] == "did not compile")
            got = told.get(k, (None,) * 4)
            step_counts[k] = (right, len(graded), got[2], got[3]) if got[2] is not None and got[3] >= unbuilt and \
                got[2] + got[3] == len(graded) - right else "%d right of %d, %d or more not reached" % (
                    right, len(graded), unbuilt)
        checks.append(("%s: each STEP's right, wrong and not reached add up to the graded labs" % shape,
                       told == step_counts, (told, step_counts)))
        with open(os.path.join(grades, "class.json")) as f:
            kept = {r["student"]: r for r in json.load(f)["rows"]}
        odd = sorted({r["status"] for r in kept.values()} - {s.value for s in Status})
        checks.append(("%s: every row's status is one of the fixed set (lab04/grader/status.py)" % shape, not odd, odd))
        bad = []
        for n, r in rows.items():
            want = kept[n]
            if list(r) != ["student", "id", "score", "max_score"] + ["STEP %d" % k for k in range(1, 8)] + [
                    "status", "late", "commit", "diagnosis"] \
                    or float(r["score"]) != want["score"] or r["diagnosis"] != as_a_cell(want["diagnosis"]) \
                    or r["late"] != as_a_cell(want.get("late", "")) or r["commit"] != as_a_cell(want.get("commit", "")) \
                    or [float(r["STEP %d" % k]) for k in range(1, 8)] != want["steps"]:
                bad.append(n)
        checks.append(("%s: grades.csv reads back through csv, every column as graded" % shape, not bad, bad))

    left = sandbox_users.left_behind() if os.geteuid() == 0 else []
    checks.append(("no process of a sandbox's user is left once the classes are graded (of the user ids no grader "
                   "holds: in a container, other tests' graders run beside this one)", not left, left))

    # The forger again, with the runner inside bubblewrap (a user's sandbox; here as root, whose
    # capabilities bubblewrap must drop): it earns what the same lab without the attack earns.
    if "forges_its_answer" in [e["kind"] for e in classes["folders"].values()] and subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True).returncode == 0:
        pair = os.path.join(work, "pair")
        for kind in ("forges_its_answer", "no_scale"):
            os.makedirs(os.path.join(pair, kind))
            with open(os.path.join(pair, kind, "lab04_attention.cpp"), "w") as f:
                f.write(make_class.lab_text(kind))
        done = subprocess.run([sys.executable, GRADE_CLASS, "--timeout", str(timeout), "--build", build, pair,
                               pair + "-grades"], capture_output=True, text=True, env=dict(os.environ, LAB_SANDBOX="bwrap"))
        got = {r["student"]: (r["score"], r["status"]) for r in read_csv(os.path.join(pair + "-grades", "grades.csv"))} \
            if done.returncode == 0 else done.stderr
        checks.append(("in bubblewrap, a lab that forges its runner's answers earns what it would without the attack",
                       isinstance(got, dict) and got["forges_its_answer"] == got["no_scale"] == ("6", "graded"), got))

    # Each distinct lab built alone and graded alone: the same score, step by step.
    folders = classes["folders"]
    rows = {r["student"]: r for r in read_csv(os.path.join(results["folders"], "grades.csv"))}
    firsts = {}
    for n, e in sorted(folders.items()):
        if e["kind"] and e["status"] != "did not compile":
            firsts.setdefault(e["kind"], n)
    alone = os.path.join(work, "alone")
    os.makedirs(alone)
    commands = build_commands(build, argv[2], os.path.abspath(argv[3]))
    checks.append(("the build says how it compiles and links the lab", not isinstance(commands, str), commands))
    if isinstance(commands, str):
        return checklist.report(checks)

    def one(kind):
        student = firsts[kind]
        source = next(os.path.join(t, "lab04_attention.cpp") for t, _, fs in os.walk(os.path.join(work, "folders", student))
                      if "lab04_attention.cpp" in fs)
        lab = os.path.join(alone, kind)
        if not build_alone(commands, source, lab):
            return kind, None, None, "it did not build alone"
        # Alone, each run loads LibTorch (about 1 s, several on a loaded machine), where the
        # class's runs are forked from it loaded: a time limit met while loading is no lab's.
        return (kind,) + alone_grade(lab, 4 * timeout)
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        graded_alone = list(pool.map(one, sorted(firsts)))
    differ = []
    for kind, score, steps, why in graded_alone:
        r = rows[firsts[kind]]
        mine = (float(r["score"]), [float(r["STEP %d" % k]) for k in range(1, 8)])
        if (score, steps) != mine:
            differ.append("%s (%s): the class says %s, --grade alone %s (%s; the class: %s)" % (
                firsts[kind], kind, mine, (score, steps), why, r["diagnosis"][:300]))
    checks.append(("each of %d distinct labs scores, step by step, what check_lab.py --grade gives it built alone"
                   % len(firsts), not differ, "\n".join(differ)))
    canvas = read_csv(os.path.join(results["canvas"], "grades.csv"))
    gs = {r["student"]: r for r in read_csv(os.path.join(results["gradescope"], "grades.csv"))}
    checks.append(("Gradescope: both members of the group get the group's grade",
                   gs.get("s1", {}).get("score") == gs.get("s2", {}).get("score") == "6", gs))
    checks.append(("Canvas: each student is named by login (a late file too)",
                   [r["student"] for r in canvas] == ["login0", "login1", "login2", "login3"], [r["student"] for r in canvas]))

    # Shards of a job array merge into the gradebook of one run.
    shards = []
    for i in (1, 2, 3):
        out = os.path.join(work, "shard%d" % i)
        done = grade_class("--draw", DRAW, "--shard", "%d/3" % i, "--timeout", str(timeout), "--build", build,
                           os.path.join(work, "folders"), out)
        shards.append(out)
        checks.append(("shard %d/3 is graded" % i, done.returncode == 0, done.stderr[-1000:]))
    merged = os.path.join(work, "merged")
    done = grade_class("--merge", merged, *shards)
    checks.append(("three shards merge", done.returncode == 0, done.stderr))
    if done.returncode == 0:
        problems = checklist.differing_files(merged, results["folders"])
        checks.append(("the merged shards equal the unsharded run: grades.csv, summary.md, every feedback file",
                       not problems, problems))
        # A shard's gradebook lies beside the next shards' labs (on shared storage): readable by
        # the grader alone; the merged one, the class done, takes the modes of the grader's umask.
        umask = os.umask(0)
        os.umask(umask)
        wrong = ["%s %o" % (os.path.relpath(p, work), stat.S_IMODE(os.lstat(p).st_mode))
                 for top in shards for p in paths_in(top) if stat.S_IMODE(os.lstat(p).st_mode) & 0o077]
        wrong += ["%s %o" % (os.path.relpath(p, work), stat.S_IMODE(os.lstat(p).st_mode)) for p in paths_in(merged)
                  if stat.S_IMODE(os.lstat(p).st_mode) != (0o777 if os.path.isdir(p) else 0o666) & ~umask]
        checks.append(("each shard's gradebook is readable by the grader alone (no mode bit for group or others); "
                       "the merged one has the modes of the grader's umask (%03o)" % umask, not wrong, wrong[:8]))
    return checklist.report(checks)


def paths_in(top):
    """top and every folder and file in it."""
    return [top] + [os.path.join(t, n) for t, dirs, names in os.walk(top) for n in dirs + names]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
