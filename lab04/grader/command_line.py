"""command_line.py: the class grader's command line: its options, each defined once in a
table (OPTIONS: names, what it takes, how its value is read, its default, what it does, and
where grade_on_slurm.py sends it), from which come the parser (parse_args: a dict of the values
they name, every bad input refused with one line, Usage), grade_class.py's --help (usage())
and grade_on_slurm.py's split between the shards and the merge.
"""
import argparse
import os
import textwrap
from typing import Callable, NamedTuple, Optional

from lab04 import PROJECT
from lab04.checker import cases
from lab04.grader import late_penalty, lms, similarity, submissions

ROOT = PROJECT
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


class Option(NamedTuple):
    """One option of grade_class.py. value: what it takes, as the usage names it ("" for a
    flag); read: its value read, or a Usage; slurm: where grade_on_slurm.py sends it ("shard":
    to every shard, "merge", "both"), or why it does not take it."""
    names: tuple
    value: str
    dest: str
    read: Optional[Callable]
    default: object
    words: str
    slurm: str
    many: bool = False  # may be given more than once: a list
    given: bool = True  # a flag's value when it is given


def _cores():
    return os.cpu_count() or 1


OPTIONS = (
    Option(("-j", "--jobs"), "N", "jobs", _jobs, _cores, "labs graded at once (default: one per core)", "shard"),
    Option(("--shard",), "I/N", "shard", _shard, (1, 1),
           "grade only every Nth student, from the Ith (1 <= I <= N), for a job array; then --merge the N GRADES "
           "folders into one; needs --draw, the same for every shard", "the shards are this command's"),
    Option(("--merge",), "", "merge", None, False,
           "merge the GRADES folders of the shards (SHARD_GRADES ...) into GRADES, as one machine would have "
           "written it", "the merge is this command's"),
    Option(("--draw",), "SEED", "draw", _draw, None,
           "the seed of the draw of cases to grade on (cases.draw_grade_cases): a case of each kind of the public "
           "grade cases, with seeds and sizes no student has seen. By default a new draw each time, from the "
           "system's randomness; the summary and class.json name its seed, and a regrade with --draw SEED grades "
           "on the same cases. --draw public grades on the public cases, which every student's checker knows (a "
           "lab that prints their answers would score full marks)", "shard"),
    Option(("--points",), "P1,...,P7", "points", _checked(cases.parse_points), lambda: [1.0] * cases.STEPS,
           "each STEP's points, as check_lab.py --grade takes them", "shard"),
    Option(("--timeout",), "S", "timeout", _timeout, CLASS_TIMEOUT,
           "seconds a run of a case may take, as check_lab.py --grade takes them", "shard"),
    Option(("--build",), "DIR", "build", _build, os.path.join(ROOT, "build"),
           "the project's build (default build/), which the grader builds first (its run engine and the lesson's "
           "module)", "shard"),
    Option(("--prebuilt",), "", "prebuilt", None, False,
           "--build is built already: build nothing (grade_on_slurm.py builds it once before its tasks, which "
           "share its folder)", "the build is this command's"),
    Option(("--grade-unisolated",), "", "grade_unisolated", None, False,
           "with --prairielearn: grade even where nothing keeps /grade (--hide) from the lab (a container run as "
           "a user, not as root, with no user namespaces); without it such a submission is not graded (exit 2), "
           "and the job fails", "it is for PrairieLearn's one submission"),
    Option(("--preflight-record",), "FILE", "preflight_record", _preflight_record, None,
           "with --prebuilt: a pre-flight that passed is kept in FILE (in a folder the grader can write) when "
           "there is none yet, and a later run skips its own when FILE holds this build, lesson and sandbox (a "
           "grader image keeps one when it is built, so that each job grades the submission alone: instructor/"
           "prairielearn/run_grader --prepare); else the pre-flight runs as always",
           "it is for a grader image's build, which does not change"),
    Option(("--hide",), "PATH", "hide", _hidden, None,
           "a folder or file no lab's run may see where a sandbox hides a list of places (a user's without "
           "bubblewrap: the class's folder and the project are hidden always; a root of its own holds none of "
           "them); may be given more than once", "shard", many=True),
    Option(("--deadline",), "TIME", "deadline", late_penalty.parse_deadline, None,
           "ISO 8601 with its zone (2026-12-01T23:59:00-05:00): a cloned repository is graded at its last "
           "submission at or before it (later ones are said in the late column, not graded): by the server's "
           "record of its pushes (--pushes), else by its submit/ tags (Classroom 50's), else by its commit "
           "dates; the late column says when the time is the student's own claim (a tag or a commit date) and "
           "which times contradict each other; Gradescope's :created_at: is compared with it", "shard"),
    Option(("--pushes",), "FOLDER", "pushes", _pushes, None,
           "GitHub's record of each repository's pushes, REPOSITORY.json for the folder REPOSITORY of "
           "SUBMISSIONS, as `gh api` saves the repository activity API's answer (docs/instructors.md): a "
           "submission's time is the time of the push that brought it, which the student cannot write. A record "
           "that is missing or cannot be used is said in that row, timed as without one", "shard"),
    Option(("--trusted-tags",), "", "trusted_tags", None, False,
           "only Classroom 50's workflow can write submit/ tags in the class's repositories (a tag ruleset: "
           "docs/instructors.md): their times are not the students' claims", "shard"),
    Option(("--late-penalty",), "RULE", "penalty", late_penalty.parse_penalty, late_penalty.Penalty,
           "none (the default), or P%/day[,max=Q%]: P% of the lab's points taken per day late (each day begun "
           "counts whole), at most Q%; Canvas's _late files count as one day, since Canvas does not say how late",
           "shard"),
    Option(("--canvas-gradebook",), "EXPORT.csv", "canvas",
           _export("canvas", "Canvas's gradebook exported (Grades, Export)"), None,
           "Canvas's own gradebook export: also write GRADES/canvas-import.csv, the same file with this lab's "
           "column filled in for every student it matches (lab04/grader/lms.py says how), ready to import, and list "
           "the students it could not match on either side", "merge"),
    Option(("--canvas-column",), "NAME", "canvas_column", _column, None,
           "the lab's assignment in --canvas-gradebook's export (default: the one whose name says Lab 04, or a "
           "new one)", "merge"),
    Option(("--moodle-gradebook",), "EXPORT.csv", "moodle",
           _export("moodle", "Moodle's grade export wrote (Grades, Export, Plain text file)"), None,
           "Moodle's grade export (plain text): also write GRADES/moodle-import.csv: the students it matches "
           "(lab04/grader/lms.py), each by the email address Moodle has, with this lab's grade in percent, which "
           "Moodle's CSV import takes as it is", "merge"),
    Option(("--no-similarity",), "", "similarity", None, True,
           "leave out the summary's list of labs whose own code shares what students who work alone would not "
           "(lab04/grader/similarity.py: what each student wrote beyond the lesson and the template, weighed by how "
           "many of the class wrote the same; a hint to look, never a grade), which runs by default", "both",
           given=False),
    Option(("--similar-to",), "FOLDER", "similar_to", _folder_of_labs, None,
           "also compare the class with the labs of an earlier term kept in FOLDER (any shape SUBMISSIONS may "
           "have; they count too in how rare a line is); may be given more than once", "merge", many=True),
    Option(("--template",), "FILE", "templates", _template, None,
           "a file handed out to the class (a starter of your own, say), whose lines are nobody's own code, as "
           "the lesson's and a starter's TODO lines are not; may be given more than once", "shard", many=True),
    Option(("--gradescope",), "RESULTS", "gradescope", _results("gradescope"), None,
           "SUBMISSIONS is one submission (Gradescope's /autograder/submission): grade it as one student and "
           "also write Gradescope's results.json to RESULTS (instructor/gradescope/run_autograder does); its "
           "pre-flight asks only that the project's lab04_attention.cpp (the starter's, there) compiles and runs "
           "to the end", "a Gradescope submission is one student"),
    Option(("--prairielearn",), "RESULTS", "prairielearn", _results("prairielearn"), None,
           "the same for PrairieLearn's external grader: SUBMISSIONS is its /grade/student, RESULTS its "
           "results.json (instructor/prairielearn/run_grader does); a submission without the lab, or with more "
           "than one, or a file that is not one, is \"gradable\": false there, which costs the student no attempt",
           "a PrairieLearn submission is one student"),
)
WHERE = ("shard", "merge", "both")  # an Option's slurm, when grade_on_slurm.py takes it


