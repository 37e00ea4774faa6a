#!/usr/bin/env python3
"""Classroom 50's autograder, run as Classroom 50's runner runs it: in the student's checkout,
with the runner's environment, as `python3 autograder.py`.

usage: classroom50_test.py WORK_DIR LAB_CPP LAB LESSON

  WORK_DIR  a folder for the simulation (emptied first)
  LAB_CPP   a submission: a lab04_attention.cpp (a mutant, say)
  LAB       the same lab, built (check_lab.py --grade grades it directly, to compare)
  LESSON    the lesson, built (to write a lab that prints its answers)

make_starter.py --classroom50 writes the classroom's part; its template/ becomes a student's
repository (a commit at a known time), its autograder/ the bundle. Each result.json is checked
against the rules Classroom 50's collector (collect_scores.py) states for
classroom50/result/v1, written out here: the schema, the identity fields equal to the runner's
variables, non-empty URLs, the commit's time in UTC, whole non-negative points with score <=
max-score, a list of tests each with a name, a boolean passed and whole points, and no
top-level field the schema does not name. Then: the mutant scores what check_lab.py --grade
gives it on the draw of cases the release names; a lab that only prints the lesson's answers
to the public cases scores at most 1, the lesson 7, a lab with one mistake 6 (each push is
graded on cases drawn anew); a lab that reads its whole memory finds none of the runner's
secrets (SECRET, GITHUB_TOKEN set with values of the test's own); the starter as given has STEP 1 and 2 right and STEP 3 not written yet; a lab that does not compile, or no
lab, scores 0 with the reason (and a result.json left in the checkout by the student is not
what is read); a grader fault writes no result.json and exits 1; no runner's variables is one
line and exit 2; points that are not whole are refused when making it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import checklist
import make_class
import memorised_answers
import memory_scanner
import project

MAKE_STARTER = os.path.join(project.ROOT, "instructor", "make_starter.py")
COMMITTED = 1796187540  # the student's commit: 2026-12-02T04:59:00Z
TOP_LEVEL = {"schema", "classroom", "assignment", "assignment_type", "owner", "submission", "commit", "release",
             "review", "datetime", "graded_at", "score", "max-score", "tests", "submitted_by"}


def runner_environment(work, checkout):
    """What Classroom 50's runner gives an autograder (its workflow's and runner.py's variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CLASSROOM", "ASSIGNMENT"))}
    repo = "https://github.com/cs-org/cs101-lab04-attention-ada"
    env.update(CLASSROOM="cs101", ASSIGNMENT="lab04-attention", SUBMISSION_TAG="submit/2026-12-02T04-59-00Z-1a2b3c4",
               PAGES_BASE_URL="https://cs-org.github.io/classroom50", SECRET="", MODE="individual",
               ALLOWED_FILES="[]", RELEASE_ASSETS="[]", USERNAME="ada", OWNER="ada", ASSIGNMENT_TYPE="individual",
               COMMIT_URL=repo + "/commit/1a2b3c4", RELEASE_URL=repo + "/releases/tag/submit%2F2026-12-02T04-59-00Z",
               REVIEW_URL=repo + "/compare/0f0f0f0...1a2b3c4", CLASSROOM50_BUNDLE_DIR=os.path.join(work, "bundle"),
               GITHUB_WORKSPACE=checkout, GITHUB_REPOSITORY="cs-org/cs101-lab04-attention-ada",
               GITHUB_SERVER_URL="https://github.com", GITHUB_SHA="1a2b3c4", GITHUB_ACTOR="ada",
               GITHUB_ACTOR_ID="42", GITHUB_OUTPUT=os.path.join(work, "github_output"),
               GITHUB_STEP_SUMMARY=os.path.join(work, "step_summary"), RUNNER_TEMP=os.path.join(work, "runner_temp"))
    return env


def checkout_of(work, name, lab_text):
    """A student's repository made from the template, with lab_text as its lab (None: no lab)."""
    checkout = os.path.join(work, "checkouts", name)
    shutil.copytree(os.path.join(work, "classroom", "template"), checkout)
    lab = os.path.join(checkout, "lab04_attention.cpp")
    if lab_text is None:
        os.remove(lab)
    elif lab_text is not False:
        with open(lab, "w") as f:
            f.write(lab_text)
    when = "@%d +0000" % COMMITTED
    git = ["git", "-C", checkout, "-c", "user.name=ada", "-c", "user.email=ada@example.edu"]
    subprocess.run(["git", "init", "-q", "-b", "main", checkout], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "my lab"], check=True,
                   env=dict(os.environ, GIT_COMMITTER_DATE=when, GIT_AUTHOR_DATE=when))
    return checkout


