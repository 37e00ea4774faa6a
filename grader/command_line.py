"""command_line.py: the class grader's command line, read into the values it names (a dict:
parse_args), every bad input refused with one line (Usage). The usage itself is
grade_class.py's docstring.
"""
import argparse
import os

import cases
import deadlines
import lms
import similarity
import submissions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSON = os.path.join(ROOT, "lab04_attention.cpp")
CLASS_TIMEOUT = cases.CLASS_TIMEOUT  # seconds a run of a grade case may take (the lesson: 0.03 s)


class Usage(Exception):
    """Bad arguments, or a setup that cannot grade: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, saying a bad input as the grader does: one line (Usage), never its usage."""

    def error(self, message):
        raise Usage(message)


def _checked(check):
    """An option's type: the value as check gives it; a missing value ("", argparse's const
    for an option given last) is checked as any other, so its message says what it takes."""
    def of(value):
        try:
            return check(value)
        except ValueError as e:  # (argparse would say it its own way)
            raise Usage(str(e))
    return of


def _jobs(value):
    if not value.isdigit() or not 1 <= int(value) <= 256:
        raise Usage("-j takes a number of labs to grade at once, from 1 to 256, not %r" % value[:20])
    return int(value)


def _shard(value):
    i, _, n = value.partition("/")
    if not (i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n) <= 10000):
        raise Usage("--shard takes I/N, with 1 <= I <= N (such as 2/8), not %r" % value[:20])
    return int(i), int(n)


def _folder_of_labs(value):
    if not (value and os.path.isdir(value)):
        raise Usage("--similar-to takes a folder of an earlier term's labs (any shape a class may have), not %r"
                    % value[:80])
    return value


def _template(value):
    if not (value and os.path.isfile(value)):
        raise Usage("--template takes a file handed out to the class (a starter's lab04_attention.cpp, say), "
                    "not %r" % value[:80])
    return value


def _draw(value):
    if value == "public":
        return value
    try:
        return cases.parse_draw(value)
    except ValueError as e:
        raise Usage(str(e)[:-1] + ", or public)" if str(e).endswith(")") else str(e))


def _timeout(value):
    try:
        seconds = float(value)
        assert 0 < seconds <= 3600
    except (ValueError, AssertionError):
        raise Usage("--timeout takes a number of seconds from 0 to 3600")
    return seconds


def _build(value):
    if not value:
        raise Usage("--build takes the project's build folder")
    return os.path.abspath(value)


def _hidden(value):
    if not value or not os.path.exists(value):
        raise Usage("--hide takes a folder or file that exists, not %r" % value[:80])
    return os.path.realpath(value)


def _export(kind, what):
    def read(value):
        if not value or not os.path.isfile(value):
            raise Usage("--%s-gradebook takes the CSV file %s, not %r" % (kind, what, value[:80]))
        return lms.read_export(kind, value)
    return read


def _pushes(value):
    if not (value and os.path.isdir(value)):
        raise Usage("--pushes takes a folder of GitHub's records of each repository's pushes, one "
                    "REPOSITORY.json each (docs/instructors.md says the gh api command), not %r" % value[:80])
    return value


def _column(value):
    if not value:
        raise Usage("--canvas-column takes the name of the lab's assignment in Canvas's gradebook export")
    return value


def _results(platform):
    def path(value):
        if not value or not os.path.isdir(os.path.dirname(os.path.abspath(value))):
            raise Usage("--%s takes the results.json to write, in a folder that exists" % platform)
        return os.path.abspath(value)
    return path


def _preflight_record(value):
    folder = os.path.dirname(os.path.abspath(value or "."))
    if not value or not os.path.isdir(folder) or os.path.isdir(value):
        raise Usage("--preflight-record takes a file to keep a passed pre-flight in, in a folder that exists, "
                    "not %r" % (value or "")[:80])
    if not os.path.exists(value) and not os.access(folder, os.W_OK | os.X_OK):
        raise Usage("--preflight-record %r: its folder %s is not yours to write, so a pass could not be kept: run "
                    "as the folder's owner, or name a file in a folder you can write" % (value[:80], folder[:80]))
    return os.path.abspath(value)


def _parser():
    parser = _Parser(prog="grade_class.py", add_help=False, allow_abbrev=False)

    def option(*names, type, dest, default=None, many=False):
        parser.add_argument(*names, type=type, dest=dest, default=[] if many else default, nargs="?", const="",
                            action="append" if many else "store")
    option("-j", "--jobs", type=_jobs, dest="jobs", default=os.cpu_count() or 1)
    option("--shard", type=_shard, dest="shard", default=(1, 1))
    option("--similar-to", type=_folder_of_labs, dest="similar_to", many=True)
    option("--template", type=_template, dest="templates", many=True)
    option("--draw", type=_draw, dest="draw")
    option("--points", type=_checked(cases.parse_points), dest="points", default=[1.0] * cases.STEPS)
    option("--timeout", type=_timeout, dest="timeout", default=CLASS_TIMEOUT)
    option("--build", type=_build, dest="build", default=os.path.join(ROOT, "build"))
    option("--hide", type=_hidden, dest="hide", many=True)
    option("--deadline", type=deadlines.parse_deadline, dest="deadline")
    option("--late-penalty", type=deadlines.parse_penalty, dest="penalty", default=deadlines.Penalty())
    option("--pushes", type=_pushes, dest="pushes")
    option("--canvas-gradebook", type=_export("canvas", "Canvas's gradebook exported (Grades, Export)"),
           dest="canvas")
    option("--moodle-gradebook", type=_export("moodle", "Moodle's grade export wrote (Grades, Export, Plain text "
                                                        "file)"), dest="moodle")
    option("--canvas-column", type=_column, dest="canvas_column")
    option("--gradescope", type=_results("gradescope"), dest="gradescope")
    option("--prairielearn", type=_results("prairielearn"), dest="prairielearn")
    option("--preflight-record", type=_preflight_record, dest="preflight_record")
    parser.add_argument("--trusted-tags", action="store_true", dest="trusted_tags")
    parser.add_argument("--merge", action="store_true", dest="merge")
    parser.add_argument("--no-similarity", action="store_false", dest="similarity")
    parser.add_argument("--prebuilt", action="store_true", dest="prebuilt")
    parser.add_argument("--grade-unisolated", action="store_true", dest="grade_unisolated")
    parser.add_argument("rest", nargs="*")
    return parser


