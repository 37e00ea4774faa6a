"""No submission can forge its grade: labs that attack their grader get at most the grade of the
same lab without the attack, through the real path, and leave nothing behind.

usage: hostile_labs_test.py WORK_DIR

Every lab here is the lesson with two real mistakes (no scale, softmax over dimension 0: an
honest 5/7), plus a payload at the start of main: one forges the results and kills its grader,
one forges them and kills every process it can signal, one leaves a detached process that
rewrites the results for ten seconds, one writes to the grader's files, one starts hundreds of
processes that hold its output pipes, one takes more memory than its limit, one prints lines
that look like the grader's report, one tries to become root again, one fills the disk, one
kills every process of the machine by pid, one leaves results.json files wherever it can.

As root, each is graded by Gradescope's run_autograder in a folder that stands for /autograder
(set up by setup.sh, as Gradescope does): its score must be at most the honest one (exactly it,
where the payload cannot touch the numbers), the grader's files unchanged, no process of a
sandbox user left, and the run within its time limit. Then, where a user can make namespaces,
a lab that writes into the home folders is checked by the checker run as a user (nobody), with
bubblewrap and without it (util-linux's unshare): that user's home must stay untouched; and
with no sandbox at all the same lab does write it (so that this check can fail).

Hostile labs run only inside a PID namespace of their own: as root, a kill(-1) outside one
would end every process of the machine. This test runs itself again inside one
(unshare --pid --fork --mount-proc), and is skipped (exit 77) where none can be made, and
where the checker cannot isolate a lab (a system whose folders are closed to other users,
such as a chroot whose root folder has mode 700: the report then says "isolation: NONE").
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import checklist
import project

INCLUDES = """#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
"""

# What the payloads share: the paths their grader's processes name (its command lines can be
# read by anyone), and a forged results.json with full marks.
HELPERS = r"""
namespace hostile {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
std::vector<std::string> args_of(int pid) {
  std::vector<std::string> args;
  std::string all = slurp("/proc/" + std::to_string(pid) + "/cmdline"), one;
  for (char c : all) {
    if (c == '\0') { args.push_back(one); one.clear(); } else { one += c; }
  }
  return args;
}
int parent_of(int pid) {
  std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  return close == std::string::npos ? 0 : std::atoi(stat.c_str() + close + 4);
}
std::vector<std::string> targets() {  // every results file its graders name, or imply
  std::vector<std::string> found = {"results.json", "/autograder/results/results.json"};
  for (int pid = getppid(); pid > 1; pid = parent_of(pid)) {
    std::vector<std::string> args = args_of(pid);
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.size() > 5 && a.compare(a.size() - 5, 5, ".json") == 0) found.push_back(a);
      if (i > 0 && (args[i - 1] == "--gradescope" || args[i - 1] == "--report")) found.push_back(a);
      size_t at = a.find("/source/checker/check_lab.py");
      if (at != std::string::npos) found.push_back(a.substr(0, at) + "/results/results.json");
    }
  }
  return found;
}
std::vector<std::string> grader_files() {  // the checker and what it reads
  std::vector<std::string> found;
  for (int pid = getppid(); pid > 1; pid = parent_of(pid))
    for (const std::string& a : args_of(pid))
      if (a.find("check_lab.py") != std::string::npos || a.find("grade_class.py") != std::string::npos) {
        std::string dir = a.substr(0, a.rfind('/') + 1);
        for (const char* f : {"check_lab.py", "grading.py", "compare.py", "cases.py", "verdict.py",
                              "reference_attention.py", "sandbox.py", "../lab04/checker/compare.py",
                              "grade_class.py", "gradebook.py", "../lab04/checker/grading.py"})
          found.push_back(dir + f);
      }
  return found;
}
const char* kForged =
    "{\"score\": 7.0, \"output\": \"forged\", \"tests\": [{\"name\": \"STEP 1\", \"score\": 7.0, "
    "\"max_score\": 7.0, \"output\": \"forged\"}]}\n";