def autograde(work, checkout, env=None, prefix=(), script="autograder.py"):
    """Runs autograder.py as the runner does: (exit status, result or None, release body, output).
    prefix: what it runs through (as a user without root, say)."""
    os.makedirs(os.path.join(work, "runner_temp"), exist_ok=True)
    done = subprocess.run(list(prefix) + [sys.executable, os.path.join(work, "bundle", script)], cwd=checkout,
                          env=env or runner_environment(work, checkout), capture_output=True, text=True, timeout=1200)
    result = body = None
    try:
        with open(os.path.join(checkout, "result.json")) as f:
            result = json.load(f)
        with open(os.path.join(checkout, "release-body.md")) as f:
            body = f.read()
    except (OSError, ValueError):
        pass
    return done.returncode, result, body, done.stdout + done.stderr


TOKEN = "ghs_the-jobs-own-token-0d1e2f"  # what a checkout's .git/config holds on a runner
# A lab that puts its checkout's .git/config (where actions/checkout leaves the job's token)
# into its own binary at compile time, and prints it.
INCBIN = r"""__asm__(".section .rodata\n.global lab04_config\nlab04_config:\n.incbin \"CONFIG\"\n.byte 0\n.previous\n");
#include <cstdio>
extern "C" const char lab04_config[];
int main() {
  std::printf("STEP 1: %s\n", lab04_config);
  std::fprintf(stderr, "config: %s\n", lab04_config);
  return 0;
}
"""
# A lab that tries to read what the job keeps in $RUNNER_TEMP, and says what it found.
READS_RUNNER_TEMP = r"""#include <cstdio>
int main() {
  std::FILE* f = std::fopen("PATH", "r");
  char line[128] = "";
  if (f && std::fgets(line, sizeof line, f)) std::fprintf(stderr, "runner_temp: readable: %s\n", line);
  else std::fprintf(stderr, "runner_temp: hidden\n");
  return 3;
}
"""


def with_token(work, name, text):
    """A checkout whose .git/config holds TOKEN, as actions/checkout leaves it, with text as its lab
    (CONFIG in it: that file's path)."""
    checkout = checkout_of(work, name, "")
    config = os.path.join(checkout, ".git", "config")
    with open(config, "a") as f:
        f.write('[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic %s\n' % TOKEN)
    with open(os.path.join(checkout, "lab04_attention.cpp"), "w") as f:
        f.write(text.replace("CONFIG", config))
    return checkout


def runner_side(work, checks):
    """As root: the runner's folders keep their modes, and no run reads $RUNNER_TEMP's files."""
    # A $RUNNER_TEMP in /home, as a runner's is (GitHub's: /home/runner/work/_temp), not in the
    # project or /tmp (which runs see nothing of anyway), of mode 750 as a runner's home is; its
    # build, the one made already.
    temp = tempfile.mkdtemp(prefix="lab04-runner-temp-", dir="/home" if os.path.isdir("/home") else None)
    os.chmod(temp, 0o750)
    os.symlink(os.path.join(work, "runner_temp", "lab04-build"), os.path.join(temp, "lab04-build"))
    step = os.path.join(temp, "step-script.sh")
    with open(step, "w") as f:
        f.write("the job's own step script\n")
    os.chmod(step, 0o644)
    checkout = checkout_of(work, "reads_runner_temp", READS_RUNNER_TEMP.replace("PATH", step))
    try:
        status, result, body, output = autograde(work, checkout, env=dict(runner_environment(work, checkout),
                                                                          RUNNER_TEMP=temp))
        mode = os.stat(temp).st_mode & 0o777
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    if os.geteuid() != 0 or a_user_of_its_own_runs():
        checks.append(("as root: a lab reading the job's step script in $RUNNER_TEMP finds it hidden, and the folder "
                       "holding the build keeps its mode (750) after the grade", status == 0 and result is not None
                       and "runner_temp: hidden" in (body or "") and "the job's own" not in (body or "") + output
                       and mode == 0o750, "exit %d, mode %o\n%s" % (status, mode, (body or output)[-1200:])))
    else:  # graded unisolated (above): the release must say so
        checks.append(("as root where no user of its own can run programs, made with --grade-unisolated: graded, the "
                       "release body opening with 'Isolation: NONE', and the folder holding the build keeps its mode "
                       "(750)", status == 0 and result is not None and (body or "").startswith("Isolation: NONE")
                       and mode == 0o750, "exit %d, mode %o\n%s" % (status, mode, (body or output)[-1200:])))


