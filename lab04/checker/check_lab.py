"""check_lab.py: checks a build of the lab step by step, and names a known mistake.

usage: check_lab.py [--timeout SECONDS] [--report FILE] [--json FILE] [--name PROGRAM] [--memo DIR] [--source FILE]
                    LAB [CASE ...]
       check_lab.py --grade [--points P1,...,P7] [--step N] [--gradescope FILE] [--draw SEED] LAB [CASE ...]
  LAB   a lab04_attention binary: the course's, or a student's edit of it
  CASE  seed,tokens,embed,head, then optionally ,heads=N, ,no-scale, ,no-mask and/or ,leaky-softmax
        (default: cases.py's DEFAULT_CASES, or GRADE_CASES with --grade)
  --timeout SECONDS  how long one run of the lab may take (default 60)
  --name PROGRAM     the lab as the report's command lines name it (default LAB): the tests
                     check build/tests/lab04_fast, the lab through their lab server, and name
                     build/lab04_attention, the program a student runs
  --json FILE        also write the verdict's parts to FILE, as values: {"ok": true or false,
                     "first": the lines of the first case NOT OK (with --grade: the cases the
                     lab did not run to their end), "ending": the lines after the cases (the
                     diagnosis and the count; with --grade, each STEP and the score)}; what
                     tools/report_failures.py shows
  --report FILE      also write the report to FILE; its first line is OK or NOT OK (the
                     tests read it to skip those that need right numbers)
  --source FILE      the lab's C++, whose lines the diagnosis quotes (slips.py): "your line `...` ...";
                     by default the lab04_attention.cpp a build of the project made LAB from
                     (its CMakeCache.txt, beside LAB or above it), if it was not saved since
  --memo DIR         keep verdicts in DIR (memo.py): runs that print what earlier runs printed
                     get the verdict given then, without loading torch; the tests' run keeps
                     them in its build folder. Not with --grade: a grade is always judged
  --grade            a grade instead: each STEP judged on the lab's own printed inputs
                     (grading.py), its points earned when it is right in every case
  --points P1,...,P7 the points of STEP 1 to 7 (default 1 each)
  --step N           exit 0 only when STEP N earned its points
  --gradescope FILE  also write Gradescope's results.json
  --draw SEED        grade on the cases of that draw (cases.draw_grade_cases) instead of the
                     public ones: cases no student has seen, as an instructor's grade draws
                     them (a class's summary names its seed, to grade one lab again alike)

For each case the lab runs with --digits 9 --verbose, and what it prints is compared, in the
order of the lesson, with reference_attention.py: x (STEP 1); q, k, v (STEP 2); the scores
(STEP 3); the masked scores (STEP 4); the weights (STEP 5); the output (STEP 6); then the
STEP 7 verdicts and the exit status. A case is OK, or NOT OK with the FIRST step that
differs; later steps follow from it and are not judged. A future filled with a finite number
that softmax turns into a weight of exactly 0 (-1e9, say) is as good as -inf: OK, with a note.

Then the numbers are explained with the known mistakes of mistakes.py (diagnosis.py):
one mistake that explains every case; else two mistakes that change different things; else
one that explains all but one or two cases; else the one that explains the first differing
step. Where a printed tensor equals another tensor of the lesson, that is said too.

Limits, whatever the lab does: a run that prints more than MAX_STDOUT bytes or takes longer
than the time limit is stopped; after a time-out the remaining cases are not run.

Exit status: 0 every case OK (with --grade: full marks, or STEP N's points with --step);
1 some case NOT OK (points lost); 2 bad arguments, a lab that cannot be run, or no Python
here that can import torch; 3 an error of the checker's own.
"""
import json
import os
import signal
import sys

from lab04.checker import cases, files, memo
from lab04.checker import sandbox  # the one way to run a student's lab
from lab04.checker import torch_python

TIMEOUT, MAX_STDOUT, MAX_STDERR = cases.TIMEOUT, cases.MAX_STDOUT, cases.MAX_STDERR


class Usage(Exception):
    """Bad arguments: one line on stderr, exit 2."""