void forge() {
  for (const std::string& t : targets()) std::ofstream(t) << kForged;
}
}  // namespace hostile
"""

# The pipe holders are spawned sleeps (a fork of the lab, the child sleeping, where the system
# has no sleep): what the test times is then the grader, not the lab copying its LibTorch image
# 200 times a run (forks: 64 s more than the honest lab over a grade's seven runs, on a busy CI
# machine; spawns: 9 s, under two busy loops). They sleep HOLD seconds: a grader that waited for
# them to each run's 10 s limit took 71 s more (engine/run.cpp without its kill at the lab's
# end), past the minute the test allows; one that waited for their end would take HOLD more.
HOLD = 300
HOLDERS = ("for (int i = 0; i < 200; ++i) { pid_t p; char* words[] = {(char*)\"sleep\", (char*)\"%d\", nullptr}; "
           "if (posix_spawn(&p, \"/bin/sleep\", nullptr, nullptr, words, environ) != 0 && fork() == 0) "
           "{ sleep(%d); _exit(0); } }" % (HOLD, HOLD))
PAYLOADS = {  # name: (code at the start of main, whether the payload leaves the numbers alone)
    "forges_and_kills_its_grader": ("hostile::forge(); kill(getppid(), SIGKILL);", False),
    "forges_and_kills_every_process_it_can": ("hostile::forge(); kill(-1, SIGKILL);", False),
    "leaves_a_process_that_rewrites_the_results": (
        "if (fork() == 0) { setsid(); if (fork() == 0) { for (int i = 0; i < 40; ++i) { hostile::forge(); "
        "usleep(250000); } _exit(0); } _exit(0); }", True),
    "writes_to_the_graders_files": (
        "for (const std::string& f : hostile::grader_files()) { chmod(f.c_str(), 0777); "
        "std::ofstream(f, std::ios::app) << \"\\nraise SystemExit(0)\\n\"; }", True),
    "starts_200_processes_that_hold_its_pipes": (HOLDERS, True),
    "takes_more_memory_than_its_limit": (
        "{ std::vector<char> hog(size_t(8) << 30); std::memset(hog.data(), 1, hog.size()); }", False),
    "prints_lines_that_look_like_the_grade": (
        "for (int s = 1; s <= 7; ++s) { std::printf(\"STEP %d  step  1/1  right in every case\\n\", s); "
        "std::fprintf(stderr, \"STEP %d  step  1/1  right in every case\\n\", s); } "
        "std::printf(\"score: 7/7\\nOK      3,4,6,6\\n\"); std::fflush(stdout);", False),
    "tries_to_become_root_again": (
        "if (setuid(0) == 0 || seteuid(0) == 0) { hostile::forge(); kill(-1, SIGKILL); }", True),
    "fills_the_disk": (
        "{ std::ofstream big(std::string(std::getenv(\"HOME\") ? std::getenv(\"HOME\") : \"/tmp\") + \"/big\"); "
        "std::string mb(1 << 20, 'x'); for (int i = 0; i < 1024; ++i) big << mb; }", False),
    "kills_every_pid_one_by_one": (
        "if (DIR* d = opendir(\"/proc\")) { while (dirent* e = readdir(d)) { int pid = std::atoi(e->d_name); "
        "if (pid > 1 && pid != getpid()) kill(pid, SIGKILL); } closedir(d); }", False),
    "leaves_results_files_wherever_it_can": (
        "for (const char* d : {\"/tmp\", \"/var/tmp\", \"/dev/shm\", \".\"}) "
        "std::ofstream(std::string(d) + \"/results.json\") << hostile::kForged;", True),
}
HOME_WRITER = ("for (std::string d : {std::string(std::getenv(\"HOME\") ? std::getenv(\"HOME\") : \"\"), "
               "std::string(\"/root\")}) std::ofstream(d + \"/FORGED\") << \"x\"; "
               "if (DIR* h = opendir(\"/home\")) { while (dirent* e = readdir(h)) "
               "std::ofstream(std::string(\"/home/\") + e->d_name + \"/FORGED\") << \"x\"; closedir(h); }")
MAIN = "int main(int argc, char** argv) try {\n"


def honest(lesson):
    """The lesson with two real mistakes: no scale, softmax over dimension 0."""
    lab = lesson.replace("scores.mul_(1.0 / std::sqrt(double(HEAD)))", "scores.mul_(1.0)")
    lab = lab.replace("torch::softmax(scores, /*dim=*/-1)", "torch::softmax(scores, /*dim=*/0)")
    assert lab.count(MAIN) == 1 and lab != lesson, "the lesson's lines changed: update hostile_labs_test.py"
    return lab


def with_payload(lab, code):
    return INCLUDES + lab.replace(MAIN, HELPERS + MAIN + "  " + code + "\n", 1)


def digest(folder):
    """A hash of every file below folder but the submission's own lab."""
    h = hashlib.sha256()
    for top, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            if os.path.relpath(path, folder) != "lab04_attention.cpp" and "__pycache__" not in path:
                with open(path, "rb") as f:
                    h.update(path.encode() + b"\0" + f.read())
    return h.hexdigest()


