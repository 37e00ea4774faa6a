"""A submission is hostile from its first byte: what it does before and around its run (links,
#include and .incbin of what it should not see, compiles that never end, eat memory or flood
messages, a compiler crash, a string that once lifted the memory limit, reading the grader's
command line, reading its whole memory for the grader's environment and a classmate's name,
escape sequences) raises no grade, brings no file from outside the submission
into its feedback or results, and holds no grader past its bounds: through Gradescope's
run_autograder (a folder that stands for /autograder, as root), through the class grader, and
through check_lab.py --grade.

usage: first_byte_test.py BUILD WORK_DIR

Each attack is the honest lab of hostile_labs_test.py (5/7: no scale, softmax over dimension
0) with something added, or a lab of its own. A secret file (mode 600, root's) stands for
/autograder's and the instructor's files; a line of the lesson that the starter lacks stands
for the solution. Each attack must: score at most the honest 5 (0 where it cannot compile),
leave out of its results and feedback the secret, the lesson's line, the grader's paths and
ESC characters, and end within the grader's stated bounds. The graders run with SECRET and
GITHUB_TOKEN set to values of the test's own, which the memory scanner must not find (and it must
say it scanned: its marker found on its own stack). Prints OK or NOT OK for each.

Runs itself again inside a PID namespace; needs root and labs that run as a user of their
own (skipped, exit 77, elsewhere: a chroot whose / is closed cannot hide anything from them).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import checklist
import hostile_labs_test as hostile
import memory_scanner
import project

SECRET = "THE-SECRET-OF-ROOT"
GRADERS_SECRETS = memory_scanner.values()  # set in every grader's environment: no lab may find them
SCANNED = memory_scanner.SCANNED  # what the memory scanner says when its scan read memory
MARKDOWN_NAME = "[click](javascript:alert(1))<b>bold"  # a student's folder
BOMB = "".join("#define A%d %s\n" % (i, "1,1,1,1,1,1,1,1,1,1" if i == 0 else ",".join(["A%d" % (i - 1)] * 10))
               for i in range(10)) + "int bomb[] = { A9 };\n"
FLOOD = "".join("int f%d(int x) { return x == x; }\n" % i for i in range(20000))  # a warning each, with its line
SNOOP = r"""
#include <dirent.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
static std::string read_all(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
// What it finds goes into the first line of its errors, which a report quotes when a lab
// prints nothing: the secret, the lesson's line, every Python command line it can see.
static int snoop = [] {
  std::string found = read_all("SECRET_PATH").substr(0, 40) + " | ";
  std::string lesson = read_all("LESSON_PATH");
  size_t at = lesson.find("scores.mul_(");
  if (at != std::string::npos) found += lesson.substr(at, 44) + " | ";
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      std::string s = read_all(std::string("/proc/") + e->d_name + "/cmdline");
      for (char& c : s) c = c ? c : ' ';
      if (s.find(".py") != std::string::npos) found += s.substr(s.find(".py") > 60 ? s.find(".py") - 60 : 0, 80) + " | ";
    }
    closedir(d);
  }
  for (char& c : found) c = c == '\n' ? ' ' : c;
  std::fprintf(stderr, "%s\n", found.c_str());
  std::exit(3);
  return 0;
}();
"""
ESCAPES = ('static int escapes = (std::fputs("\\x1b]0;owned\\x07\\x1b]52;c;b3duZWQ=\\x07\\x1b[2J\\n", stderr), '
           'std::exit(3), 0);\n')
ASAN = ('static const char* asan = "__asan_init";\n'
        'static int hog = [] { static std::vector<char> v(size_t(5) << 30, 1); return int(v[4096] + (asan[0] == 0)); }();\n')


def attacks(root, secret, solution):
    """name: (files of the submission (text, or ("link", target)), the most it may score,
    compile-time only (so not built for the checker)). solution: where the lesson lies that
    this path must hide (Gradescope: in /autograder; elsewhere: the project's)."""
    honest = hostile.honest(open(os.path.join(project.ROOT, "lab04_attention.cpp")).read())
    head = "#include <torch/torch.h>\n#include <cstdio>\n#include <vector>\n"
    return {
        "includes_dev_stdout": ({"lab04_attention.cpp": '#include "/dev/stdout"\n' + honest}, 0, True),
        "includes_a_root_only_file": ({"lab04_attention.cpp": 'int a[] = {\n#include "%s"\n};\n' % secret + honest},
                                      0, True),
        "includes_the_lesson": ({"lab04_attention.cpp": '#include "%s"\n' % os.path.join(
            project.ROOT, "lab04_attention.cpp")}, 0, True),
        "incbins_the_built_lab": ({"lab04_attention.cpp": 'asm(".incbin \\"%s\\"");\n' % os.path.join(
            root, "build", "lab04_attention") + honest}, 0, True),
        "preprocessor_bomb": ({"lab04_attention.cpp": BOMB + honest}, 0, True),
        "template_bomb": ({"lab04_attention.cpp": "#include <utility>\nauto bomb = std::make_index_sequence<200000000>{};\n"
                           + honest}, 0, True),
        "floods_compiler_messages": ({"lab04_attention.cpp": FLOOD + "#error stop\n" + honest}, 0, True),
        "crashes_the_compiler": ({"lab04_attention.cpp": "#pragma clang __debug crash\n" + honest}, 0, True),
        "links_to_a_root_only_file": ({"lab04_attention.cpp": ("link", secret)}, 0, True),
        "links_to_a_file_of_the_system": ({"lab04_attention.cpp": ("link", "/etc/passwd")}, 0, True),
        "lab_in_a_linked_folder": ({"src": ("link", os.path.join(root, "source"))}, 0, True),
        # Within its 4 GiB it dies before printing: 0. Were the limit lifted, it would earn 5.
        "names_the_sanitizer_and_takes_5_gib": ({"lab04_attention.cpp": head + ASAN + honest}, 0, False),
        # Reads its whole memory (what the process it was forked from left there) for the grader's
        # environment and a classmate's name: it must find neither, and say it scanned.
        "scans_its_memory": ({"lab04_attention.cpp": memory_scanner.source(["reads_the_graders_command_line"])}, 0,
                             False),
        "reads_the_graders_command_line": ({"lab04_attention.cpp": head + SNOOP.replace("SECRET_PATH", secret).replace(
            "LESSON_PATH", solution) + honest}, 0, False),
        "prints_escape_sequences": ({"lab04_attention.cpp": head + "#include <cstdlib>\n" + ESCAPES + honest}, 0, False),
        "prints_escape_sequences_and_fails": ({"lab04_attention.cpp": head + ESCAPES.replace("stderr", "stdout")
                                               + "#error \x1b]0;owned\x07\n" + honest}, 0, True),
    }


def write_submission(folder, files):
    os.makedirs(folder)
    for name, content in files.items():
        path = os.path.join(folder, name)
        if isinstance(content, tuple):
            os.symlink(content[1], path)
        else:
            with open(path, "w") as f:
                f.write(content)


def leaks(text, root, lesson_line):
    """What of the grader's and the class's a text holds that it must not."""
    found = [w for w in (SECRET, lesson_line, "grade_class.py", "check_lab.py", "\x1b", "Stack dump",
                         "PLEASE submit") + tuple(GRADERS_SECRETS.values()) if w in text]
    if "scan: " in text:  # the memory scanner: a classmate's name found in its memory
        found += ["a classmate's name"] * ("found: reads_the_graders_command_line" in text
                                          or "| reads_the_graders_command_line" in text)
    return found + ["the grader's path"] * (os.path.join(root, "results") in text)


def reproducers():
    """Files a crashing clang leaves in /tmp."""
    return sorted(f for f in os.listdir("/tmp") if f.startswith("lab04_attention-"))


def graders_environment():
    return dict(os.environ, **GRADERS_SECRETS)


def scanned(name, text):
    """The memory scanner's report says its scan read memory (a scan that read nothing finds nothing)."""
    return name != "scans_its_memory" or SCANNED in text


def through_gradescope(root, cases, lesson_line, bound):
    checks = []
    for name, (files, most, _) in cases.items():
        shutil.rmtree(os.path.join(root, "submission"), ignore_errors=True)
        write_submission(os.path.join(root, "submission"), files)
        before = reproducers()
        start = time.monotonic()
        run = subprocess.run([os.path.join(root, "source", "run_autograder")], capture_output=True,
                             env=dict(graders_environment(), AUTOGRADER_ROOT=root), timeout=3 * bound)
        seconds = time.monotonic() - start
        out = (run.stdout + run.stderr).decode("utf-8", "replace")
        try:
            with open(os.path.join(root, "results", "results.json")) as f:
                text = f.read()
            score = json.loads(text)["score"]
        except (OSError, ValueError):
            text, score = "", None
        said = leaks(text + out, root, lesson_line) + ["reproducer files"] * (reproducers() != before)
        print("gradescope %-38s score %s in %.1f s%s" % (name, score, seconds, ": leaks " + ", ".join(said) if said else ""))
        checks.append(("Gradescope, %s: scores at most %d, leaks nothing, within %d s" % (name, most, bound),
                       score is not None and score <= most and not said and seconds < bound and scanned(name, text),
                       "score %s, %.1f s, leaks %s\n%s" % (score, seconds, said, (text or out)[-1500:])))
    return checks


def through_the_class(build, root, cases, lesson_line, work, bound):
    folder = os.path.join(work, "class")
    for name, (files, _, _) in cases.items():
        write_submission(os.path.join(folder, name), files)
    honest = hostile.honest(open(os.path.join(project.ROOT, "lab04_attention.cpp")).read())
    write_submission(os.path.join(folder, MARKDOWN_NAME), {"lab04_attention.cpp": honest})
    grades = os.path.join(work, "grades")
    start = time.monotonic()
    run = subprocess.run([sys.executable, os.path.join(project.ROOT, "grader", "grade_class.py"), "-j", "2",
                          "--build", build, "--hide", root, folder, grades], capture_output=True, timeout=bound * len(cases),
                         env=graders_environment())
    seconds = time.monotonic() - start
    out = (run.stdout + run.stderr).decode("utf-8", "replace")
    print("class of %d: exit %d in %.1f s" % (len(cases), run.returncode, seconds))
    checks = [("the class grader grades the class of attacks (exit 0)", run.returncode == 0, out[-2000:])]
    if run.returncode != 0:
        return checks
    with open(os.path.join(grades, "class.json")) as f:
        rows = {r["student"]: r for r in json.load(f)["rows"]}
    for name, (_, most, _) in cases.items():
        r = rows.get(name, {})
        with open(os.path.join(grades, "feedback", name + ".txt"), encoding="utf-8") as f:
            feedback = f.read()
        said = leaks(feedback + json.dumps(r), root, lesson_line) + ["no sign of its scan"] * (not scanned(name, feedback))
        print("class      %-38s score %s (%s)%s" % (name, r.get("score"), r.get("status"), ": leaks " + ", ".join(said) if said else ""))
        checks.append(("class, %s: scores at most %d, its feedback and row leak nothing" % (name, most),
                       r.get("score", 99) <= most and not said, "%s; leaks %s" % (json.dumps(r)[:1500], said)))
    with open(os.path.join(grades, "summary.md"), encoding="utf-8") as f:
        summary = f.read()
    checks.append(("class: the honest lab beside the attacks scores 5 (the attacks' 0 is theirs)",
                   rows.get(MARKDOWN_NAME, {}).get("score") == 5, rows.get(MARKDOWN_NAME)))
    checks.append(("class: a name made of Markdown (a link, an HTML tag) is shown as written in summary.md",
                   "<b>" not in summary and "[click](" not in summary and "\\[click\\](" in summary,
                   [l for l in summary.splitlines() if "click" in l]))
    for f in ("grades.csv", "summary.md"):
        with open(os.path.join(grades, f), encoding="utf-8") as g:
            said = leaks(g.read(), root, lesson_line)
        checks.append(("class: %s holds nothing it must not" % f, not said, said))
    return checks


def through_the_checker(root, cases, lesson_line, work):
    honest = hostile.honest(open(os.path.join(project.ROOT, "lab04_attention.cpp")).read())
    lab = hostile.build_in(root, honest, "honest", work)
    run = subprocess.run([sys.executable, os.path.join(project.CHECKER, "check_lab.py"), "--grade", lab],
                         capture_output=True, timeout=600)
    out = (run.stdout + run.stderr).decode("utf-8", "replace")
    checks = [("check_lab.py --grade: the honest lab scores 5/7 in the same sandbox (the attacks' 0 is theirs)",
               "\nscore: 5/7\n" in out, out[-1500:])]
    for name, (files, most, compile_only) in cases.items():
        if compile_only:
            continue
        lab = hostile.build_in(root, files["lab04_attention.cpp"], name, work)
        run = subprocess.run([sys.executable, os.path.join(project.CHECKER, "check_lab.py"), "--grade", lab],
                             capture_output=True, timeout=600, env={k: v for k, v in graders_environment().items()
                                                                    if k != "LAB_SANITIZED"})
        out = (run.stdout + run.stderr).decode("utf-8", "replace")
        score = next((l.split()[1] for l in out.splitlines() if l.startswith("score: ")), None)
        said = leaks(out, root, lesson_line) + ["no sign of its scan"] * (not scanned(name, out))
        print("check_lab  %-38s score %s%s" % (name, score, ": leaks " + ", ".join(said) if said else ""))
        checks.append(("check_lab.py --grade, %s: scores at most %d, prints nothing it must not" % (name, most),
                       score is not None and float(score.split("/")[0]) <= most and not said,
                       "score %s, leaks %s\n%s" % (score, said, out[-1500:])))
    return checks


def compiles_with_clang(build):
    """Whether the build's C++ compiler (CMAKE_CXX_COMPILER in its cache) is clang."""
    with open(os.path.join(build, "CMakeCache.txt"), errors="replace") as f:
        found = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.*)$", f.read(), re.M)
    if not found:
        return False
    version = subprocess.run([found.group(1).strip(), "--version"], capture_output=True, text=True)
    return "clang" in version.stdout.lower()