def parse_args(argv):
    """The command line as a dict: lab, cases, timeout, report, json, name, grade, points, step, gradescope,
    draw, memo."""
    args = {"timeout": TIMEOUT, "report": None, "json": None, "name": None, "grade": False, "points": [1.0] * cases.STEPS,
            "step": None, "gradescope": None, "draw": None, "memo": None, "source": None}
    options = ("--timeout", "--report", "--json", "--name", "--grade", "--points", "--step", "--gradescope", "--draw",
               "--memo", "--source")
    while argv[:1] and argv[0] in options:
        option, value = argv[0], argv[1] if len(argv) > 1 else None
        if option == "--grade":
            args["grade"] = True
            argv = argv[1:]
            continue
        if option == "--timeout":
            try:
                args["timeout"] = float(value)
                assert 0 < args["timeout"] <= 3600
            except (TypeError, ValueError, AssertionError):
                raise Usage("--timeout takes a number of seconds from 0 to 3600")
        elif option == "--points":
            try:
                args["points"] = cases.parse_points(value or "")
            except ValueError as e:
                raise Usage(str(e))
        elif option == "--name":
            if not value or value.startswith("-"):
                raise Usage("--name takes the path of the lab's program, as the report should name it")
            args["name"] = value
        elif option == "--draw":
            try:
                args["draw"] = cases.parse_draw(value)
            except ValueError as e:
                raise Usage(str(e))
        elif option == "--memo":
            if not value:
                raise Usage("--memo takes a folder for the verdicts kept")
            args["memo"] = value
        elif option == "--source":
            try:
                with open(value or "", encoding="utf-8", errors="replace") as f:
                    args["source"] = f.read()
            except OSError:
                raise Usage("--source takes the lab's C++ file, which can be read, not %r" % (value or "")[:80])
        elif option == "--step":
            if value not in [str(n) for n in cases.STEP_NUMBERS]:
                raise Usage("--step takes a STEP number from 1 to %d, not %r" % (cases.STEPS, (value or "")[:20]))
            args["step"] = int(value)
        else:  # --report, --json, --gradescope: a file to write
            if not value or os.path.isdir(value) or not os.path.isdir(os.path.dirname(os.path.abspath(value))):
                raise Usage("%s takes the path of a file to write the report to, in a folder that "
                            "exists%s" % (option, ", not %r" % value[:80] if value else ""))
            args[option[2:]] = value
        argv = argv[2:]
    if (args["step"] or args["gradescope"] or args["points"] != [1.0] * cases.STEPS or args["draw"] is not None) \
            and not args["grade"]:
        raise Usage("--points, --step, --gradescope and --draw go with --grade")
    if args["memo"] and args["grade"]:
        raise Usage("--memo does not go with --grade: a grade is always judged anew")
    if args["memo"]:
        try:
            args["memo"] = memo.folder_argument(args["memo"])
        except ValueError as e:
            raise Usage(str(e))
    if not argv or argv[0].startswith("-"):
        raise Usage("usage: check_lab.py [--timeout SECONDS] [--report FILE] [--json FILE] [--memo DIR] [--grade "
                    "[--points P1,...,P7] [--step N] [--gradescope FILE]] LAB [CASE ...] (lab04/checker/check_lab.py says more at its top)")
    if args["draw"] is not None and argv[1:]:
        raise Usage("--draw gives the cases: name no CASE with it")
    default = cases.draw_grade_cases(args["draw"]) if args["draw"] is not None else cases.GRADE_CASES
    lab, texts = argv[0], argv[1:] or (default if args["grade"] else cases.DEFAULT_CASES)
    if not os.path.isfile(lab):
        raise Usage("no lab at %r: give the path of a built lab04_attention" % lab)
    if not os.access(lab, os.X_OK):
        raise Usage("%r is not executable: give the path of a built lab04_attention" % lab)
    for text in texts:
        try:
            cases.parse_case(text)
        except cases.BadCase as e:
            raise Usage(str(e))
    args.update(lab=os.path.abspath(lab), cases=texts)
    return args


def write_report(path, ok, lines):
    """The report in a file, first line OK or NOT OK, written whole or not at all."""
    files.write_text(path, "%s\n%s\n" % ("OK" if ok else "NOT OK", "\n".join(lines)))


def write_json(path, ok, first, ending):
    """The verdict's parts as values (see --json), written whole or not at all."""
    with files.written(path) as f:
        json.dump({"ok": ok, "first": [cases.printable(l) for l in first],
                   "ending": [cases.printable(l) for l in ending]}, f, indent=1)


