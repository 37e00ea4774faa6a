"""Gradescope's autograder, tried in a folder that stands for /autograder.

usage: gradescope_test.py WORK_DIR LAB_CPP LAB LESSON

  WORK_DIR  a folder for the simulation (emptied first)
  LAB_CPP   a submission: a lab04_attention.cpp (a mutant, say)
  LAB       the same lab, built (to grade it directly and compare)
  LESSON    the lesson, built (to write a lab that prints its answers)

make_starter.py --autograder writes the zip; it is unpacked into WORK_DIR/autograder/source
as Gradescope does, setup.sh builds it and keeps the grader's pre-flight (build/lab04_preflight),
the submission goes into .../submission, and run_autograder runs with
AUTOGRADER_ROOT pointing there. Its results.json must hold a test per STEP whose scores add
up to its total, and that total must equal check_lab.py --grade's score for the built lab on the same draw of cases
(results.json names it). Each submission is graded on cases drawn anew: a lab that only
prints the lesson's answers to the public cases scores at most 1 of 7, while the lesson scores
7 and a lab with one mistake loses its one step. A
submission without the lab, and one that does not compile, must score 0 with the reason. A
lab that prints the lesson's numbers and then aborts scores STEP 1 to 6 (what it printed).
A grader fault (the checker itself broken, in this copy) is never a grade: no results.json,
exit 1, with the reason. Prints OK or NOT OK for each promise.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import checklist
import make_class
import memorised_answers
import project



def autograde(root, submission_text):
    """Runs the autograder on one submission (None: an empty one): (results or None, output);
    the output ends with its exit status."""
    shutil.rmtree(os.path.join(root, "submission"), ignore_errors=True)
    shutil.rmtree(os.path.join(root, "results"), ignore_errors=True)
    os.makedirs(os.path.join(root, "submission"))
    if submission_text is not None:
        with open(os.path.join(root, "submission", "lab04_attention.cpp"), "w") as f:
            f.write(submission_text)
    run = subprocess.run([os.path.join(root, "source", "run_autograder")], capture_output=True, text=True,
                         env=dict(os.environ, AUTOGRADER_ROOT=root), timeout=900)
    output = run.stdout + run.stderr + "\nexit %d" % run.returncode
    try:
        with open(os.path.join(root, "results", "results.json")) as f:
            return json.load(f), output
    except (OSError, ValueError):
        return None, output


def main(argv):
    if len(argv) != 4 or not os.path.isfile(argv[1]) or not os.access(argv[2], os.X_OK):
        print("gradescope_test: usage: gradescope_test.py WORK_DIR LAB_CPP LAB LESSON", file=sys.stderr)
        return 2
    work, lab_cpp, lab, lesson = argv
    shutil.rmtree(work, ignore_errors=True)
    root = os.path.join(work, "autograder")
    os.makedirs(os.path.join(root, "source"))
    zip_path = os.path.join(work, "autograder.zip")
    subprocess.run([sys.executable, os.path.join(project.INSTRUCTOR, "make_starter.py"), "--autograder", zip_path], check=True)
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():  # unzip as Gradescope does, keeping the programs' modes
            path = z.extract(info, os.path.join(root, "source"))
            os.chmod(path, (info.external_attr >> 16) or 0o644)
    setup = subprocess.run(["bash", os.path.join(root, "source", "setup.sh")], capture_output=True, text=True,
                           env=dict(os.environ, AUTOGRADER_ROOT=root, LAB_SKIP_INSTALL="1"))
    if setup.returncode != 0:
        return checklist.report([("setup.sh builds the project", False, (setup.stdout + setup.stderr)[-2000:])])
    checks = []
    record = os.path.join(root, "build", "lab04_preflight")
    kept = open(record).read() if os.path.isfile(record) else ""
    mode = os.stat(record).st_mode & 0o777 if kept else None
    checks.append(("setup.sh runs the grader's pre-flight once and keeps its pass in the image (build/lab04_preflight, "
                   "the grader's alone), so that a submission runs only its own lab",
                   kept.startswith("lab04 pre-flight passed") and mode == 0o600,
                   "mode %s: %s" % (mode and oct(mode), kept or (setup.stdout + setup.stderr)[-2000:])))
    for words in ([], [os.path.join(root, "build")], [os.path.join(root, "nowhere"), "--gradescope"],
                  [os.path.join(root, "build"), "--canvas"]):
        bad = subprocess.run([os.path.join(root, "source", "grader", "prepare_image")] + words, capture_output=True,
                             text=True)
        checks.append(("prepare_image %s: one line on stderr naming what it takes, nothing on stdout, exit 2"
                       % " ".join(os.path.basename(w) for w in words),
                       bad.returncode == 2 and not bad.stdout and bad.stderr.count("\n") == 1
                       and "--gradescope or --prairielearn" in bad.stderr, (bad.returncode, bad.stdout, bad.stderr)))
    # A build folder it cannot write (an image layer mounted read-only, another user's build): said
    # before the pre-flight runs, not after it as a pre-flight that "did not pass".
    build = os.path.join(root, "build")
    with project.Unwritable(build) as read_only:
        bad = subprocess.run(read_only.prefix + [os.path.join(root, "source", "grader", "prepare_image"), build,
                                                 "--gradescope"], capture_output=True, text=True)
    checks.append(("prepare_image on a build folder it cannot write (%s): one line on stderr saying so, nothing on "
                   "stdout, exit 2" % read_only.how, bad.returncode == 2 and not bad.stdout and bad.stderr.count("\n") == 1
                   and "cannot write" in bad.stderr, (bad.returncode, bad.stdout, bad.stderr)))
    results, output = autograde(root, open(lab_cpp).read())
    draw = (results or {}).get("extra_data", {}).get("draw")
    checks.append(("results.json names the draw of cases it was graded on, drawn anew (not the public cases)",
                   isinstance(draw, int), json.dumps((results or {}).get("extra_data")) or output[-2000:]))
    direct = subprocess.run([sys.executable, os.path.join(project.CHECKER, "check_lab.py"), "--grade"] +
                            (["--draw", str(draw)] if isinstance(draw, int) else []) + [lab], capture_output=True, text=True)
    m = re.search(r"^score: ([\d.]+)/([\d.]+)$", direct.stdout, re.M)
    if results is None:
        checks.append(("run_autograder writes results.json", False, output[-3000:]))
    else:
        tests = results.get("tests", [])
        total = sum(t["score"] for t in tests)
        checks += [
            ("results.json has a test per STEP with score and max_score",
             [t["name"].split(":")[0] for t in tests] == ["STEP %d" % n for n in range(1, 8)]
             and all("max_score" in t and "output" in t for t in tests), json.dumps(tests)[:1500]),
            ("its tests add up to its total", abs(total - results["score"]) < 1e-9,
             "tests %g, total %g" % (total, results["score"])),
            ("its total equals check_lab.py --grade's score on the same draw",
             m is not None and abs(float(m.group(1)) - results["score"]) < 1e-9,
             "results.json %g, --grade: %s" % (results["score"], m.group(0) if m else direct.stdout[-500:])),
        ]
    for what, text, lowest, highest in (
            ("a lab that prints the lesson's answers to the public cases and computes nothing scores at most 1",
             memorised_answers.source(lesson), 0, 1),
            ("a lab that computes nothing (q, k and v zeros, STEP 3 to 6 constants) scores no more than the untouched "
             "starter's 2", make_class.lab_text("computes_nothing"), 0, 2),
            ("the lesson scores 7", make_class.lab_text("lesson"), 7, 7),
            ("a lab with one mistake (no scale) scores 6", make_class.lab_text("no_scale"), 6, 6)):
        results, output = autograde(root, text)
        checks.append((what, results is not None and lowest <= results["score"] <= highest,
                       "%s: %s" % (results and results["score"], (results or {}).get("output", output)[-1500:])))
    results, output = autograde(root, None)
    checks.append(("a submission without lab04_attention.cpp scores 0 with the reason",
                   results is not None and results["score"] == 0 and "no lab04_attention.cpp" in results["output"],
                   json.dumps(results) if results else output[-2000:]))
    results, output = autograde(root, open(lab_cpp).read().replace("int main(", "int main(oops", 1))
    checks.append(("a lab that does not compile scores 0 with the compiler's error",
                   results is not None and results["score"] == 0 and "did not compile" in results["output"]
                   and "error" in results["output"], json.dumps(results)[:2000] if results else output[-2000:]))
    results, output = autograde(root, make_class.lab_text("aborts_after_its_last_line"))
    steps = [t["score"] for t in results["tests"]] if results else None
    checks.append(("a lab that prints the lesson's numbers, then aborts, earns STEP 1 to 6 on what it printed",
                   steps == [1.0] * 6 + [0.0], json.dumps(results)[:2000] if results else output[-2000:]))
    checker = os.path.join(root, "source", "lab04", "checker", "grading.py")
    with open(checker) as f:
        kept = f.read()
    with open(checker, "a") as f:  # a bug of the grader's own
        f.write("\ndef grade(*args, **kwargs):\n    raise RuntimeError('a bug of the grader')\n")
    results, output = autograde(root, open(lab_cpp).read())
    with open(checker, "w") as f:
        f.write(kept)
    checks.append(("a fault of the grader's own is never a grade: no results.json, exit 1, the reason said",
                   results is None and output.endswith("exit 1") and "NOT GRADED" in output,
                   json.dumps(results)[:1000] if results else output[-2000:]))
    # PrairieLearn's image where no lab can be isolated (a build run as a user; a machine whose /
    # is closed): the pass is kept all the same, saying so, and each job decides by its own opt-in
    # (prairielearn_test). The image's build failed there before.
    record = os.path.join(root, "build", "lab04_preflight")
    os.rename(record, record + ".gradescope")
    prepared = subprocess.run([os.path.join(root, "source", "grader", "prepare_image"), os.path.join(root, "build"),
                               "--prairielearn"], capture_output=True, text=True, env=dict(os.environ, LAB_SANDBOX="none"))
    kept = open(record).read() if os.path.isfile(record) else ""
    os.replace(record + ".gradescope", record)
    try:  # (the record: the key, then how the lesson's runs and compile were isolated, as JSON)
        how = json.loads(kept.split("; isolated: ", 1)[1])
    except (IndexError, ValueError):
        how = None
    checks.append(("prepare_image --prairielearn where no lab can be isolated keeps the pass, saying how it ran (the "
                   "jobs decide by their opt-in)", prepared.returncode == 0 and how == {"runs": "none", "compiles": "none"},
                   (prepared.returncode, prepared.stderr[-600:], kept)))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
