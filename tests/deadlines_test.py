#!/usr/bin/env python3
"""grade_class.py grades a class at its deadline, says who was late and by how much, takes the
late penalty, and fills Canvas's and Moodle's gradebooks from their own exports.

usage: deadlines_test.py BUILD WORK_DIR

Three classes, made here from the lesson and the catalogue (make_class.py), each with what its
rows must say written down from how it was made (commit times, file names, submission times),
never from the grader's output:
  cloned repositories  commits before and after --deadline: each graded at its last commit at
                       or before it (a commit exactly at it counts), the commit named, later
                       commits said; a repository with commits only after it, or none, is "no
                       submission before the deadline"; a .git that points outside the
                       student's folder, a history that comes in part from a classmate's
                       (borrowed objects, a branch or packed refs linked to hers, grafts, a
                       linked objects folder), a commit of 10^9 paths, or a history with an
                       object missing, is that row's "history unreadable" and the class goes on; a repository whose own
                       configuration names programs (an fsmonitor, a signature checker, a
                       pager, hooks) runs none of them. A commit made after the deadline
                       but dated before it is graded as on time, and its late column says the
                       time is a commit date, which the student sets (the summary says so
                       too); Classroom 50's submission tags, where a repository has them,
                       decide instead: the last tag at or before the deadline is graded, a
                       later tag is said, a backdated commit fools nothing, a submit/ tag
                       not of the workflow's form is said and not counted, and the tags are
                       called the student's own claim (a student can push them). Canvas's export (an existing Lab 04
                       column worth 10 points: scaled) and Moodle's (matched by ID number,
                       written by email, in percent) are filled.
  pushes               times a student cannot write: late work under a tag the student
                       pushed by hand, backdated (vic: his commit honestly dated, a
                       contradiction; wes: his commit backdated too, as in tag mode), graded
                       without a record of the pushes (on time, but "the student's own
                       claim", the contradiction named and counted) and with GitHub's record
                       (--pushes, in the documented shape of the repository activity API, as
                       `gh api --paginate` and `--slurp` save it): both graded at their on-time
                       push, the late push said; a record that is not JSON, another
                       repository's, or missing is said in its row, timed by its tags
                       (--trusted-tags: the workflow's).
  Canvas's download    <login>_LATE_ and <login>_late_ files: late, one day of --late-penalty
                       taken; a new column in Canvas's export, its Points Possible the lab's.
  Gradescope's export  :created_at: before and 25 hours after --deadline: on time, and late by
                       1 d 1 h, two days of the penalty taken.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import time

import checklist
import make_class
import project

GRADE_CLASS = os.path.join(project.ROOT, "grader", "grade_class.py")
DEADLINE = "2026-12-01T23:59:00-05:00"
EPOCH = 1796187540  # the deadline, in seconds since 1970 (2026-12-02T04:59:00Z)
HOUR = 3600
BUILD = None  # the project's build, which the grader builds its runner in


def commit(repo, kind, at, path="lab04_attention.cpp"):
    """Commits the lab of this kind, made at EPOCH + at seconds; returns the commit's hash."""
    target = os.path.join(repo, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as f:
        f.write(make_class.lab_text(kind))
    when = "@%d +0000" % (EPOCH + at)
    env = dict(os.environ, GIT_COMMITTER_DATE=when, GIT_AUTHOR_DATE=when)
    git = ["git", "-C", repo, "-c", "user.name=student", "-c", "user.email=s@example.edu"]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", kind], check=True, env=env)
    return subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def tag(repo, name, commit_hash):
    """A lightweight tag, as Classroom 50's workflow makes its submit/ tags."""
    subprocess.run(["git", "-C", repo, "tag", name, commit_hash], check=True)


def submit_tag(at, commit_hash):
    """Classroom 50's tag for a push graded at EPOCH + at: submit/<UTC time>-<7 hex>."""
    return "submit/%s-%s" % (time.strftime("%Y-%m-%dT%H-%M-%SZ", time.gmtime(EPOCH + at)), commit_hash[:7])


def repository(folder, login, commits):
    repo = os.path.join(folder, "lab04-attention-" + login)
    os.makedirs(repo)
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
    return repo, [commit(repo, kind, at) for kind, at in commits]


def borrowing_repositories(folder, alice):
    """Repositories whose history comes, in part, from alice's, each in its own way: {login: the
    .git file that does it}. None may be graded on her commit; each is refused with its reason."""
    made = {}
    # kim: alice's objects borrowed, and her branch a link to alice's
    kim, _ = repository(folder, "kim", [("no_scale", -3 * HOUR)])
    write(os.path.join(kim, ".git", "objects", "info", "alternates"), os.path.join(alice, ".git", "objects") + "\n")
    ref = os.path.join(kim, ".git", "refs", "heads", "main")
    os.remove(ref)
    os.symlink(os.path.join(alice, ".git", "refs", "heads", "main"), ref)
    made["kim"] = "link"
    # lou: alice's objects borrowed by a relative path, his branch alice's commit (a copy, no link)
    lou, _ = repository(folder, "lou", [("no_scale", -3 * HOUR)])
    write(os.path.join(lou, ".git", "objects", "info", "alternates"),
          "# borrowed\n" + os.path.relpath(os.path.join(alice, ".git", "objects"), os.path.join(lou, ".git", "objects")) + "\n")
    alice_main = subprocess.run(["git", "-C", alice, "rev-parse", "HEAD~1"], capture_output=True, text=True).stdout
    write(os.path.join(lou, ".git", "refs", "heads", "main"), alice_main)
    made["lou"] = "alternates"
    # max: grafts that give his commit alice's as its parent
    mx, max_commits = repository(folder, "max", [("no_scale", -3 * HOUR)])
    write(os.path.join(mx, ".git", "info", "grafts"), "%s %s\n" % (max_commits[0], alice_main.strip()))
    made["max"] = "grafts"
    # ned: his packed refs a link to a file outside his folder naming alice's commit
    ned, _ = repository(folder, "ned", [("no_scale", -3 * HOUR)])
    subprocess.run(["git", "-C", ned, "pack-refs", "--all"], check=True)
    outside = os.path.join(os.path.dirname(folder), "packed-refs-naming-alice")
    write(outside, "# pack-refs with: peeled fully-peeled sorted \n%s refs/heads/main\n" % alice_main.strip())
    os.remove(os.path.join(ned, ".git", "packed-refs"))
    os.symlink(outside, os.path.join(ned, ".git", "packed-refs"))
    made["ned"] = "link"
    # ole: a folder .git that is a link to alice's objects folder
    ole, _ = repository(folder, "ole", [("no_scale", -3 * HOUR)])
    shutil.rmtree(os.path.join(ole, ".git", "objects"))
    os.symlink(os.path.join(alice, ".git", "objects"), os.path.join(ole, ".git", "objects"))
    made["ole"] = "link"
    return made


def tree_bomb(folder):
    """pia's only commit before the deadline holds 10^9 paths (ten trees of ten, nine deep: a
    few kB of objects) beside the lesson; her later commit is the lesson alone."""
    pia, _ = repository(folder, "pia", [])
    git = ["git", "-C", pia]
    run = lambda *a, **kw: subprocess.run(git + list(a), check=True, capture_output=True, text=True, **kw).stdout.strip()
    blob = subprocess.run(git + ["hash-object", "-w", "--stdin"], input=make_class.lab_text("lesson"), check=True,
                          capture_output=True, text=True).stdout.strip()
    tree = run("mktree", input="".join("100644 blob %s\tf%d\n" % (blob, i) for i in range(10)))
    for _ in range(8):
        tree = run("mktree", input="".join("040000 tree %s\td%d\n" % (tree, i) for i in range(10)))
    root = run("mktree", input="040000 tree %s\tbomb\n100644 blob %s\tlab04_attention.cpp\n" % (tree, blob))
    when = "@%d +0000" % (EPOCH - HOUR)
    env = dict(os.environ, GIT_COMMITTER_DATE=when, GIT_AUTHOR_DATE=when, GIT_AUTHOR_NAME="s", GIT_AUTHOR_EMAIL="s@x",
               GIT_COMMITTER_NAME="s", GIT_COMMITTER_EMAIL="s@x")
    bomb = run("commit-tree", root, "-m", "bomb", env=env)
    run("update-ref", "refs/heads/main", bomb)
    commit(pia, "lesson", HOUR)


def write(path, text):
    with open(path, "w", newline="") as f:
        f.write(text)


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def grade(submissions, grades, *options):
    done = subprocess.run([sys.executable, GRADE_CLASS, "-j", "2", "--build", BUILD] + list(options)
                          + [submissions, grades],
                          capture_output=True, text=True)
    rows = {}
    if os.path.exists(os.path.join(grades, "grades.csv")):
        with open(os.path.join(grades, "grades.csv"), newline="", encoding="utf-8") as f:
            rows = {r["student"]: r for r in csv.DictReader(f)}
    summary = done.stdout
    return done, rows, summary


def repositories_class(work, checks):
    folder = os.path.join(work, "repositories")
    os.makedirs(folder)
    alice, alice_commits = repository(folder, "alice", [("lesson", -24 * HOUR), ("compile_error", 10 * HOUR)])
    repository(folder, "bob", [("lesson", 26 * HOUR)])
    carol, carol_commits = repository(folder, "carol", [("softmax_over_dim_0", -48 * HOUR), ("lesson", HOUR)])
    _, dan_commits = repository(folder, "dan", [("no_scale", -HOUR), ("lesson", 0)])
    os.makedirs(os.path.join(folder, "lab04-attention-erin"))
    write(os.path.join(folder, "lab04-attention-erin", ".git"), "gitdir: %s\n" % os.path.join(alice, ".git"))
    write(os.path.join(folder, "lab04-attention-erin", "lab04_attention.cpp"), make_class.lab_text("lesson"))
    fay = os.path.join(folder, "lab04-attention-fay")
    subprocess.run(["git", "init", "-q", fay], check=True)  # accepted, never pushed to
    gus, gus_commits = repository(folder, "gus", [("lesson", -HOUR)])
    objects = os.path.join(gus, ".git", "objects", gus_commits[0][:2])
    os.remove(os.path.join(objects, gus_commits[0][2:]))  # its one commit's object is gone
    # A repository whose configuration points git at programs of the student's.
    # ivy made her right lab an hour after the deadline and dated it an hour before it.
    repository(folder, "ivy", [("no_scale", -3 * HOUR), ("lesson", -HOUR)])
    # jay's repository is Classroom 50's: each graded push has its submit/ tag, made by its
    # workflow. His right lab was pushed 3 hours late, its commit dated an hour early; a tag of
    # another form and one whose hash is not its commit's are not the workflow's.
    jay, jay_commits = repository(folder, "jay", [("no_scale", -2 * HOUR), ("lesson", -HOUR)])
    tag(jay, submit_tag(-2 * HOUR + 60, jay_commits[0]), jay_commits[0])
    tag(jay, submit_tag(3 * HOUR, jay_commits[1]), jay_commits[1])
    tag(jay, "submit/before-the-deadline", jay_commits[1])
    tag(jay, "submit/2026-12-01T00-00-00Z-0000000", jay_commits[1])
    hal, hal_commits = repository(folder, "hal", [("lesson", -2 * HOUR)])
    marker = os.path.join(work, "hal-ran-a-program")
    script = os.path.join(hal, "run.sh")
    write(script, "#!/bin/sh\ntouch %s\n" % marker)
    os.chmod(script, 0o755)
    with open(os.path.join(hal, ".git", "config"), "a") as f:
        f.write("[core]\n\tfsmonitor = %s\n\tpager = %s\n\thooksPath = %s\n[log]\n\tshowSignature = true\n"
                "[gpg]\n\tprogram = %s\n[diff]\n\texternal = %s\n" % (script, script, hal, script, script))
    for hook in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction"):
        shutil.copy(script, os.path.join(hal, hook))
        shutil.copy(script, os.path.join(hal, ".git", "hooks", hook))
    borrowers = borrowing_repositories(folder, alice)
    tree_bomb(folder)
    canvas = os.path.join(work, "canvas_repositories.csv")
    write(canvas, "Student,ID,SIS User ID,SIS Login ID,Section,Lab 03 (41),Lab 04: attention (42),Current Score\n"
                  "    Points Possible,,,,,5.00,10.00,(read only)\n"
                  "\"Liddell, Alice\",101,S101,alice,A,5,,100\n\"Brown, Bob\",102,S102,bob,A,4,3,80\n"
                  "\"Wu, Carol\",103,S103,carol,A,3,,60\n\"Dee, Dan\",104,S104,dan,A,2,,40\n"
                  "\"Zed, Zoe\",105,S105,zoe,A,1,,20\n")
    moodle = os.path.join(work, "moodle_repositories.csv")
    write(moodle, "First name,Last name,ID number,Institution,Department,Email address,Lab 03 (Real)\n"
                  "Alice,Liddell,alice,U,CS,alice@uni.example,5\nCarol,Wu,carol,U,CS,carol@uni.example,3\n"
                  "Dan,Dee,dan,U,CS,,2\n"
                  "Yan,Yu,yan,U,CS,yan@uni.example,4\n")
    grades = os.path.join(work, "repositories-grades")
    done, rows, summary = grade(folder, grades, "--deadline", DEADLINE, "--late-penalty", "10%/day,max=30%",
                                "--canvas-gradebook", canvas, "--moodle-gradebook", moodle)
    checks.append(("cloned repositories: graded (exit 0), a row each",
                   done.returncode == 0 and sorted(rows) == sorted(["alice", "bob", "carol", "dan", "erin", "fay", "gus",
                                                                    "hal", "ivy", "jay", "pia"] + list(borrowers)),
                   "exit %d, stderr %r, rows %s" % (done.returncode, done.stderr[-400:], sorted(rows))))
    if not rows:
        return
    r = rows.get("alice", {})
    checks.append(("alice: graded at her commit before the deadline (the lesson: 7/7), not at the later one that "
                   "does not compile; the commit named, the later one said, no penalty",
                   r.get("score") == "7" and r.get("status") == "graded" and r.get("commit", "").startswith(alice_commits[0][:12])
                   and "1 later commit not graded" in r.get("late", "") and "10 h" in r.get("late", ""), r))
    r = rows.get("bob", {})
    checks.append(("bob: commits only after the deadline: no submission before the deadline, score 0, the commit's "
                   "lateness said", r.get("status") == "no submission before the deadline" and r.get("score") == "0"
                   and "1 d 2 h" in r.get("late", ""), r))
    r = rows.get("carol", {})
    checks.append(("carol: graded at her mistake before the deadline (softmax over dimension 0), not at the right lab "
                   "an hour after it", r.get("status") == "graded" and r.get("score") not in ("7", None)
                   and "dimension 0" in r.get("diagnosis", "") and r.get("commit", "").startswith(carol_commits[0][:12]),
                   r))
    r = rows.get("dan", {})
    checks.append(("dan: a commit exactly at the deadline is on time: graded there (7/7), not at the one an hour before",
                   r.get("score") == "7" and r.get("commit", "").startswith(dan_commits[1][:12])
                   and r.get("late", "").startswith("on time"), r))
    r = rows.get("ivy", {})
    checks.append(("ivy: a commit dated before the deadline is graded (7/7), and her late column says its time is a "
                   "commit date, which the student sets", r.get("score") == "7"
                   and "commit dates, which the student sets" in r.get("late", ""), r))
    r = rows.get("jay", {})
    checks.append(("jay: Classroom 50's tags decide: graded at the push tagged before the deadline (no scale: 6), not "
                   "at the backdated commit tagged 3 hours after it; the late column says the later submission, the "
                   "tags as the source (the student's own: a claim), the tag not of the workflow's form, and the "
                   "tag on another commit than it names, as a contradiction",
                   r.get("score") == "6" and r.get("commit", "").startswith(jay_commits[0][:12])
                   and "1 later submission not graded, the last 3 h after the deadline" in r.get("late", "")
                   and "the student's own submit/ tags" in r.get("late", "")
                   and "1 submit/ tag not of the form" in r.get("late", "")
                   and "names commit 0000000 but is on commit" in r.get("late", ""), r))
    checks.append(("the summary says how many repositories are timed by times the students write: 6 by commit dates "
                   "alone, 1 by tags", "Times: 7 of the repositories are timed by times the students write themselves "
                   "(6 by their commit dates alone (git commit --date), 1 by submit/ tags they can push themselves)"
                   in summary, summary[:1500]))
    r = rows.get("erin", {})
    checks.append(("erin: a .git that points outside her folder is her row's 'history unreadable', never graded",
                   r.get("status") == "history unreadable" and "outside" in r.get("diagnosis", "") and r.get("score") == "0",
                   r))
    alice_hashes = [h[:12] for h in alice_commits]
    for login, way in sorted(borrowers.items()):
        r = rows.get(login, {})
        checks.append(("%s: a history that comes in part from alice's (%s) is his row's 'history unreadable' with "
                       "the reason, never graded on her commit" % (login, way),
                       r.get("status") == "history unreadable" and r.get("score") == "0"
                       and not any(h in r.get("commit", "") + r.get("diagnosis", "") for h in alice_hashes)
                       and {"alternates": "borrowed from another repository", "grafts": "grafts",
                            "link": "a link to a file outside"}[way] in r.get("diagnosis", ""), r))
    r = rows.get("pia", {})
    checks.append(("pia: a commit of 10^9 paths is her row's 'history unreadable' (more files than are read), and "
                   "the class goes on", r.get("status") == "history unreadable" and "more than" in r.get("diagnosis", ""),
                   r))
    r = rows.get("fay", {})
    checks.append(("fay: a repository with no commit is 'no submission before the deadline'",
                   r.get("status") == "no submission before the deadline", r))
    r = rows.get("gus", {})
    checks.append(("gus: a history with its commit's object missing is his row's 'history unreadable'; the class goes on",
                   r.get("status") == "history unreadable" and "git could not read it" in r.get("diagnosis", ""), r))
    r = rows.get("hal", {})
    checks.append(("hal: a repository configured to run the student's programs (fsmonitor, pager, gpg, diff, hooks) "
                   "is graded (7/7) and runs none of them", r.get("score") == "7" and not os.path.exists(marker),
                   (r, os.path.exists(marker))))
    with open(os.path.join(grades, "feedback", "alice.txt")) as f:
        feedback = f.read()
    checks.append(("alice's feedback names the commit graded", alice_commits[0][:12] in feedback, feedback[-400:]))
    # Canvas: the Lab 04 column (10 points) filled, scaled; bob (not graded) left as Canvas had him.
    table = read_csv(os.path.join(grades, "canvas-import.csv"))
    with open(canvas, newline="") as f:
        original = list(csv.reader(f))
    column = original[0].index("Lab 04: attention (42)")
    carol_points = round(float(rows["carol"]["score"]) * 10 / 7, 2)
    want = [row[:] for row in original]
    for i, value in ((2, "10"), (4, "%g" % carol_points), (5, "10")):
        want[i][column] = value
    checks.append(("Canvas's export comes back as it was, its Lab 04 column filled for alice, carol and dan in its "
                   "10 points, bob's 3 left as Canvas had it (not graded), zoe's cell empty", table == want,
                   "got %s, want %s" % (table, want)))
    checks.append(("the summary lists the students Canvas's export and the class do not share",
                   "not in Canvas's export: erin, fay, gus, hal, ivy, jay, kim, lou, max, ned, ole, pia" in summary and "not in the class: Zed, Zoe" in summary,
                   summary[-900:]))
    table = read_csv(os.path.join(grades, "moodle-import.csv"))
    want = [["Email address", "Lab 04: self-attention"], ["alice@uni.example", "100"],
            ["carol@uni.example", "%g" % round(float(rows["carol"]["score"]) * 100 / 7, 2)]]
    checks.append(("Moodle's file: an email address and the lab's percent for each student matched (by ID number) "
                   "and graded, no one else", table == want, "got %s, want %s" % (table, want)))
    checks.append(("dan, matched in Moodle's export but with no email address there, is left out and named in the "
                   "summary", "no email address for them, so left out: dan." in summary, summary[-900:]))


def canvas_class(work, checks):
    folder = os.path.join(work, "canvas")
    os.makedirs(folder)
    for name, ident in (("annlee_LATE_11_901", "11"), ("benkim_late_12_902", "12"), ("catnoor_13_903", "13")):
        write(os.path.join(folder, name + "_lab04_attention.cpp"), make_class.lab_text("lesson"))
    export = os.path.join(work, "canvas_download.csv")
    write(export, "\ufeffStudent,ID,SIS Login ID,Section,Lab 02 (7)\n"
                  "    Points Possible,,,,2.00\n\"Lee, Ann\",11,al,S,2\n\"Kim, Ben\",12,bk,S,1\n\"Noor, Cat\",13,cn,S,2\n")
    grades = os.path.join(work, "canvas-grades")
    done, rows, summary = grade(folder, grades, "--late-penalty", "10%/day", "--canvas-gradebook", export)
    checks.append(("Canvas's download: graded (exit 0)", done.returncode == 0 and len(rows) == 3,
                   "exit %d, stderr %r" % (done.returncode, done.stderr[-400:])))
    for login, late in (("annlee", True), ("benkim", True), ("catnoor", False)):
        r = rows.get(login, {})
        checks.append(("%s (%s): %s" % (login, "_LATE_ or _late_" if late else "on time", "late, one day's 10% taken: "
                                        "6.3" if late else "7, nothing taken"),
                       r.get("score") == ("6.3" if late else "7") and bool(r.get("late")) == late
                       and ("marked so by Canvas" in r.get("late", "")) == late, r))
    table = read_csv(os.path.join(grades, "canvas-import.csv"))
    checks.append(("Canvas's export comes back with a new column (no Lab 04 there): its Points Possible the lab's "
                   "7, each student's score after the penalty, the byte-order mark kept",
                   [r[-1] for r in table] == ["Lab 04: self-attention", "7", "6.3", "6.3", "7"]
                   and open(os.path.join(grades, "canvas-import.csv"), "rb").read(3) == b"\xef\xbb\xbf", table))


def gradescope_class(work, checks):
    folder = os.path.join(work, "gradescope")
    for sub in ("submission_1", "submission_2"):
        os.makedirs(os.path.join(folder, sub))
        write(os.path.join(folder, sub, "lab04_attention.cpp"), make_class.lab_text("lesson"))
    write(os.path.join(folder, "submission_metadata.yml"),
          "submission_1:\n  :submitters:\n  - :name: Ann\n    :sid: '901'\n    :email: ann@x.edu\n"
          "  :created_at: 2026-12-02 03:59:00.123456000 Z\n  :status: processed\n"
          "submission_2:\n  :submitters:\n  - :name: Ben\n    :sid: '902'\n    :email: ben@x.edu\n"
          "  :created_at: '2026-12-03T00:59:00-05:00'\n  :status: processed\n")
    grades = os.path.join(work, "gradescope-grades")
    done, rows, _ = grade(folder, grades, "--deadline", "2026-12-01T23:59:00-05:00", "--late-penalty", "10%/day")
    checks.append(("Gradescope's export: graded (exit 0)", done.returncode == 0 and sorted(rows) == ["901", "902"],
                   "exit %d, stderr %r" % (done.returncode, done.stderr[-400:])))
    r = rows.get("901", {})
    checks.append(("Gradescope, :created_at: an hour before the deadline: on time, 7, by Gradescope's upload time",
                   r.get("score") == "7" and r.get("late") == "on time (by Gradescope's upload time)", r))
    r = rows.get("902", {})
    checks.append(("Gradescope, :created_at: 25 hours after the deadline: late by 1 d 1 h, two days' 10% taken: 5.6",
                   r.get("score") == "5.6" and "late by 1 d 1 h" in r.get("late", "")
                   and "by Gradescope's upload time" in r.get("late", ""), r))


def activity(after, at, kind="push", before="0" * 40, ref="refs/heads/main"):
    """One activity as GitHub's repository activity API documents its answer (GET
    /repos/{owner}/{repo}/activity, docs.github.com/en/rest/repos/repos#list-repository-activities:
    id, node_id, before, after, ref, timestamp, activity_type, actor), pushed at EPOCH + at."""
    return {"id": 1000 + at % 997, "node_id": "RA_kwDOtest%d" % abs(at), "before": before, "after": after, "ref": ref,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(EPOCH + at)), "activity_type": kind,
            "actor": {"login": "student", "id": 583231, "type": "User", "site_admin": False}}


