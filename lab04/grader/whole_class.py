"""whole_class.py: the class, graded: its students found, the build read once, a pool of
workers (one_student.py) that grade them after a pre-flight of the lesson, and the progress.

grade() returns the rows and what the class was graded on; it writes nothing (gradebook.py
does). Loads torch (the references are computed here once, and the workers inherit them):
import it after torch_python.with_torch().
"""
import glob
import hashlib
import json
import multiprocessing
import os
import shlex
import sys
import time

from lab04.checker import cases, isolation, kept_out, reference_attention, sandbox_users
from lab04.grader import compile_sandbox, deadlines, git_reading, gradebook, late_penalty, one_student, submissions
from lab04.grader.command_line import Usage
from lab04.grader.status import Status

ROOT = one_student.ROOT


def record_of_pushes(args, repo):
    """The server's record of repo's pushes in --pushes (REPOSITORY.json, named after its
    folder), as deadlines.read_pushes reads it, a late_penalty.Bad saying why it cannot be used, or
    None without --pushes."""
    if not args["pushes"]:
        return None
    name = os.path.basename(os.path.normpath(repo)) + ".json"
    path = os.path.join(args["pushes"], name)
    if not os.path.isfile(path):
        return late_penalty.Bad("--pushes has no %s" % submissions.readable(name)[:80])
    try:
        return deadlines.read_pushes(path)
    except late_penalty.Bad as e:
        return late_penalty.Bad("%s: %s" % (submissions.readable(name)[:80], e))


def the_class(args):
    """The students to grade: the class in SUBMISSIONS, or with --gradescope the one submission."""
    folder = args["submissions"]
    if not args["one"]:
        students = submissions.find_students(folder)
        for s in students if args["deadline"] else ():  # a cloned repository, as it was at the deadline
            if s.own and git_reading.is_repository(s.own):
                try:
                    s.snapshot = deadlines.at_deadline(s.own, args["deadline"], record_of_pushes(args, s.own),
                                                       args["trusted_tags"])
                except git_reading.Unreadable as e:
                    s.unreadable = str(e)
        return students
    if not os.path.isdir(folder):
        raise Usage("no folder %r: with --%s, SUBMISSIONS is the submission's folder" % (folder, args["one"]))
    labs, too_large = submissions.search(folder)
    # Gradescope's submission is graded on its first lab; PrairieLearn's is refused with more
    # than one (not gradable: no attempt lost), since the student can see and fix it at once.
    student = submissions.Student("the submission", labs[:1] if args["one"] == "gradescope" else labs,
                                  {"gradescope": "Gradescope submission", "prairielearn": "PrairieLearn submission"}
                                  [args["one"]], folder=folder, own=folder)
    student.too_large = too_large
    return [student]


def grade(args, students):
    """Grades this shard of the students: (rows, meta), meta what the class was graded on (its
    cases and their draw, the points, the shard, the class, the deadline) and "similarity"
    left None for the caller."""
    i, n = args["shard"]
    mine = students[i - 1::n]
    tty = sys.stderr.isatty()
    if tty:
        sys.stderr.write("grade_class: %d students; building the grader (once: the runner and LibTorch's "
                         "inline code)...\n" % len(mine))
    problem = compile_sandbox.unconfigured(args["build"])
    if problem:
        raise Usage(problem)
    try:
        isolation.asked()  # a mode LAB_SANDBOX does not take, or user ids LAB_SANDBOX_UIDS cannot name:
        isolation.user_ids()  # the instructor's usage error, before any worker
    except isolation.Refused as e:
        raise Usage(str(e))
    refuse_closed_folders(args["build"])
    paths, compile_command, build_time = prepare(args["build"], args["prebuilt"])
    # The references, once for the class: computed here, the workers inherit them. On one
    # thread: LibTorch 2.6 and later leave a forked child waiting forever on the thread pool of
    # a parent that ran an operation on several (seen on Debian 13 and testing); the workers
    # then run on one thread each, one per core.
    import torch
    torch.set_num_threads(1)
    for text in args["cases"]:
        c = cases.parse_case(text)
        reference_attention.attention(c.seed, c.tokens, c.embed, c.head, scale=c.scale, mask=c.mask,
                                      heads=c.heads, leak=c.leak)
    started = time.monotonic()
    jobs = [(s, args["points"], args["timeout"], args["cases"], args["template"]) for s in mine]
    context = multiprocessing.get_context("fork")
    # What no lab may read: where no root of its own can be made, each worker keeps its user
    # id out of these with an ACL (kept_out.KeptOut); whatever a worker left, this process takes
    # away when the pool ends (and before it: a grader killed before it could).
    hidden = args["hide"] + [args.get("submissions"), args.get("grades")] + list(args.get("similar_to") or [])
    kept = (hidden + [one_student.ROOT], compile_sandbox.compile_needs(compile_command[1]))
    if os.geteuid() == 0:
        kept_out.KeptOut.forget_stale(*kept, sandbox_users.stale)
    try:
        rows = in_the_pool(context, args, jobs, paths, compile_command, hidden, started, tty)
    finally:
        if os.geteuid() == 0:
            kept_out.KeptOut.forget_stale(*kept, sandbox_users.stale)
    seconds = time.monotonic() - started
    by_key = {(s.name, s.id): s for s in mine}
    for row in rows:
        deadlines.mark(row, by_key[row.key], args["deadline"], args["penalty"], graded=row.graded)
    if tty:
        sys.stderr.write("\rgrade_class: graded %d students in %.1f s (%.2f s each, %d at once; the build "
                         "before: %.1f s)\n" % (len(rows), seconds, seconds / max(len(rows), 1), args["jobs"], build_time))
    meta = {"cases": args["cases"], "draw": args["draw"], "points": args["points"], "shard": (i, n),
            "similarity": None, "class": [s.label for s in students],
            "deadline": args["deadline"].isoformat() if args["deadline"] else None, "late_penalty": str(args["penalty"])}
    return rows, meta