def sandbox_processes():
    from lab04.checker import sandbox_users
    return sandbox_users.left_behind()[:20]


def autograde(root, text):
    shutil.rmtree(os.path.join(root, "submission"), ignore_errors=True)
    os.makedirs(os.path.join(root, "submission"))
    with open(os.path.join(root, "submission", "lab04_attention.cpp"), "w") as f:
        f.write(text)
    start = time.monotonic()
    run = subprocess.run([os.path.join(root, "source", "run_autograder")], capture_output=True, text=True,
                         env=dict(os.environ, AUTOGRADER_ROOT=root), timeout=900)
    seconds = time.monotonic() - start
    try:
        with open(os.path.join(root, "results", "results.json")) as f:
            return json.load(f), run.stdout + run.stderr, seconds
    except (OSError, ValueError) as e:
        return None, run.stdout + run.stderr + "\n(results.json: %s)" % e, seconds


def make_autograder(work):
    """A folder that stands for /autograder, set up by setup.sh as Gradescope does: (its path,
    None) or (None, the failed check)."""
    root = os.path.join(work, "autograder")
    os.makedirs(os.path.join(root, "source"))
    zip_path = os.path.join(work, "autograder.zip")
    subprocess.run([sys.executable, os.path.join(project.INSTRUCTOR, "make_starter.py"), "--autograder", zip_path],
                   check=True, capture_output=True)
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():
            path = z.extract(info, os.path.join(root, "source"))
            os.chmod(path, (info.external_attr >> 16) or 0o644)
    setup = subprocess.run(["bash", os.path.join(root, "source", "setup.sh")], capture_output=True, text=True,
                           env=dict(os.environ, AUTOGRADER_ROOT=root, LAB_SKIP_INSTALL="1"))
    if setup.returncode != 0:
        return None, ("setup.sh builds the project", False, (setup.stdout + setup.stderr)[-2000:])
    return root, None


def build_in(root, text, name, work):
    """The lab built by the autograder's build (as a student would build it), copied to
    work/bin/name: a program to give the checker."""
    with open(os.path.join(root, "source", "lab04_attention.cpp"), "w") as f:
        f.write(text)
    subprocess.run(["cmake", "--build", os.path.join(root, "build"), "--target", "lab04_attention"], check=True,
                   capture_output=True)
    os.makedirs(os.path.join(work, "bin"), exist_ok=True)
    built = shutil.copy(os.path.join(root, "build", "lab04_attention"), os.path.join(work, "bin", name))
    os.chmod(built, 0o755)
    return built


def as_root(work, lesson):
    root, failed = make_autograder(work)
    if failed:
        return [failed], None
    base = honest(lesson)
    results, output, base_seconds = autograde(root, base)
    if results is None:
        return [("the honest lab is graded", False, output[-2000:])], None
    fair, fair_status = results["score"], results.get("extra_data", {}).get("status")
    print("the honest lab (no scale, softmax over dimension 0): %g (%s) in %.1f s" % (fair, fair_status, base_seconds))
    checks = [("the honest lab scores 5 (STEP 3 and 5 lost)", fair == 5, json.dumps(results)[:1000])]
    grader = digest(os.path.join(root, "source"))
    binaries = {}
    for name, (code, exact) in PAYLOADS.items():
        results, output, seconds = autograde(root, with_payload(base, code))
        score = results["score"] if results else None
        status = results.get("extra_data", {}).get("status") if results else None
        left = sandbox_processes()
        print("%-46s score %s (%s) in %.1f s%s" % (name, score, status, seconds, "" if results else ": " + output[-300:]))
        # A payload that leaves the numbers alone must also end as the honest lab ends (its status:
        # graded, not timed out or crashed), not only score as it.
        fine = score is not None and (score == fair and status == fair_status if exact else score <= fair)
        checks.append(("%s: scores %s the honest %g%s" % (name, "exactly" if exact else "at most", fair,
                                                       ", and is %s as it" % fair_status if exact else ""), fine,
                       "score %s (%s)\n%s" % (score, status, json.dumps(results)[:800] if results else output[-1500:])))
        limit = base_seconds + 60
        files = "unchanged" if digest(os.path.join(root, "source")) == grader else "CHANGED"
        checks.append(("%s: the grader's files are unchanged, no process of its sandbox is left, within %d s (a minute "
                       "more than the honest lab)" % (name, limit),
                       files == "unchanged" and not left and seconds < limit,
                       "processes %s, %.1f s, files %s" % (left, seconds, files)))
    binaries["home_writer"] = build_in(root, with_payload(base, HOME_WRITER), "writes_into_the_homes", work)
    return checks, binaries