def pushes_class(work, checks):
    """Times a student cannot write: a class whose late work carries tags the students pushed
    themselves, graded without and then with GitHub's record of the pushes (--pushes)."""
    import json
    folder, records = os.path.join(work, "pushes"), os.path.join(work, "pushes-records")
    os.makedirs(folder)
    os.makedirs(records)
    record = lambda login, text: write(os.path.join(records, "lab04-attention-%s.json" % login), text)
    # una: honest, on time; the workflow's tag a minute after her push. (gh api --slurp: pages in a list)
    una, una_commits = repository(folder, "una", [("lesson", -2 * HOUR)])
    tag(una, submit_tag(-2 * HOUR + 60, una_commits[0]), una_commits[0])
    record("una", json.dumps([[activity(una_commits[0], -2 * HOUR + 30, "branch_creation")]]))
    # vic: an on-time mistake (no scale), then the lesson committed 3 h late, honestly dated, and a
    # tag he pushed by hand that says an hour before the deadline. (gh api --paginate: pages in a row)
    vic, vic_commits = repository(folder, "vic", [("no_scale", -2 * HOUR), ("lesson", 3 * HOUR)])
    tag(vic, submit_tag(-2 * HOUR + 60, vic_commits[0]), vic_commits[0])
    tag(vic, submit_tag(-HOUR, vic_commits[1]), vic_commits[1])
    record("vic", json.dumps([activity(vic_commits[1], 3 * HOUR + 30, before=vic_commits[0])])
           + "\n" + json.dumps([activity(vic_commits[0], -2 * HOUR + 30, "branch_creation")]) + "\n")
    # wes: the same in tag mode, with the late commit dated an hour before the deadline too, so
    # that his repository holds no contradiction: only the server's record shows it.
    wes, wes_commits = repository(folder, "wes", [("no_scale", -2 * HOUR), ("lesson", -HOUR)])
    tag(wes, submit_tag(-2 * HOUR + 60, wes_commits[0]), wes_commits[0])
    tag(wes, submit_tag(-HOUR + 60, wes_commits[1]), wes_commits[1])
    record("wes", json.dumps([activity(wes_commits[1], 3 * HOUR, before=wes_commits[0]),
                              activity(wes_commits[0], -2 * HOUR + 30, "branch_creation"),
                              activity("0" * 40, 4 * HOUR, "branch_deletion", ref="refs/heads/draft")]))
    # xia: a record that is not JSON; yul: another repository's record; zed: none. Each is timed
    # by its tags, which --trusted-tags (the second grading) says only the workflow writes.
    for login in ("xia", "yul", "zed"):
        repo, commits = repository(folder, login, [("lesson", -2 * HOUR)])
        tag(repo, submit_tag(-2 * HOUR + 60, commits[0]), commits[0])
        if login == "xia":  # a second tag on the same commit, of another time
            tag(repo, submit_tag(-2 * HOUR + 120, commits[0]), commits[0])
    record("xia", "<html>rate limited</html>")
    record("yul", json.dumps([activity("ab" * 20, -2 * HOUR)]))

    claims = os.path.join(work, "pushes-grades-without-records")
    done, rows, summary = grade(folder, claims, "--deadline", DEADLINE, "--no-similarity")
    checks.append(("tags students push themselves: graded (exit 0), a row each", done.returncode == 0
                   and sorted(rows) == ["una", "vic", "wes", "xia", "yul", "zed"],
                   "exit %d, stderr %r, rows %s" % (done.returncode, done.stderr[-400:], sorted(rows))))
    claim = "the student's own submit/ tags"
    for login in ("vic", "wes"):
        r = rows.get(login, {})
        checks.append(("%s, without a record of the pushes: a late commit under a backdated tag is not called plainly on "
                       "time: the late column says the time is the student's own claim" % login,
                       claim in r.get("late", "") and "the student's claim" in r.get("late", ""), r))
    r = rows.get("vic", {})
    checks.append(("vic: his tag's time comes before his commit's date: the contradiction is named in the row and "
                   "counted in the summary", "times that contradict each other" in r.get("late", "")
                   and "after its submit/ tag's time" in r.get("late", "")
                   and re.search(r"Contradictions: 2 of the repositories.*vic", summary) is not None,
                   (r.get("late"), summary[:1500])))
    r = rows.get("xia", {})
    checks.append(("xia: two submit/ tags of different times on one commit: named as a contradiction",
                   "has 2 submit/ tags of different times" in r.get("late", ""), r))
    r = rows.get("una", {})
    checks.append(("una, honest: on time, no contradiction", r.get("late", "").startswith("on time")
                   and "contradict" not in r.get("late", ""), r))
    checks.append(("the summary counts the repositories timed by times the students write (six, by their tags)",
                   "Times: 6 of the repositories are timed by times the students write themselves (6 by submit/ tags"
                   in summary, summary[:1500]))

    pushed = os.path.join(work, "pushes-grades-with-records")
    done, rows, summary = grade(folder, pushed, "--deadline", DEADLINE, "--no-similarity", "--pushes", records,
                                "--trusted-tags")
    checks.append(("with --pushes: graded (exit 0), a row each", done.returncode == 0 and len(rows) == 6,
                   "exit %d, stderr %r" % (done.returncode, done.stderr[-400:])))
    for login, commits in (("vic", vic_commits), ("wes", wes_commits)):
        r = rows.get(login, {})
        checks.append(("%s, with GitHub's record of the pushes: graded at the push before the deadline (no scale: 6), "
                       "the late push said, the record named as the source" % login,
                       r.get("score") == "6" and r.get("commit", "").startswith(commits[0][:12])
                       and "1 later push not graded, the last 3 h" in r.get("late", "")
                       and "GitHub's record of each push" in r.get("late", ""), r))
    r = rows.get("wes", {})
    checks.append(("wes: his tag's time comes before GitHub's first push of its commit: named as a contradiction",
                   "was first pushed at" in r.get("late", "") and "after its submit/ tag's time" in r.get("late", ""), r))
    r = rows.get("una", {})
    checks.append(("una: on time by the record (7/7)", r.get("score") == "7" and r.get("late", "").startswith("on time")
                   and "GitHub's record" in r.get("late", ""), r))
    for login, why in (("xia", "is not JSON"), ("yul", "names no commit of this repository"),
                       ("zed", "--pushes has no lab04-attention-zed.json")):
        r = rows.get(login, {})
        checks.append(("%s: a record that cannot be used (%s): the row says so and is timed by its tags, which "
                       "--trusted-tags says only the workflow writes; graded (7/7)" % (login, why),
                       why in r.get("late", "") and "only Classroom 50's workflow may write" in r.get("late", "")
                       and r.get("score") == "7", r))
    checks.append(("with --pushes and --trusted-tags, no repository is timed by a time its student writes",
                   "Times:" not in summary, summary[:1500]))


def main(argv):
    if len(argv) != 2:
        print("deadlines_test: usage: deadlines_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    global BUILD
    BUILD, work = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    checks = []
    repositories_class(work, checks)
    pushes_class(work, checks)
    canvas_class(work, checks)
    gradescope_class(work, checks)
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