def checked(args, runs, run_one, echo):
    """(ok, the first case NOT OK's lines, the lines after the cases) of a check; each line of
    the cases and after them echoed. From the memo when it kept the verdict on these runs."""
    from lab04.checker import slips
    source = args["source"] if args["source"] is not None else slips.source_of_build(args["lab"])
    kept = memo.Memo(args["memo"])
    key = kept.key("check_lab", "\n".join(args["cases"]), json.dumps(
        [[t, r.command, r.status, r.lines, r.err, r.ended, r.problem] for t, r in runs.items()]
        + [slips.signature(source)]))  # (a diagnosis quotes the lines slips finds)
    found = kept.get(key, lambda v: isinstance(v, dict) and isinstance(v.get("ok"), bool) and all(
        isinstance(v.get(k), list) and all(isinstance(line, str) for line in v[k]) for k in ("echoed", "first", "report")))
    if found is not None:
        for line in found["echoed"]:
            echo(line)
        return found["ok"], found["first"], found["report"]
    from lab04.checker import verdict
    echoed = []

    def echo_and_keep(line):
        echoed.append(cases.printable(line))
        echo(line)
    results, not_run = verdict.run_cases(run_one, args["cases"],
                                         lambda result: [echo_and_keep(l) for l in verdict.case_lines(result)])
    report, ok, _ = verdict.check_lines(results, not_run, source=source)
    for line in report:
        echo_and_keep(line)
    wrong = verdict.first_wrong(results)
    first = verdict.case_lines(wrong) if wrong else []
    kept.put(key, {"echoed": echoed, "ok": ok, "first": first, "report": report})
    return ok, first, report


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # "| head" ends the checker quietly
    try:
        args = parse_args(argv)
        for old in (args["report"], args["json"]):
            if old and os.path.exists(old):
                os.remove(old)  # no verdict stays behind from an earlier lab
        try:
            torch_python.with_torch()
        except torch_python.NoTorch as e:
            raise Usage(str(e))
        import importlib.metadata
        from lab04.checker import running
        try:
            box = sandbox.Sandbox(args["lab"])
        except sandbox.Refused as e:
            raise Usage(str(e))
        # How the lab was isolated is a grader's concern (--grade): a student checking their own
        # lab on their own machine reads the report without it.
        lines = ["check_lab: %s %s against the reference (%s, torch %s)" % (
            "grading" if args["grade"] else "checking", args["lab"], sys.executable,
            importlib.metadata.version("torch"))] + (["check_lab: " + box.isolation] if args["grade"] else [])
        if args["draw"] is not None:
            lines.append("check_lab: the cases of draw %d: %s" % (args["draw"], " ".join(args["cases"])))
        print("\n".join(lines), flush=True)

        def echo(line):  # the lab's own text in a line (its stderr, a name) is shown, never obeyed
            line = cases.printable(line)
            lines.append(line)
            print(line, flush=True)

        # Running needs no torch: the runs come first. Judging loads it, unless the memo kept
        # the verdict on runs that printed exactly this (check only, never a grade).
        runs = {}
        for text in args["cases"]:
            runs[text] = running.run_case(box, cases.parse_case(text), args["timeout"], args["name"] or args["lab"])
            if runs[text].timed_out:
                break

        def run_one(case):
            return runs[case.text]
        if args["grade"]:
            from lab04.checker import grading
            from lab04.checker import verdict
            results, not_run = verdict.run_cases(
                run_one, args["cases"], lambda result: verdict.problem_line(result) and echo(verdict.problem_line(result)))
            score, total, grades, parts, report = verdict.grade_lines(results, not_run, args["points"])
            for line in report:
                echo(line)
            first = [line for line in map(verdict.problem_line, results) if line]
            if args["gradescope"]:
                from lab04.checker import platforms
                platforms.gradescope(grading.platform_grade(score, grades, parts, args["points"], box.isolation,
                                                            [line for line in map(verdict.problem_line, results) if line]),
                                     args["gradescope"])
            ok = grades[args["step"]] is None if args["step"] else score == total
        else:
            ok, first, report = checked(args, runs, run_one, echo)
        box.close()
        if args["report"]:
            write_report(args["report"], ok, lines)
        if args["json"]:
            write_json(args["json"], ok, first, report)
        return 0 if ok else 1
    except Usage as e:
        print("check_lab: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except sandbox.NotStarted as e:  # the machine's or the checker's fault, never the lab's grade
        print("check_lab: not checked: %s" % e, file=sys.stderr)
        return 3
    except Exception as e:  # a bug of the checker's own: one line, never a traceback
        print("check_lab: internal error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3