def _parser():
    parser = _Parser(prog="grade_class.py", add_help=False, allow_abbrev=False)
    for o in OPTIONS:
        if o.read is None:  # a flag
            parser.add_argument(*o.names, dest=o.dest, action="store_true" if o.given else "store_false")
        else:  # a value; a missing one ("") is read as any other, so that its message says what it takes
            parser.add_argument(*o.names, dest=o.dest, type=o.read, nargs="?", const="",
                                default=[] if o.many else None, action="append" if o.many else "store")
    parser.add_argument("rest", nargs="*")
    return parser


def usage_lines(options, width=100, margin=15):
    """The paragraphs of options as a usage shows them: "  --name VALUE  what it does", the
    words wrapped at width, under a margin."""
    lines = []
    for o in options:
        head = "  %s%s  " % (", ".join(o.names), " " + o.value if o.value else "")
        head = head.ljust(margin)
        lines += textwrap.wrap(o.words, width, initial_indent=head, subsequent_indent=" " * margin,
                               break_long_words=False, break_on_hyphens=False)
    return lines


def synopsis(options):
    """The options in brackets, as a usage line names them: [--draw SEED] [--merge] ..."""
    return ["[%s%s]" % (o.names[0], " " + o.value if o.value else "") for o in options]


def wrapped(units, first, width=100):
    """Units of a usage line ("[--build DIR]", "GRADES"), as many on a line as fit in width, a
    unit never split; the lines after the first under the first's words."""
    lines, indent = [first.rstrip()], " " * len(first)
    for unit in units:
        if len(lines[-1]) + 1 + len(unit) > width and lines[-1].strip() != first.strip():
            lines.append(indent + unit)
        else:
            lines[-1] += " " + unit
    return lines


