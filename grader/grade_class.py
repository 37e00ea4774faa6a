#!/usr/bin/env python3
"""grade_class.py: grades a whole class: a gradebook, feedback for each student, and what the
class got wrong.

usage: grade_class.py [-j N] [--shard I/N] [--draw SEED|public] [--points P1,...,P7] [--timeout S]
                      [--build DIR [--prebuilt]] [--hide PATH ...] [--deadline TIME] [--late-penalty RULE]
                      [--pushes FOLDER] [--trusted-tags] [--no-similarity | --similar-to FOLDER ... --template FILE ...]
                      [--canvas-gradebook EXPORT.csv [--canvas-column NAME]]
                      [--moodle-gradebook EXPORT.csv] [--gradescope RESULTS | --prairielearn RESULTS]
                      SUBMISSIONS GRADES
       grade_class.py --merge [--canvas-gradebook EXPORT.csv] [--moodle-gradebook EXPORT.csv]
                      [--no-similarity | --similar-to FOLDER ...] GRADES SHARD_GRADES ...
  SUBMISSIONS  the class: a folder per student, Canvas's files, or Gradescope's export
               (submissions.py says which shapes it reads)
  GRADES       a folder to write, new or empty: grades.csv, feedback/<student>.txt,
               summary.md, and class.json (what --merge reads)
  -j N         labs graded at once (default: one per core)
  --shard I/N  grade only every Nth student, from the Ith (1 <= I <= N), for a job array;
               then --merge the N GRADES folders into one; needs --draw, the same for every shard
  --draw SEED  the seed of the draw of cases to grade on (cases.draw_grade_cases): a case of
               each kind of the public grade cases, with seeds and sizes no student has seen.
               By default a new draw each time, from the system's randomness; the summary and
               class.json name its seed, and a regrade with --draw SEED grades on the same
               cases. --draw public grades on the public cases, which every student's checker
               knows (a lab that prints their answers would score full marks)
  --points, --timeout   as check_lab.py --grade
  --build DIR  the project's build (default build/), which the grader builds first (its run
               engine and the lesson's module); --prebuilt: it is built already, build nothing
               (grade_on_slurm.py builds it once before its tasks, which share its folder)
  --grade-unisolated  with --prairielearn: grade even where nothing keeps /grade (--hide) from
               the lab (a container run as a user, not as root, with no user namespaces);
               without it such a submission is not graded (exit 2), and the job fails
  --preflight-record FILE  with --prebuilt: a pre-flight that passed is kept in FILE (in a
               folder the grader can write) when there is none yet, and a later run skips its
               own when FILE holds this build, lesson and sandbox (a grader image keeps one when
               it is built, so that each job grades the submission alone: instructor/
               prairielearn/run_grader --prepare); else the pre-flight runs as always
  --hide PATH  a folder or file no lab's run may see where a sandbox hides a list of places
               (a user's without bubblewrap: the class's folder and the project are hidden
               always; a root of its own holds none of them); may be given more than once
  --deadline TIME  ISO 8601 with its zone (2026-12-01T23:59:00-05:00): a cloned repository is
               graded at its last submission at or before it (later ones are said in the late
               column, not graded): by the server's record of its pushes (--pushes), else by its
               submit/ tags (Classroom 50's), else by its commit dates; the late column says when
               the time is the student's own claim (a tag or a commit date) and which times
               contradict each other; Gradescope's :created_at: is compared with it
  --pushes FOLDER  GitHub's record of each repository's pushes, REPOSITORY.json for the folder
               REPOSITORY of SUBMISSIONS, as `gh api` saves the repository activity API's answer
               (docs/instructors.md): a submission's time is the time of the push that brought
               it, which the student cannot write. A record that is missing or cannot be used is
               said in that row, timed as without one
  --trusted-tags  only Classroom 50's workflow can write submit/ tags in the class's
               repositories (a tag ruleset: docs/instructors.md): their times are not the
               students' claims
  --late-penalty RULE  none (the default), or P%/day[,max=Q%]: P% of the lab's points taken
               per day late (each day begun counts whole), at most Q%; Canvas's _late files
               count as one day, since Canvas does not say how late
  --canvas-gradebook EXPORT.csv  Canvas's own gradebook export: also write
               GRADES/canvas-import.csv, the same file with this lab's column filled in for
               every student it matches (grader/lms.py says how), ready to import, and list the
               students it could not match on either side; --canvas-column NAME names the
               lab's assignment there (default: the one whose name says Lab 04, or a new one)
  --moodle-gradebook EXPORT.csv  Moodle's grade export (plain text): also write
               GRADES/moodle-import.csv: the students it matches (grader/lms.py), each by the
               email address Moodle has, with this lab's grade in percent, which Moodle's CSV
               import takes as it is
  --no-similarity  leave out the summary's list of labs whose own code looks alike (grader/
               similarity.py: Debian's sim_c++ compares what each student wrote beyond the lesson
               and the template; a hint to look, never a grade), which runs by default
  --similar-to FOLDER  also compare the class with the labs of an earlier term kept in FOLDER (any
               shape SUBMISSIONS may have); may be given more than once
  --template FILE  a file handed out to the class (a starter of your own, say), whose lines are
               nobody's own code, as the lesson's and a starter's TODO lines are not; may be given
               more than once
  --gradescope RESULTS  SUBMISSIONS is one submission (Gradescope's /autograder/submission):
               grade it as one student and also write Gradescope's results.json to RESULTS
               (instructor/gradescope/run_autograder does); its pre-flight asks only that the
               project's lab04_attention.cpp (the starter's, there) compiles and runs to the end
  --prairielearn RESULTS  the same for PrairieLearn's external grader: SUBMISSIONS is its
               /grade/student, RESULTS its results.json (instructor/prairielearn/run_grader
               does); a submission without the lab, or with more than one, or a file that is
               not one, is "gradable": false there, which costs the student no attempt

Each lab is graded as check_lab.py --grade grades it alone: the same cases, the same steps,
the same points, then the checker's diagnosis. What makes a class fast: the project's build
(--build, default build/) compiles each lab against its precompiled header as a module; each
worker loads LibTorch once, in the run engine's program (engine/runner.cpp), whose forked
child enters the sandbox and then loads the student's module; the reference of each case is computed once for the class.
Run as root, each worker's labs run as a user id of its own; otherwise each run goes through
checker/sandbox.py's bubblewrap or namespaces, with a LibTorch start per run (slower).

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
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checker"))

import deadlines  # noqa: E402
import files  # noqa: E402
import gradebook  # noqa: E402
import lms  # noqa: E402
import similarity  # noqa: E402
import submissions  # noqa: E402
from status import Status  # noqa: E402
import torch_python  # noqa: E402
from command_line import Usage, parse_args  # noqa: E402


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
    return similarity.look_alike(labs, earlier)


def grade(args):
    """Grades the class (whole_class.py) and writes its files (gradebook.py): (summary, rows
    that are grader errors)."""
    import whole_class  # (it loads torch: after with_torch)
    rows, meta = whole_class.grade(args, args["students"])
    if args["shard"] == (1, 1):
        meta["similarity"] = look_alike(args, rows)
    # Readable by the grader alone while labs may still run (a shard's, beside the next shard's
    # labs); a whole class's gradebook is opened to the umask's modes once it is written.
    with files.private() as made:
        written = gradebook.write(args["grades"], rows, meta, args["exports"])
        if args["gradescope"] and rows[0].status != Status.GRADER_ERROR:
            gradebook.gradescope_results(rows[0], args["points"], args["gradescope"], meta)
        if args["prairielearn"] and rows[0].status != Status.GRADER_ERROR:
            gradebook.prairielearn_results(rows[0], args["points"], args["prairielearn"], meta)
    if args["shard"] == (1, 1):
        files.opened(made)
    return written


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.reconfigure(errors="backslashreplace")  # a terminal that cannot show a name still gets it
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
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
            import whole_class  # (it loads torch: after with_torch)
            args["students"] = whole_class.the_class(args)  # bad input before anything is built
            summary, faults = grade(args)
        sys.stdout.write(summary)
        if faults:
            print("grade_class: %d student%s not graded because of an error of the grader's own (grader error in "
                  "grades.csv): the gradebook is incomplete; see summary.md" % (faults, "s" * (faults > 1)),
                  file=sys.stderr)
            return 1
        return 0
    except (Usage, gradebook.Mismatch, submissions.Bad, deadlines.Bad, lms.Bad) as e:
        print("grade_class: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of the grader's own: one line, never a traceback
        print("grade_class: internal error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
