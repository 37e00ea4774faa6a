"""grade_class.py: grades a whole class: a gradebook, feedback for each student, and what the
class got wrong.
"""
import os
import signal
import sys

from lab04.checker import files, platforms, torch_python
from lab04.grader import command_line, gradebook, late_penalty, lms, similarity, submissions
from lab04.grader.command_line import Usage, parse_args
from lab04.grader.status import Status


# --help prints the docstring, the usage lines and each option, made from the options' table
# (lab04/grader/command_line.py's OPTIONS), then NOTES.
NOTES = """\
Each lab is graded as check_lab.py --grade grades it alone: the same cases, the same steps,
the same points, then the checker's diagnosis. What makes a class fast: the project's build
(--build, default build/) compiles each lab against its precompiled header as a module; each
worker loads LibTorch once, in the run engine's program (engine/runner.cpp), whose forked
child enters the sandbox and then loads the student's module; the reference of each case is computed once for the class.
Run as root, each worker's labs run as a user id of its own; otherwise each run goes through
lab04/checker/sandbox.py's bubblewrap or namespaces, with a LibTorch start per run (slower).

A grader fault is never a grade. Before the class, a pre-flight grades the lesson itself
(lab04_attention.cpp beside this folder) through exactly the students' path; unless it earns
full marks the class is refused, with what failed (exit 2, nothing written). A fault of the
grader's own during the class costs that student's row, marked "grader error" (not graded),
never a score, and the exit status says the gradebook is incomplete. Each student's grading
has a budget (one_student.grader_budget): a lab whose output would cost the grader more is one row's
"grader error", never the class's end.

Exit status: 0 the class was graded (whatever its grades); 1 graded, but some rows are
"grader error": the gradebook is incomplete (one line on stderr says how many); 2 bad
arguments or a setup that cannot grade (one line on stderr, nothing written); 3 an error of
the grader's own that ended the class (nothing written).
"""


def look_alike(args, rows):
    """The similarity check's result for the class's rows (similarity.look_alike), with the
    earlier terms' labs; None when it is left out."""
    if not args["similarity"]:
        return None
    earlier = []
    for folder in args["similar_to"]:
        for s in submissions.find_students(folder):
            if s.problem() is None:
                earlier.append(("%s (%s)" % (s.label, os.path.basename(os.path.normpath(folder))),
                                similarity.own_code(s.text, args["template"])))
    labs = [(r.name, [tuple(x) for x in r.own_code]) for r in rows if r.own_code]
    return similarity.look_alike(labs, earlier, args["template"])


def grade(args):
    """Grades the class (whole_class.py) and writes its files (gradebook.py): (summary, rows
    that are grader errors)."""
    from lab04.grader import whole_class  # (it loads torch: after with_torch)
    rows, meta = whole_class.grade(args, args["students"])
    if args["shard"] == (1, 1):
        meta["similarity"] = look_alike(args, rows)
    # Readable by the grader alone while labs may still run (a shard's, beside the next shard's
    # labs); a whole class's gradebook is opened to the umask's modes once it is written.
    with files.private() as made:
        written = gradebook.write(args["grades"], rows, meta, args["exports"])
        if args["gradescope"] and rows[0].status != Status.GRADER_ERROR:
            platforms.gradescope(gradebook.grade_of(rows[0], args["points"], meta), args["gradescope"])
        if args["prairielearn"] and rows[0].status != Status.GRADER_ERROR:
            platforms.prairielearn(gradebook.grade_of(rows[0], args["points"], meta), args["prairielearn"])
    if args["shard"] == (1, 1):
        files.opened(made)
    return written


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.reconfigure(errors="backslashreplace")  # a terminal that cannot show a name still gets it
    if argv[:1] in (["-h"], ["--help"]):
        print(command_line.usage(__doc__, NOTES))
        return 0
    try:
        args = parse_args(argv)
        if args["merge"]:
            with files.private() as made:
                summary, faults = gradebook.merge(args["grades"], args["shards"], args["exports"],
                                                  lambda rows: look_alike(args, rows))
            files.opened(made)
        else:
            try:
                torch_python.with_torch()  # this Python, or one that sees Debian's packages
            except torch_python.NoTorch as e:
                raise Usage(str(e))
            from lab04.grader import whole_class  # (it loads torch: after with_torch)
            args["students"] = whole_class.the_class(args)  # bad input before anything is built
            summary, faults = grade(args)
        sys.stdout.write(summary)
        if faults:
            print("grade_class: %d student%s not graded because of an error of the grader's own (grader error in "
                  "grades.csv): the gradebook is incomplete; see summary.md" % (faults, "s" * (faults > 1)),
                  file=sys.stderr)
            return 1
        return 0
    except (Usage, gradebook.Mismatch, submissions.Bad, late_penalty.Bad, lms.Bad) as e:
        print("grade_class: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of the grader's own: one line, never a traceback
        print("grade_class: internal error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3