def usage(top, end):
    """grade_class.py's --help: top (what it does), the usage lines, each option, then end."""
    merge = [o for o in OPTIONS if o.slurm in ("merge", "both")]
    lines = wrapped(synopsis([o for o in OPTIONS if o.dest != "merge"]) + ["SUBMISSIONS", "GRADES"],
                    "usage: grade_class.py ")
    lines += wrapped(synopsis(merge) + ["GRADES", "SHARD_GRADES", "..."], "       grade_class.py --merge ")
    lines += ["  SUBMISSIONS  the class: a folder per student, Canvas's files, or Gradescope's export",
              "               (submissions.py says which shapes it reads)",
              "  GRADES       a folder to write, new or empty: grades.csv, feedback/<student>.txt,",
              "               summary.md, and class.json (what --merge reads)"]
    return "\n".join([top.strip(), ""] + lines + usage_lines(OPTIONS) + ["", end.strip()])


def parse_args(argv):
    """The command line as a dict of the values it names (and the cases, the template's lines,
    the GRADES and SUBMISSIONS or shards); Usage on bad input."""
    options, unknown = _parser().parse_known_intermixed_args(argv)
    if unknown:
        raise Usage("unknown option %r: see grader/grade_class.py --help" % unknown[0][:40])
    args = vars(options)
    for o in OPTIONS:  # a default that is made anew for each command line (a list, a Penalty)
        if args[o.dest] is None or args[o.dest] == []:
            args[o.dest] = ([] if o.many else o.default() if callable(o.default) else o.default)
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