def a_user_of_its_own_runs():
    """As root: whether a user of no group of root's can run a program here (not where the
    system's folders are closed to other users, as in some chroots)."""
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/bin/sh", "-c",
                           "exit 0"], cwd="/", capture_output=True).returncode == 0


def without_root(work, checks):
    """As a user without root or sudo: where user namespaces are allowed the compile is in
    bubblewrap (an .incbin of the checkout's .git/config does not compile); where they are not
    (a user namespace whose limit is used up: the kernel's own rule), nothing is graded and the
    release says why, unless the autograder was made to grade anyway."""
    user = ["unshare", "--user", "--map-user=1000", "--map-group=1000", "--"]
    if subprocess.run(user + ["true"], capture_output=True).returncode != 0:
        print("left out: the checks without root (no user namespace can be made here, as in a chroot)")
        return
    no_namespaces = ["unshare", "--user", "--map-root-user", "--", "sh", "-c",
                     "echo 1 > /proc/sys/user/max_user_namespaces && exec \"$@\"", "sh"] + user
    checkout = with_token(work, "incbin_no_root", INCBIN)
    status, result, body, output = autograde(work, checkout, prefix=user)
    checks.append(("without root, with user namespaces: a lab that .incbin's its checkout's .git/config does not "
                   "compile (the file is not in the compile's root), scores 0, and the token is nowhere",
                   status == 0 and result is not None and result["score"] == 0
                   and "did not compile" in result["tests"][0].get("message", "")
                   and TOKEN not in (body or "") + json.dumps(result) + output,
                   "exit %d, %s\n%s" % (status, result and result["score"], (body or output)[-1500:])))
    refusing = os.path.join(work, "bundle", "autograder_refusing.py")  # (where root's runs are not isolated)
    with open(refusing if os.path.exists(refusing) else os.path.join(work, "bundle", "autograder.py")) as f:
        made = f.read()
    with open(refusing, "w") as f:
        f.write(made)
    checkout = with_token(work, "incbin_no_namespaces", INCBIN)
    status, result, body, output = autograde(work, checkout, prefix=no_namespaces, script="autograder_refusing.py")
    said = [l for l in output.splitlines() if "NOT GRADED" in l]
    checks.append(("without root or user namespaces: not graded (exit 1, no result.json), one line saying the compile "
                   "cannot be isolated, and the release body says so; the token is nowhere",
                   status == 1 and result is None and not os.path.exists(os.path.join(checkout, "result.json"))
                   and len(said) == 1 and "cannot be isolated" in said[0]
                   and "cannot be isolated" in open(os.path.join(checkout, "release-body.md")).read()
                   and TOKEN not in output, "exit %d\n%s" % (status, output[-1500:])))
    grading_anyway = made.replace('UNISOLATED = "refuse"', 'UNISOLATED = "grade"')
    with open(os.path.join(work, "bundle", "autograder_grade_unisolated.py"), "w") as f:
        f.write(grading_anyway)
    checkout = checkout_of(work, "lesson_no_namespaces", make_class.lab_text("lesson"))
    status, result, body, output = autograde(work, checkout, prefix=no_namespaces,
                                             script="autograder_grade_unisolated.py")
    checks.append(("the same, made with --grade-unisolated: graded (the lesson: 7), the release body opening with "
                   "'Isolation: NONE'", status == 0 and result is not None and result["score"] == 7
                   and (body or "").startswith("Isolation: NONE"), "exit %d\n%s" % (status, (body or output)[-1200:])))


