"""A lab sees nothing but its own stage: a lab that walks the file system and reads every file
it can finds nothing of a classmate, an earlier term, an earlier gradebook or the instructor,
on shared storage (not /tmp, which every run has of its own), through check_lab.py as root
and as a user with bubblewrap, and through the class grader as root; and where a sandbox can
only hide a list of places (util-linux's unshare, or none), its isolation line says that the
rest is readable, never by omission. As root without the right to make namespaces (CAP_SYS_ADMIN
dropped with capsh, as Docker's defaults run a container), check_lab.py and the class grader
keep the lab's user id out of what it must not read (the project, the lab's build folder, the
class, an earlier term, --hide's places) with an ACL entry of no right, say that the rest is
readable, and leave no ACL behind.

usage: allowlist_test.py BUILD WORK_DIR

The places stand for what a grading machine holds: /srv (a class folder and the gradebook
being written, an earlier gradebook), /var/lib (an earlier term's class, given to
--similar-to), /opt (a course's hidden cases), and an instructor's home of mode 755 under
/home. Each holds a file with a marker of its own (LAB04-MARKER-<place>-<token>, the token
drawn here, in no lab's code). The walking lab reads every file of up to 256 kB, breadth first,
for 5 s, leaving out /usr and every proc, sys and dev folder, and writes the markers it found and how many
files it read to its errors, which the report quotes; then it exits 3. Expected, from where
the markers were put: no marker in any report, feedback or gradebook of a sandbox with a root
of its own; the walk read files (it ran); without a sandbox (LAB_SANDBOX=none) it finds them
(so that the checks can fail).

Runs itself again inside a PID namespace; needs root (skipped, exit 77, elsewhere).
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile

import checklist
import hostile_labs_test as hostile
import project

PLACES = {"GRADEBOOK": "/srv", "TERM": "/var/lib", "HIDDEN_CASES": "/opt", "HOME": "/home"}
NOBODY = 65534
WALKER = r"""
#include <dirent.h>
#include <sys/stat.h>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <set>
#include <string>
// Reads every file it can, breadth first, for 5 s; what it found goes to its errors.
static int walked = [] {
  const auto start = std::chrono::steady_clock::now();
  std::deque<std::string> folders = {"/"};
  std::set<std::string> found;
  int read = 0;
  while (!folders.empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    const std::string folder = folders.front();
    folders.pop_front();
    DIR* d = opendir(folder.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      const std::string path = (folder == "/" ? "" : folder) + "/" + name;
      if (name == "." || name == ".." || path == "/usr" || name == "proc" || name == "sys" || name == "dev") continue;
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) break;
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        folders.push_back(path);
      } else if (S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size < (256 << 10)) {  // (not a /proc's file)
        std::ifstream f(path, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (!f.bad() && f.is_open()) ++read;
        for (size_t at = text.find("LAB04-MARKER-"); at != std::string::npos; at = text.find("LAB04-MARKER-", at + 1)) {
          size_t end = at + 13;  // a marker: LAB04-MARKER-, capitals, a dash, hex digits
          while (end < text.size() && (std::isupper(text[end]) || std::isdigit(text[end]) || text[end] == '_' ||
                                       text[end] == '-' || (text[end] >= 'a' && text[end] <= 'f')))
            ++end;
          const size_t dash = text.rfind('-', end - 1);  // the token: hex digits after the last dash
          if (std::isupper(text[at + 13]) && dash != std::string::npos && dash > at + 13 && end - dash > 6)
            found.insert(text.substr(at + 13, end - at - 13));  // (said without the prefix: short)
        }
      }
    }
    closedir(d);
  }
  std::string said;
  for (const std::string& m : found) said += m + " ";
  std::fprintf(stderr, "walked: read %d files; found: %s\n", read, said.c_str());
  std::exit(3);
  return 0;
}();
"""


def markers_in(text, token):
    """The places whose markers a text names (the walker says PLACE-TOKEN, without the prefix)."""
    return sorted(set(re.findall(r"(?:LAB04-MARKER-)?\b([A-Z_]+)-" + token, text)))


def walked(text):
    """How many files the walk read, as its report quotes it (None: no report of it)."""
    m = re.search(r"walked: read (\d+) files", text)
    return int(m.group(1)) if m else None


def put_markers(token):
    """The places, each with a marker file; returns the folders made (to remove) and the
    class folder and the earlier term's folder on them."""
    made = {}
    for what, place in PLACES.items():
        folder = os.path.join(place, "lab04-allowlist-%d" % os.getpid())
        os.makedirs(folder, mode=0o755, exist_ok=True)
        os.chmod(folder, 0o755)
        made[what] = folder
    with open(os.path.join(made["GRADEBOOK"], "class.json"), "w") as f:  # an earlier gradebook
        json.dump({"rows": [{"student": "alice", "feedback": "LAB04-MARKER-GRADEBOOK-" + token}]}, f)
    term = os.path.join(made["TERM"], "earlier", "orla")
    os.makedirs(term)
    lesson = open(os.path.join(project.ROOT, "lab04_attention.cpp")).read()
    with open(os.path.join(term, "lab04_attention.cpp"), "w") as f:
        f.write("// LAB04-MARKER-TERM-%s\n" % token + lesson)
    with open(os.path.join(made["HIDDEN_CASES"], "data.json"), "w") as f:
        f.write('{"correct_answers": "LAB04-MARKER-HIDDEN_CASES-%s"}\n' % token)
    with open(os.path.join(made["HOME"], "notes.txt"), "w") as f:
        f.write("LAB04-MARKER-HOME-%s\n" % token)
    for top, dirs, files in os.walk(made["TERM"]):
        for n in dirs:
            os.chmod(os.path.join(top, n), 0o755)
        for n in files:
            os.chmod(os.path.join(top, n), 0o644)
    return made