def in_the_pool(context, args, jobs, paths, compile_command, hidden, started, tty):
    """Grades the jobs in a pool of workers (one_student.py): the rows."""
    rows = []
    with context.Pool(min(args["jobs"], max(len(jobs), 1)), one_student.start_worker,
                      (paths, compile_command, hidden)) as pool:
        preflight(pool, args, paths, compile_command, full=not args["one"])
        progress(0, len(jobs), started, tty)
        results = pool.imap_unordered(one_student.grade_student, jobs)
        # A lab's grade is bounded (its compile, its runs' time limits): a worker silent for
        # longer has stopped, and the class ends with that said rather than waiting forever.
        patience = 2 * compile_sandbox.TIMEOUT + len(args["cases"]) * (args["timeout"] + 10) + 120
        while len(rows) < len(jobs):
            try:
                rows.append(results.next(timeout=patience))
            except multiprocessing.TimeoutError:
                raise RuntimeError("a worker gave no grade for %d s: %d of %d students graded, nothing written"
                                   % (patience, len(rows), len(jobs)))
            progress(len(rows), len(jobs), started, tty)
    return rows


def progress(done, total, started, tty):
    if not tty:
        return
    elapsed = time.monotonic() - started
    left = ", about %d s left" % (elapsed / done * (total - done) + 0.5) if done else ""
    sys.stderr.write("\rgrade_class: graded %d of %d%s   " % (done, total, left))
    sys.stderr.flush()