def whole(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def contract_problems(result, env):
    """What collect_scores.py would refuse in result (an empty list: it is taken)."""
    if not isinstance(result, dict):
        return ["not an object"]
    p = []
    if result.get("schema") != "classroom50/result/v1":
        p.append("schema is %r" % result.get("schema"))
    for key, want in (("classroom", env["CLASSROOM"]), ("assignment", env["ASSIGNMENT"]),
                      ("assignment_type", env["ASSIGNMENT_TYPE"])):
        if result.get(key) != want:
            p.append("%s is %r, not %r" % (key, result.get(key), want))
    if not isinstance(result.get("owner"), str) or result["owner"].lower() != env["OWNER"].lower():
        p.append("owner is %r" % result.get("owner"))
    if not str(result.get("submission", "")).startswith("submit/"):
        p.append("submission does not start with submit/")
    for key in ("submission", "commit", "release", "review", "datetime"):
        if not isinstance(result.get(key), str) or not result[key]:
            p.append("%s is not a non-empty string" % key)
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(result.get("datetime"))):
        p.append("datetime %r is not YYYY-MM-DDTHH:MM:SSZ" % result.get("datetime"))
    if not whole(result.get("score")) or not whole(result.get("max-score")):
        p.append("score or max-score is not a whole number >= 0")
    elif result["score"] > result["max-score"]:
        p.append("score > max-score")
    if not isinstance(result.get("tests"), list):
        p.append("tests is not a list")
    for t in result.get("tests") or []:
        if not isinstance(t, dict) or not isinstance(t.get("test-name"), str) or not t["test-name"] \
                or not isinstance(t.get("passed"), bool) or not whole(t.get("score")) or not whole(t.get("max-score")) \
                or t["score"] > t["max-score"]:
            p.append("test %r breaks the rules" % (t,))
    extra = set(result) - TOP_LEVEL
    if extra:
        p.append("top-level fields the schema does not name: %s" % sorted(extra))
    return p