def without_namespaces(command):
    """command as root without the right to make namespaces (CAP_SYS_ADMIN dropped, as Docker's
    defaults run a container): no root of its own can be made."""
    return ["capsh", "--drop=cap_sys_admin", "--", "-c", 'exec "$@"', "capsh"] + command


def check_lab(checker, walker, runner, mode, user):
    """check_lab.py --grade on the walker, as root (user None), as root without namespaces
    (user "root without namespaces") or as nobody, with LAB_SANDBOX=mode ("" for the default);
    its report (stdout and stderr)."""
    env = dict(os.environ, LAB_RUNNER=runner, LAB_SANDBOX=mode)
    if not mode:
        del env["LAB_SANDBOX"]
    command = [sys.executable, os.path.join(checker, "check_lab.py"), "--grade", walker]
    if user == "root without namespaces":
        command = without_namespaces(command)
    elif user:
        command = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups", "env", "HOME=/"] + command
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd="/", env=env)
    return run.stdout + run.stderr


def isolation_of(report):
    return next((line for line in report.splitlines() if "isolation:" in line), "")


def main(argv):
    if len(argv) != 2:
        print("allowlist_test: usage: allowlist_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    if os.environ.get("LAB04_ALLOWLIST_NAMESPACE") != "1":
        probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            print("SKIPPED: labs that read what they can run only inside a PID namespace, and none can be made here "
                  "(%s)" % probe.stderr.strip())
            return 77
        env = dict(os.environ, LAB04_ALLOWLIST_NAMESPACE="1")
        return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable,
                               os.path.abspath(__file__)] + argv, env=env).returncode
    if os.geteuid() != 0:
        print("SKIPPED: needs root (markers in /srv, /var/lib, /opt and /home; labs run as nobody and as root)")
        return 77
    build, work = (os.path.abspath(a) for a in argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    token = secrets.token_hex(6)
    made = put_markers(token)
    # What nobody runs, in a folder of /tmp it can enter (the project may be in one it cannot).
    copy = tempfile.mkdtemp(prefix="lab04-allowlist-test-")
    os.chmod(copy, 0o755)
    try:
        project.project_files.copy(project.ROOT, project.checker_files(), copy)
        checker = os.path.join(copy, "checker")
        runner = shutil.copy(os.path.join(build, "lab04_runner"), copy)
        shutil.copy(os.path.join(build, "lab04_leaky_softmax.so"), copy)  # (a grade's case loads it)
        source = os.path.join(copy, "walker.cpp")
        with open(source, "w") as f:
            f.write(WALKER + "int main() { return 0; }\n")
        walker = os.path.join(copy, "walker")
        subprocess.run(["g++", "-std=c++17", "-O1", "-o", walker, source], check=True)
        checks = []
        with open(os.path.join(copy, "notes.txt"), "w") as f:  # beside the lab: the lab's build folder
            f.write("LAB04-MARKER-BUILD-%s\n" % token)
        os.chmod(os.path.join(copy, "notes.txt"), 0o644)
        capsh = shutil.which("capsh") is not None
        for user, mode, sees_nothing in ((None, "", True), ("nobody", "bwrap", True), ("nobody", "unshare", False),
                                         ("nobody", "none", False)) + ((("root without namespaces", "", None),) if capsh
                                                                         else ()):
            report = check_lab(checker, walker, runner, mode, user)
            found, count, line = markers_in(report, token), walked(report), isolation_of(report)
            who = "as root" if not user else user if mode == "" else "as nobody, LAB_SANDBOX=%s" % mode
            print("check_lab %s: read %s files, found %s; %s" % (who, count, found or "nothing", line[:150]))
            if "cannot make namespaces" in report or "cannot be made here" in report:
                checks.append(("check_lab %s: skipped, no namespaces here" % who, True, ""))
            elif sees_nothing is None:  # no root of its own: kept out of what it must not see, the rest said
                checks.append(("check_lab as root without namespaces: the walking lab found nothing of the lab's "
                               "build folder, and the line says what it was kept out of and that the rest is readable",
                               count and "BUILD" not in found and "kept out of the project and the lab's build folder"
                               in line and "it may read too" in line, report[-1500:]))
            elif sees_nothing:
                checks.append(("check_lab %s: the walking lab read files and found no marker, and the isolation line "
                               "says it had a root of its own" % who,
                               count and not found and "a root of its own that holds" in line, report[-1500:]))
            elif mode == "none":
                checks.append(("check_lab as nobody without a sandbox: the walking lab finds the markers (so that the "
                               "checks above can fail), and the line says it was not isolated",
                               {"GRADEBOOK", "TERM", "HIDDEN_CASES", "HOME"} <= set(found) and "NONE" in line,
                               report[-1500:]))
            else:
                checks.append(("check_lab %s: whatever the walk found (%s), the isolation line says every other file "
                               "is readable" % (who, ", ".join(found) or "nothing"),
                               count and "it may read too" in line, report[-1500:]))
        checks += through_the_class(build, made, token, work)
        if capsh:
            checks += through_the_class(build, made, token, work, namespaces=False)
        else:
            print("(root without namespaces is not tried: capsh, of libcap2-bin, is not installed)")
        return checklist.report(checks)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        for folder in made.values():
            shutil.rmtree(folder, ignore_errors=True)


def through_the_class(build, made, token, work, namespaces=True):
    """The class grader as root, with the class and its gradebook on shared storage (/srv), an
    earlier term (--similar-to) in /var/lib and the course's hidden cases (--hide) in /opt: the
    walking lab's feedback and the gradebook hold no marker; a classmate's lab carries one in a
    comment. Without namespaces (no root of its own): none of the class's, the earlier term's or
    --hide's, and the line says the rest is readable."""
    lesson = open(os.path.join(project.ROOT, "lab04_attention.cpp")).read()
    honest = hostile.honest(lesson)
    how = "" if namespaces else "-without-namespaces"
    folder = os.path.join(made["GRADEBOOK"], "class" + how)
    for name, text in (("walker", "#include <iterator>\n" + WALKER + honest),
                       ("classmate", "// LAB04-MARKER-CLASSMATE-%s\n" % token + honest)):
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(folder, name, "lab04_attention.cpp"), "w") as f:
            f.write(text)
    os.chmod(folder, 0o755)
    grades = os.path.join(made["GRADEBOOK"], "grades" + how)
    command = [sys.executable, os.path.join(project.ROOT, "grader", "grade_class.py"), "-j", "2", "--draw", "7",
               "--build", build, "--hide", made["HIDDEN_CASES"], "--similar-to",
               os.path.join(made["TERM"], "earlier"), folder, grades]
    run = subprocess.run(command if namespaces else without_namespaces(command), capture_output=True, text=True,
                         timeout=1200)
    if run.returncode != 0:
        return [("the class grader%s grades the class with the walking lab (exit 0)" % how.replace("-", " "), False,
                 run.stderr[-2000:])]
    with open(os.path.join(grades, "feedback", "walker.txt"), encoding="utf-8") as f:
        feedback = f.read()
    with open(os.path.join(grades, "class.json"), encoding="utf-8") as f:
        rows = {r["student"]: r for r in json.load(f)["rows"]}
    seen = json.dumps(rows.get("walker", {})) + feedback
    found, count = markers_in(seen, token), walked(seen)
    line = rows.get("walker", {}).get("isolation", "")
    print("class grader as root%s: read %s files, found %s; %s" % (how.replace("-", " "), count, found or "nothing",
                                                                    line[:150]))
    shutil.copytree(grades, os.path.join(work, "grades" + how))  # kept, to look at
    # Gone from the shared storage before the next run: without namespaces the rest of /srv is
    # readable (the line says so), and this class's classmate is not the next class's.
    shutil.rmtree(folder)
    shutil.rmtree(grades)
    places = [folder, made["TERM"], made["HIDDEN_CASES"], project.ROOT, build]
    left = [p for p in places + [os.path.join(project.ROOT, n) for n in os.listdir(project.ROOT)] if has_acl(p)]
    if namespaces:
        return [("the class grader as root, the class and its gradebook on /srv: the walking lab read files and found "
                 "no classmate's marker nor any other, in its feedback or its row", count and not found, seen[-1500:])]
    return [("the class grader as root without namespaces: the walking lab read files and found nothing of the class, "
             "the earlier term or --hide's place, and its line says what it was kept out of and that the rest is "
             "readable (its compile's too: no root of its own claimed)",
             count and not {"CLASSMATE", "TERM", "HIDDEN_CASES"} & set(found) and "kept out of" in line
             and "it may read too" in line and "in a root of its own" not in line, (line, seen[-1500:])),
            ("the class grader without namespaces leaves no ACL behind on the places it closed", not left, left)]


def has_acl(path):
    try:
        os.getxattr(path, "system.posix_acl_access", follow_symlinks=False)
        return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