def preflight(pool, args, paths, compile_command, full=True):
    """Grades the lesson through the students' own path (a worker: its user, compiler command,
    header, runner and sandbox); unless it earns full marks (or, not full, runs to the end),
    the class is refused. With --preflight-record, a pass on this build, lesson and sandbox
    is kept, and not run again. PrairieLearn's submission where nothing keeps /grade (--hide)
    from the lab is refused too, unless --grade-unisolated (its job fails; Gradescope's and
    a class's rows say how they were isolated)."""
    record, key = args.get("preflight_record"), None
    kept = None
    if record:
        key = preflight_key(paths, compile_command, pool.apply(one_student.worker_sandbox), full)
        try:
            with open(record) as f:
                said = f.read()
            if said.startswith(key):  # how the lesson's runs and compile were isolated
                kept = json.loads(said[len(key):])
                kept = {"runs": str(kept["runs"]), "compiles": str(kept["compiles"])}
        except (OSError, ValueError, TypeError, KeyError):
            kept = None  # none kept, or not in this grader's form: the pre-flight runs again
    if kept is None:
        lesson = submissions.Student("the lesson", [one_student.LESSON], "pre-flight")
        row = pool.apply(one_student.grade_student, ((lesson, args["points"], args["timeout"], args["cases"],
                                                      frozenset()),))
        if row.status != Status.GRADED or (full and row.score != row.max_score):
            raise Usage("pre-flight: the lesson (%s) graded %s/%s through the students' path on the class's cases "
                        "(%s: %s), so no student's grade could be trusted; nothing was graded" % (
                            one_student.LESSON, gradebook.fmt(row.score),
                            gradebook.fmt(row.max_score), row.status, " ".join(row.diagnosis.split())[:300]))
        kept = {"runs": row.run_sandbox, "compiles": row.compile_isolation}
        if record and not os.path.exists(record):  # the first pass kept (the image's): a job's own never
            try:
                with os.fdopen(os.open(record, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:  # the grader's
                    f.write(key + json.dumps(kept) + "\n")
            except FileExistsError:  # another job's, kept meanwhile
                pass
    runs, compiles = kept["runs"], kept["compiles"]
    if args.get("one") == "prairielearn" and "none" in (runs, compiles) and not args.get("grade_unisolated"):
        raise Usage("%s: nothing here keeps %s from the lab (its runs: %s; its compile: %s): not graded; a Docker "
                    "container must run the grader as root (its default), or give --grade-unisolated to grade "
                    "anyway" % (args["one"], ", ".join(args["hide"]) or "the platform's files", runs, compiles))


def preflight_key(paths, compile_command, worker_sandbox, full):
    """What a kept pre-flight vouches for: the lesson, the run engine and what it loads, the
    compile command and the precompiled header's headers, the workers' sandbox, how full."""
    h = hashlib.sha256(repr((compile_command, paths.get("module_link"), worker_sandbox, full)).encode())
    for path in [one_student.LESSON] + [paths[k] for k in ("runner", "runtime", "module")] + sorted(
            glob.glob(os.path.join(paths.get("pch_dir", ""), "*.sums"))):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return "lab04 pre-flight passed: %s; isolated: " % h.hexdigest()


# --- the build, once per class ------------------------------------------------------------

def prepare(build, prebuilt=False):
    """Builds the runner and what it loads (unless prebuilt: built once for every task of a
    job array, grade_on_slurm.py), and reads how to compile and link a lab as a module.
    Returns (paths, compile command as (directory, words), seconds it took)."""
    started = time.monotonic()
    if not prebuilt:
        problem = compile_sandbox.build_grader(build)
        if problem:
            raise Usage(problem)
    elif not os.path.isfile(os.path.join(build, "lab04_paths.txt")):
        raise Usage("--prebuilt: the build at %s is not built (no lab04_paths.txt): build it first, or leave "
                    "--prebuilt out" % build)
    paths = {}
    with open(os.path.join(build, "lab04_paths.txt")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            paths[key] = value
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    target = os.path.normpath(paths["module_object"])

    def words_of(e):
        return e["arguments"] if "arguments" in e else shlex.split(e["command"])

    def output_of(e):
        w = words_of(e)
        return os.path.normpath(os.path.join(e["directory"], w[w.index("-o") + 1])) if "-o" in w[:-1] else None
    entry = next((e for e in entries if output_of(e) == target), None)
    if entry is None:
        raise Usage("the build at %s does not say how it compiles the lab as a module (compile_commands.json): "
                    "configure it again (cmake --preset default)" % build)
    words = words_of(entry)
    command, skip = [], 0
    for w in words:  # the lesson's own command, less its file names and Ninja's depfile
        if skip:
            skip -= 1
        elif w in ("-o", "-c", "-MT", "-MF"):
            skip = 1
        elif w not in ("-MD", "-MMD"):
            command.append(w)
    return paths, (entry["directory"], command), time.monotonic() - started


def refuse_closed_folders(build):
    """As root, each lab is compiled and run as a user of its own, which must enter the build
    folder and the project's: a folder above them that other users cannot enter is refused
    here, with how to fix it, rather than found by every student's compile."""
    if not isolation.own_users_asked() or not os.stat("/").st_mode & 0o001:
        return  # no user of its own here (sandbox.py says why in the summary)
    for top in (os.path.realpath(build), ROOT):
        folder = top
        while folder != "/":
            mode = os.stat(folder).st_mode
            if not mode & 0o001:
                raise Usage("the sandbox's user cannot enter %s (mode %o), which holds %s: as root each lab is "
                            "compiled and run as a user of its own, which needs it. Let other users enter it "
                            "(chmod o+x %s), or grade from a project in a folder they can enter"
                            % (folder, mode & 0o777, top, shlex.quote(folder)))
            folder = os.path.dirname(folder)