def main(argv):
    if len(argv) != 2:
        print("first_byte_test: usage: first_byte_test.py BUILD WORK_DIR", file=sys.stderr)
        return 2
    if os.environ.get("LAB04_FIRST_BYTE_NAMESPACE") != "1":
        probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            print("SKIPPED: hostile labs run only inside a PID namespace, and none can be made here (%s)"
                  % probe.stderr.strip())
            return 77
        env = dict(os.environ, LAB04_FIRST_BYTE_NAMESPACE="1")
        return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable,
                               os.path.abspath(__file__)] + argv, env=env).returncode
    from lab04.checker import sandbox
    box = sandbox.Sandbox("/bin/true")
    box.close()
    if os.geteuid() != 0 or box.mode != "user":
        print("SKIPPED: needs root, and labs that run as a user of their own: " + box.isolation)
        return 77
    build, work = argv
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    root, failed = hostile.make_autograder(work)
    if failed:
        return checklist.report([failed])
    secret = os.path.join(root, "secret", "notes.txt")  # the instructor's, root's alone
    os.makedirs(os.path.dirname(secret), mode=0o700)
    with open(secret, "w") as f:
        f.write("#error %s\n" % SECRET)
    os.chmod(secret, 0o600)
    lesson_line = "scores.mul_(1.0 / std::sqrt(double(HEAD)))"  # the solution's: the starter has a blank
    solution = os.path.join(root, "solution", "lab04_attention.cpp")  # an instructor's, in /autograder
    os.makedirs(os.path.dirname(solution))
    shutil.copy(os.path.join(project.ROOT, "lab04_attention.cpp"), solution)
    only = os.environ.get("LAB04_ONLY")  # a few attacks by name, to try a change
    cases = {k: v for k, v in attacks(root, secret, solution).items() if not only or k in only.split(",")}
    ours = {k: v for k, v in attacks(root, secret, os.path.join(project.ROOT, "lab04_attention.cpp")).items()
            if k in cases}
    if "crashes_the_compiler" in ours and not compiles_with_clang(build):  # the class compiles with the build's
        files, _, compile_only = ours["crashes_the_compiler"]  # compiler: g++ ignores clang's pragma, and the
        ours["crashes_the_compiler"] = (files, 5, compile_only)  # lab is the honest one (Gradescope's is clang)
    from lab04.grader import compile_sandbox
    bound = compile_sandbox.TIMEOUT + 60  # a compile's bound, and a minute for the rest
    checks = through_gradescope(root, cases, lesson_line, bound)
    checks += through_the_class(build, root, ours, lesson_line, work, bound)
    checks += through_the_checker(root, ours, lesson_line, work)
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