def main(argv):
    if len(argv) != 4:
        print("classroom50_test: usage: classroom50_test.py WORK_DIR LAB_CPP LAB LESSON", file=sys.stderr)
        return 2
    work, lab_cpp, lab, lesson = (os.path.abspath(a) for a in argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    checks = []
    made = subprocess.run([sys.executable, MAKE_STARTER, "--classroom50", os.path.join(work, "classroom")],
                          capture_output=True, text=True)
    template = os.path.join(work, "classroom", "template")
    checks.append(("make_starter.py --classroom50 writes template/, autograder/autograder.py and runtime.json; the "
                   "template holds no .github/workflows/autograde.yaml (Classroom 50's own) and no grade workflow",
                   made.returncode == 0 and os.path.isfile(os.path.join(template, "lab04_attention.cpp"))
                   and os.path.isfile(os.path.join(work, "classroom", "autograder", "autograder.py"))
                   and os.path.isfile(os.path.join(work, "classroom", "runtime.json"))
                   and not os.path.exists(os.path.join(template, ".github", "workflows")), made.stdout + made.stderr))
    if made.returncode != 0:
        return checklist.report(checks)
    shutil.copytree(os.path.join(work, "classroom", "autograder"), os.path.join(work, "bundle"))
    if os.geteuid() == 0 and not a_user_of_its_own_runs():
        # As root where no other user can run a program (a chroot whose / is mode 700): the lab
        # could not be isolated, so the autograder refuses; the checks that follow grade with a
        # bundle made with --grade-unisolated, whose releases must say Isolation: NONE.
        checkout = checkout_of(work, "lesson_root_cannot_isolate", make_class.lab_text("lesson"))
        status, result, body, output = autograde(work, checkout)
        said = [l for l in output.splitlines() if "NOT GRADED" in l]
        release = os.path.join(checkout, "release-body.md")
        body = open(release).read() if os.path.isfile(release) else ""
        checks.append(("as root where no user of its own can run programs: not graded (exit 1, no result.json), one "
                       "line saying why, and the release body says so", status == 1 and result is None
                       and len(said) == 1 and "no user of its own" in said[0] and "Not graded" in body,
                       "exit %d\n%s" % (status, output[-1200:])))
        made = subprocess.run([sys.executable, MAKE_STARTER, "--classroom50", "--grade-unisolated",
                               os.path.join(work, "classroom_unisolated")], capture_output=True, text=True)
        bundle = os.path.join(work, "bundle")
        os.replace(os.path.join(bundle, "autograder.py"), os.path.join(bundle, "autograder_refusing.py"))
        shutil.copy2(os.path.join(work, "classroom_unisolated", "autograder", "autograder.py"), bundle)
        print("left out: the checks of an isolated grade as root (no user of its own can run programs here, as in a "
              "chroot whose / is closed): graded with --grade-unisolated instead")
    refused = subprocess.run([sys.executable, MAKE_STARTER, "--classroom50", "--points", "1.5,1,1,1,1,1,1",
                              os.path.join(work, "fractions")], capture_output=True, text=True)
    checks.append(("points that are not whole are refused: one line, exit 2, nothing written",
                   refused.returncode == 2 and len(refused.stderr.splitlines()) == 1 and "whole numbers" in refused.stderr
                   and not os.path.exists(os.path.join(work, "fractions")), refused.stderr))

    with open(lab_cpp) as f:
        checkout = checkout_of(work, "mutant", f.read())
    env = runner_environment(work, checkout)
    status, result, body, output = autograde(work, checkout)
    draw = re.search(r"cases drawn for this grade \(draw (\d+)\)", body or "")
    checks.append(("the release names the draw of cases it was graded on", draw is not None, (body or output)[-1500:]))
    direct = subprocess.run([sys.executable, os.path.join(project.CHECKER, "check_lab.py"), "--grade"] +
                            (["--draw", draw.group(1)] if draw else []) + [lab], capture_output=True, text=True)
    m = re.search(r"^score: (\d+)/7$", direct.stdout, re.M)
    steps = [int(s) for s in re.findall(r"^STEP \d  .*? (\d)/1  ", direct.stdout, re.M)]
    problems = contract_problems(result, env) if result else ["no result.json"]
    checks.append(("a mutant: exit 0 and a result.json that follows the v1 contract", status == 0 and not problems,
                   "exit %d, %s\n%s" % (status, problems, output[-1500:])))
    if result:
        checks.append(("its score is check_lab.py --grade's (%s), and each STEP's test has that STEP's points"
                       % (m.group(1) if m else "?"), m is not None and result["score"] == int(m.group(1))
                       and [t["score"] for t in result["tests"]] == steps and len(result["tests"]) == 7
                       and result["max-score"] == 7 and sum(t["score"] for t in result["tests"]) == result["score"],
                       (result["score"], [t["score"] for t in result["tests"]], direct.stdout[-600:])))
        checks.append(("its datetime is the commit's committer time in UTC", result["datetime"] == "2026-12-02T04:59:00Z",
                       result["datetime"]))
        checks.append(("its release-body.md gives the grade step by step and the diagnosis",
                       body is not None and "%d/7" % result["score"] in body and "diagnosis:" in body
                       and "STEP 5" in body, (body or "")[:800]))

    for name, text, lowest, highest in (("memorised", memorised_answers.source(lesson), 0, 1),
                                        ("computes_nothing", make_class.lab_text("computes_nothing"), 0, 2),
                                        ("lesson", make_class.lab_text("lesson"), 7, 7),
                                        ("one_mistake", make_class.lab_text("no_scale"), 6, 6)):
        status, result, body, output = autograde(work, checkout_of(work, name, text))
        checks.append(("%s: a score from %d to %d (%s)" % (name, lowest, highest, {
            "memorised": "it prints the lesson's answers to the public cases and computes nothing",
            "computes_nothing": "q, k and v zeros, STEP 3 to 6 constants: no more than the untouched starter",
            "lesson": "full marks", "one_mistake": "no scale: one step lost"}[name]),
            status == 0 and result is not None and lowest <= result["score"] <= highest,
            "exit %d, %s\n%s" % (status, result and result["score"], (body or output)[-1200:])))

    # A lab that reads its whole memory for the runner's secrets (a job's token, an instructor's
    # variable), set for the autograder with values of their own: it must find neither, and say
    # it scanned (its marker found on its own stack).
    secrets = memory_scanner.values()
    checkout = checkout_of(work, "scanner", memory_scanner.source())
    status, result, body, output = autograde(work, checkout, env=dict(runner_environment(work, checkout), **secrets))
    with open(os.path.join(checkout, "result.json"), errors="replace") if result else open(os.devnull) as f:
        written = f.read() + (body or "")
    found = [k for k, v in secrets.items() if v in written + output]
    checks.append(("a lab that scans its memory finds neither SECRET nor GITHUB_TOKEN of the runner's environment "
                   "(its release body says it scanned and found nothing), exit 0, score 0",
                   status == 0 and result is not None and result["score"] == 0 and not found
                   and memory_scanner.SCANNED in written, "exit %d, found %s\n%s" % (status, found, (body or output)[-1500:])))

    checkout = checkout_of(work, "starter", False)
    status, result, body, output = autograde(work, checkout)
    checks.append(("the starter as given: exit 0, a valid result.json, STEP 1 and 2 right, STEP 3 'not written yet'",
                   status == 0 and result is not None and not contract_problems(result, env)
                   and [t["passed"] for t in result["tests"]][:3] == [True, True, False]
                   and "not written yet" in result["tests"][2].get("message", ""),
                   "exit %d, %s\n%s" % (status, result, output[-800:])))

    checkout = checkout_of(work, "compile_error", make_class.lab_text("compile_error"))
    with open(os.path.join(checkout, "result.json"), "w") as f:  # the student's own, pushed along
        json.dump({"schema": "classroom50/result/v1", "score": 7, "max-score": 7, "tests": []}, f)
    status, result, body, output = autograde(work, checkout)
    checks.append(("a lab that does not compile: exit 0, score 0 with the reason in every test, the compiler's "
                   "message in the release body; the student's own result.json is not what comes out",
                   status == 0 and result is not None and not contract_problems(result, env) and result["score"] == 0
                   and all("did not compile" in t.get("message", "") for t in result["tests"])
                   and body is not None and "error" in body,
                   "exit %d, %s\n%s" % (status, result, output[-800:])))

    # A checkout that lays traps for the files the autograder writes: result.json.new a link to a
    # file outside, release-body.md a folder. Nothing outside changes; the grade is written.
    outside = os.path.join(work, "outside.txt")
    with open(outside, "w") as f:
        f.write("untouched\n")
    checkout = checkout_of(work, "traps", make_class.lab_text("lesson"))
    os.symlink(outside, os.path.join(checkout, "result.json.new"))
    os.symlink(outside, os.path.join(checkout, "release-body.md.new"))
    os.makedirs(os.path.join(checkout, "release-body.md"))
    status, result, body, output = autograde(work, checkout)
    checks.append(("a checkout whose result.json.new links out and whose release-body.md is a folder: the file "
                   "outside unchanged, result.json a file of its own with full marks, exit 0",
                   status == 0 and open(outside).read() == "untouched\n" and result is not None
                   and not os.path.islink(os.path.join(checkout, "result.json")) and result["score"] == 7,
                   "exit %d, outside %r\n%s" % (status, open(outside).read()[:200], output[-800:])))

    checkout = checkout_of(work, "no_lab", None)
    status, result, body, output = autograde(work, checkout)
    checks.append(("a checkout with no lab04_attention.cpp: exit 0, score 0, 'no lab'",
                   status == 0 and result is not None and not contract_problems(result, env) and result["score"] == 0
                   and "no lab" in result["tests"][0].get("message", ""), "exit %d, %s\n%s" % (status, result, output[-800:])))

    checkout = checkout_of(work, "crash", make_class.lab_text("crashes_after_step_4"))
    status, result, body, output = autograde(work, checkout)
    checks.append(("a lab that crashes after STEP 4: exit 0, graded on what it printed (STEP 1 to 4 right)",
                   status == 0 and result is not None and not contract_problems(result, env)
                   and [t["passed"] for t in result["tests"]][:4] == [True] * 4 and result["score"] < 7,
                   "exit %d, %s\n%s" % (status, result, output[-800:])))

    runner_side(work, checks)
    without_root(work, checks)

    # A grader fault: the bundle's checker broken. No result.json, exit 1, never a 0.
    grading = os.path.join(work, "bundle", "project", "lab04", "checker", "grading.py")
    with open(grading) as f:
        kept = f.read()
    with open(grading, "a") as f:
        f.write("\n\ndef grade(*args, **kwargs):\n    raise RuntimeError('a bug of the grader')\n")
    try:
        checkout = checkout_of(work, "fault", make_class.lab_text("lesson"))
        status, result, body, output = autograde(work, checkout)
    finally:
        with open(grading, "w") as f:
            f.write(kept)
    checks.append(("a fault of the grader's own: no result.json, exit 1, the reason on stderr",
                   status == 1 and result is None and not os.path.exists(os.path.join(checkout, "result.json"))
                   and "NOT GRADED" in output, "exit %d\n%s" % (status, output[-800:])))

    bare = {k: v for k, v in runner_environment(work, checkout).items() if k not in ("CLASSROOM", "SUBMISSION_TAG")}
    status, result, body, output = autograde(work, checkout, env=bare)
    checks.append(("without the runner's variables: one line naming them, exit 2, no result.json",
                   status == 2 and result is None and len(output.strip().splitlines()) == 1 and "CLASSROOM" in output,
                   "exit %d\n%s" % (status, output[-400:])))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