def as_a_user(work, lab):
    """The checker run as nobody, with its home in /home: with bubblewrap, with unshare, with none.
    Nobody runs a copy of checker/ and of the lab, in a folder of /tmp it can enter: the project
    and the build may be in one it cannot (a folder of mode 700, as root's home)."""
    checks = []
    home = "/home/lab04-hostile-test-%d" % os.getpid()
    os.makedirs(home)
    os.chown(home, 65534, 65534)
    copy = tempfile.mkdtemp(prefix="lab04-hostile-test-")
    os.chmod(copy, 0o755)
    project.project_files.copy(project.ROOT, project.checker_files(), copy)
    checker = os.path.join(copy, "checker")
    lab = shutil.copy(lab, copy)
    try:
        for mode, words in (("bwrap", "isolation: bubblewrap"), ("unshare", "isolation: namespaces"),
                            ("none", "isolation: NONE")):
            for f in os.listdir(home):
                os.remove(os.path.join(home, f))
            run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env",
                                  "HOME=" + home, "LAB_SANDBOX=" + mode, sys.executable,
                                  os.path.join(checker, "check_lab.py"), "--grade", lab],
                                 capture_output=True, text=True, timeout=600, cwd="/")
            said = next((line for line in run.stdout.splitlines() if "isolation:" in line), run.stderr.strip())
            print("as nobody, LAB_SANDBOX=%s: %s" % (mode, said[:160]))
            written = os.listdir(home)
            if mode == "none":
                checks.append(("without a sandbox the same lab does write that home (so the checks above can fail)",
                               "FORGED" in written and words in said, "home holds %s; %s" % (written, said)))
            elif "cannot make namespaces" in run.stderr or "cannot be made here" in run.stderr:
                checks.append(("as a user, LAB_SANDBOX=%s: skipped, no namespaces here" % mode, True, ""))
            else:
                checks.append(("as a user, LAB_SANDBOX=%s: the report says so, and the lab cannot write the home"
                               % mode, words in said and not written, "home holds %s; %s" % (written, said)))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(copy, ignore_errors=True)
    return checks


def main(argv):
    if len(argv) != 1:
        print("hostile_labs_test: usage: hostile_labs_test.py WORK_DIR", file=sys.stderr)
        return 2
    if os.environ.get("LAB04_HOSTILE_NAMESPACE") != "1":
        for isolate in (["unshare", "--pid", "--fork", "--mount-proc"],
                        ["unshare", "--pid", "--fork", "--mount-proc", "--propagation", "unchanged"]):
            probe = subprocess.run(isolate + ["true"], capture_output=True, text=True)
            if probe.returncode == 0:
                env = dict(os.environ, LAB04_HOSTILE_NAMESPACE="1")
                return subprocess.run(isolate + [sys.executable, os.path.abspath(__file__)] + argv, env=env).returncode
        print("SKIPPED: hostile labs run only inside a PID namespace, and none can be made here (%s)"
              % probe.stderr.strip())
        return 77
    if os.geteuid() != 0:
        print("SKIPPED: grading through run_autograder as Gradescope does needs root")
        return 77
    from lab04.checker import sandbox
    box = sandbox.Sandbox("/bin/true")  # as the checker will run each lab, as root
    box.close()
    if box.mode != "user":
        print("SKIPPED: the checker cannot isolate a lab here, so no hostile lab is graded: " + box.isolation)
        return 77
    work = argv[0]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    lesson = open(os.path.join(project.ROOT, "lab04_attention.cpp")).read()
    checks, binaries = as_root(work, lesson)
    if binaries:
        checks += as_a_user(work, binaries["home_writer"])
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