def parse_args(argv):
    """The command line as a dict of the values it names (and the cases, the template's lines,
    the GRADES and SUBMISSIONS or shards); Usage on bad input."""
    options, unknown = _parser().parse_known_intermixed_args(argv)
    if unknown:
        raise Usage("unknown option %r: see the top of grader/grade_class.py" % unknown[0][:40])
    args = vars(options)
    rest = args.pop("rest")
    if (args["pushes"] or args["trusted_tags"]) and not args["deadline"]:
        raise Usage("--%s times a class's repositories against its deadline: give --deadline too"
                    % ("pushes" if args["pushes"] else "trusted-tags"))
    if args["canvas_column"] and not args["canvas"]:
        raise Usage("--canvas-column names a column of --canvas-gradebook's export: give both")
    args["exports"] = [e for e in (args["canvas"], args["moodle"]) if e]
    if args["exports"] and args["shard"] != (1, 1):
        raise Usage("--canvas-gradebook and --moodle-gradebook fill the whole class's column: give them to --merge, "
                    "not to a --shard")
    if args["gradescope"] and args["prairielearn"]:
        raise Usage("--gradescope or --prairielearn: one submission is graded for one of them")
    args["one"] = "gradescope" if args["gradescope"] else "prairielearn" if args["prairielearn"] else None
    if args["grade_unisolated"] and not args["prairielearn"]:
        raise Usage("--grade-unisolated is for PrairieLearn's submission (--prairielearn): a class, and Gradescope's "
                    "submission, are graded with the isolation their rows say")
    if args["one"] and (args["shard"] != (1, 1) or args["exports"] or args["merge"]):
        raise Usage("--%s grades one submission: no --shard, --merge or LMS gradebook with it" % args["one"])
    if args["preflight_record"] and not args["prebuilt"]:
        raise Usage("--preflight-record keeps a pre-flight of a build that does not change: give --prebuilt too")
    if args["canvas"]:
        args["canvas"].choose_column(args["canvas_column"])
    if not args["similarity"] and (args["similar_to"] or args["templates"]):
        raise Usage("--similar-to and --template are for the similarity check, which --no-similarity leaves out: "
                    "give one or the other")
    if args["merge"] and args["templates"]:
        raise Usage("--template goes to the grading of each shard (each lab's own code is found there), not to --merge")
    args["template"] = frozenset(similarity.template_keys(
        [read_text(p) for p in [LESSON] + args["templates"]]))
    if args["shard"] != (1, 1) and args["draw"] is None:
        raise Usage("--shard needs --draw SEED, one seed for every shard of the class (any whole number, such as "
                    "--draw %d), so that the whole class is graded on the same cases" % cases.new_draw())
    if args["draw"] is None:
        args["draw"] = cases.new_draw()
    args["cases"] = cases.GRADE_CASES if args["draw"] == "public" else cases.draw_grade_cases(args["draw"])
    if args["merge"]:
        if len(rest) < 2:
            raise Usage("usage: grade_class.py --merge GRADES SHARD_GRADES ... (the folders --shard wrote)")
        args["grades"], args["shards"] = rest[0], rest[1:]
    else:
        if len(rest) != 2:
            raise Usage("usage: grade_class.py [-j N] [--shard I/N] [--points P1,...,P7] [--timeout S] "
                        "[--build DIR] SUBMISSIONS GRADES")
        args["submissions"], args["grades"] = rest
        for path, what in [(args["grades"], "GRADES")] + [(f, "--similar-to's folder") for f in args["similar_to"]]:
            if within(path, args["submissions"]):
                raise Usage("%s %r is inside the class's folder %s, where every folder is read as a student's and "
                            "a lab may look: put it beside the class folder" % (what, path[:80], args["submissions"][:80]))
    for s in args.get("shards", []):
        check_shard_folder(s)
    check_new_folder(args["grades"])
    return args


def within(path, folder):
    """Whether path is folder or lies in it (links resolved)."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def check_shard_folder(path):
    """A shard's gradebook that another user may have written is refused: a lab of a later
    shard, or anyone on the shared storage, could have changed the grades in it."""
    for top in [path] + [os.path.join(path, n) for n in ("class.json",)]:
        try:
            mode = os.lstat(top).st_mode
        except OSError:
            continue  # (what is missing is merge's to say)
        if mode & 0o022:
            raise Usage("the shard %r may be written by another user (%s, mode %o): its grades cannot be trusted; grade "
                        "that shard again into a folder only you can write" % (
                            path[:80], top[:80], mode & 0o7777))


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(submissions.MAX_BYTES + 1)
    except OSError as e:
        raise Usage("cannot read %s: %s" % (path, e.strerror))


def check_new_folder(path):
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise Usage("GRADES %r exists and is not an empty folder: name a new one, or remove it first "
                    "(rm -r %s)" % (path, path))
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise Usage("GRADES %r: its folder %s does not exist" % (path, parent))
