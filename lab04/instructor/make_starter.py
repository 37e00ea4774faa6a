"""make_starter.py: writes the starter repository that students get, made from the lesson.

usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE]
                       [--lab-only | --autograder | --classroom50 [--grade-unisolated] |
                        --prairielearn [--grade-unisolated]] OUT

  --blank STEPS  the STEPs the student writes, such as 2,3,4,5,6 (default 3,4,5,6: the
                 attention itself; STEP 1 and 2 draw the random numbers in the order the
                 reference needs, and STEP 7 is the lab's own check, so they are given)
  --points P     points for STEP 1 to 7 (default 1 each), for the Classroom workflow and
                 the student's README; the checker takes the same with --grade --points
  --lab FILE     the lesson to blank (default: this project's lab04_attention.cpp)
  --lab-only     write only the lab with its blanks, to the file OUT
  --autograder   write Gradescope's autograder, a zip file OUT: setup.sh and run_autograder
                 (instructor/gradescope/) with the files that build and grade a submitted lab
  --classroom50  write what a Classroom 50 classroom needs, into the folder OUT: template/
                 (the starter, the assignment's template repository), autograder/ (its
                 autograder.py and the project it builds and grades with, to commit as
                 <classroom>/autograders/<assignment>/ of the classroom's repository),
                 runtime.json (the assignment's runtime: the packages to install) and a
                 README.md saying how; Classroom 50's points are whole numbers, so --points
                 must be (a fraction is refused, exit 2, rather than rounded)
  --prairielearn  write what a PrairieLearn course needs, into the folder OUT: question/ (an
                 externally graded question: info.json, question.html with a file editor
                 started from the starter's lab, tests/points) and image/ (the grader's
                 Dockerfile and the project it builds), and a README.md saying how
  --grade-unisolated  with --classroom50: grade on a runner where a student's compile and run
                 cannot be isolated (not root, no sudo without a password, no user namespaces
                 for bubblewrap), saying so in the release; without it such a runner grades
                 nothing and says why (a lab compiled there reads what the job can); with
                 --prairielearn: grade in a container where nothing keeps /grade's tests and
                 data from the lab (run as a user, not root: info.json's environment sets
                 LAB04_GRADE_UNISOLATED=1); without it such a job fails and says why
  OUT            the folder to write the starter into: new, or empty

The starter is this project's lab04_attention.cpp with each blanked STEP's code replaced by
a TODO that compiles: the lesson's comments stay (they are the hints), the printing stays,
and the statements that compute the step (those that define or change a tensor) give way to
a call not_written_yet(n, hint), which prints "STEP n: not written yet: <hint>" and exits 4,
and to plain declarations of what the later steps use. Beside it: CMakeLists.txt,
CMakePresets.json, .clang-format, .gitignore, cmake/, watch/, checker/ and engine/ as they
are here (the build, the watch, the checker with its reference and catalogue, the run engine
that runs the lab for both); and, from the files of
templates/: a tests/CMakeLists.txt with one test per STEP, a README for the student, and
.github/workflows/grade.yml (each push graded by the checker, the grade in the job's summary).
Nothing is copied by hand, so the starter follows the lesson whenever it is made again.

Exit status: 0 written; 2 bad arguments, an OUT that is not empty, or a lab whose STEP
comments cannot be found (nothing is written then).
"""
import os
import re
import shutil
import subprocess
import sys

from lab04 import PROJECT
from lab04 import project_files  # the project's list of files: what is copied, never a walk of a folder
from lab04.checker import cases  # the checker's: the points of the steps are read as the checker reads them
from lab04.checker.files import write_text, written  # the checker's: a file written whole, never through a link

HERE = os.path.join(PROJECT, "instructor")  # the templates and the platforms' scripts

DEFAULT_BLANKS = [3, 4, 5, 6]
# What the starter and the autograder take from the project as it is: the build (CMakeLists.txt
# and cmake/, which the watch's folder completes), the checker (its commands in checker/, its
# code in lab04/checker/, with the package's lab04/__init__.py) and the run engine that runs its
# labs and the watch's (engine/). Whole folders of the project's list (tools/project_files.txt),
# so that a file added to one comes along, and nothing else that lies in them (an editor's file,
# Python's cache) does.
COPIED_FILES = ["CMakeLists.txt", "CMakePresets.json", ".clang-format", ".gitignore", ".gitattributes",
                ".devcontainer/devcontainer.json", "lab04/__init__.py"]
COPIED_FOLDERS = ["cmake", "checker", "engine", "watch", "lab04/checker"]


def copied():
    """The project's files that the starter and the autograder carry, relative to the project:
    each a regular file (project_files.NotRegular names one that is not)."""
    on_list = project_files.listed(PROJECT)
    names = [n for n in COPIED_FILES if n in on_list]
    names += sorted(n for n in on_list if os.path.dirname(n) in COPIED_FOLDERS
                    or n.split("/", 1)[0] in COPIED_FOLDERS)
    return project_files.regular(PROJECT, names)
DECLARATION = re.compile(r"^(const\s+)?(torch::Tensor|torch::nn::Linear|bool)\s+(\w+)\b")
CHANGE = re.compile(r"^(if\s*\(([^)]*)\)\s*)?(\w+)\.\w+\(")  # scores.mul_(...), maybe under an if
# The tensors the lab holds to the lesson's shape and type once printed (peek, print_weights):
# a step that defines one must make it of that type, which its hint says.
PRINTED = re.compile(r"\b(?:peek|print_weights)\(opt,(?:\s*\"[^\"]*\",)?\s*(\w+)\)")
EMPTY = {"torch::Tensor": "torch::Tensor {};", "torch::nn::Linear": "torch::nn::Linear {}{{nullptr}};",
         "bool": "bool {} = false;"}


class Usage(Exception):
    """One line on stderr, exit 2, nothing written."""


# --- reading the lesson -------------------------------------------------------------------

def code_of(line):
    """A line without its // comment and with its string literals emptied."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def unclosed_openers(lines):
    """The lines that open a block which the lines do not close: the head of a loop that runs
    this region and the next ones (the lesson's loop over the heads)."""
    opened = []
    for n, line in enumerate(lines):
        for c in code_of(line):
            if c == "{":
                opened.append(n)
            elif c == "}" and opened:
                opened.pop()
    return set(opened)


def statements(lines):
    """The region's lines as items: ("text", [line]) for comments, blank lines and the head of
    a block that goes on past the region, or ("code", [lines]) for one whole statement (a
    block counts as one)."""
    items, current, depth = [], [], 0
    heads = unclosed_openers(lines)
    for n, line in enumerate(lines):
        code = code_of(line).strip()
        if not current and (not code or n in heads):
            items.append(("text", [line]))
            continue
        current.append(line)
        depth += code.count("(") + code.count("{") - code.count(")") - code.count("}")
        if depth == 0 and code.endswith((";", "}")):
            items.append(("code", current))
            current = []
    if current:
        raise Usage("cannot read a statement of lab04_attention.cpp that ends near %r" % current[-1].strip()[:60])
    return items


def lesson_steps(source):
    """{step: (first line, end line)} of each STEP's region in main, and main's last line."""
    lines = source.split("\n")
    start = next((n for n, l in enumerate(lines) if re.match(r"^int main\(", l)), None)
    end = next((n for n in range(start or 0, len(lines)) if lines[n].startswith("} catch")), None)
    if start is None or end is None:
        raise Usage("cannot find main() and its closing '} catch' in lab04_attention.cpp: is it the lesson?")
    marks = {}
    for n in range(start, end):
        m = re.match(r"^\s*// STEP (\d+):", lines[n])
        if m:
            marks.setdefault(int(m.group(1)), n)
    missing = [n for n in cases.STEP_NUMBERS if n not in marks]
    if missing or sorted(marks.values()) != [marks[n] for n in cases.STEP_NUMBERS]:
        raise Usage("cannot find the comments '// STEP 1:' to '// STEP 7:' in order in main() of "
                    "lab04_attention.cpp%s: the lesson was edited beyond recognition" %
                    (" (no STEP %s)" % ", ".join(map(str, missing)) if missing else ""))
    bounds = {n: (marks[n], block_end(lines, marks[n], marks[n + 1] if n < cases.STEPS else end)) for n in cases.STEP_NUMBERS}
    return lines, bounds, end


def block_end(lines, first, last):
    """Where a STEP's region ends: at the next STEP, or sooner where the block that holds it
    closes (the lesson's loop over the heads ends with STEP 7)."""
    depth = 0
    for n in range(first, last):
        for c in code_of(lines[n]):
            depth += {"{": 1, "}": -1}.get(c, 0)
            if depth < 0:
                return n
    return last


def blanked(items):
    """(indices of the statements to blank, names they define with their types, what they change:
    (name, the condition it is changed under, or None))."""
    cut, defined, changed = [], [], []
    for i, (kind, lines) in enumerate(items):
        if kind != "code":
            continue
        code = " ".join(code_of(l).strip() for l in lines)
        d, c = DECLARATION.match(code), CHANGE.match(code)
        if d:
            cut.append(i)
            defined.append((d.group(2), d.group(3), lines[0]))
        elif c:
            cut.append(i)
            changed.append((c.group(3), c.group(2)))
    return cut, defined, changed


def hint_of(defined, changed, printed=()):
    """What a blank must do, in a line: the names it defines with the shape of the lesson's
    comment (and, for a tensor the lab prints, its type: the lab stops on another), then what it
    changes, and under which option: "define scores (T, T), a tensor of Float; then, if
    opt.scale, change scores"."""
    groups = []  # names that share a shape comment, in order
    for _, name, line in defined:
        m = re.search(r"//\s*(\(.*)$", line)
        shape = m.group(1).strip() if m else ""
        if groups and groups[-1][1] == shape:
            groups[-1][0].append(name)
        else:
            groups.append(([name], shape))
    parts = []
    for names, shape in groups:
        part = ", ".join(names) + (" " + shape if shape else "")
        if all(n in printed for n in names):
            part += ", a tensor of Float" if len(names) == 1 else ", tensors of Float"
        parts.append(part)
    hint = "define " + ", ".join(parts) if parts else "write this step"
    for name, condition in dict.fromkeys(changed):
        if condition or name not in [n for _, n, _ in defined]:
            hint += "; then, %schange %s" % ("if %s, " % condition.strip() if condition else "", name)
    return hint


def blank_step(step, region, rest):
    """The region of a STEP with its computing statements replaced by a TODO; rest is the text
    of main after this region (what it still uses must stay declared)."""
    items = statements(region)
    cut, defined, changed = blanked(items)
    if not cut:
        raise Usage("STEP %d of lab04_attention.cpp has no statement that defines or changes a "
                    "tensor: nothing to blank" % step)
    kept_text = "\n".join(code_of(l) for i, (_, ls) in enumerate(items) if i not in cut for l in ls) + rest
    needed = [(t, name) for t, name, _ in defined if re.search(r"\b%s\b" % name, kept_text)]
    hint = hint_of(defined, changed, set(PRINTED.findall(kept_text)))
    indent = re.match(r"^\s*", items[cut[0]][1][0]).group(0)
    todo = [indent + "// TODO(STEP %d): your code here, in place of the lines marked TODO(STEP %d)."
            % (step, step),
            indent + 'not_written_yet(%d, "%s");  // TODO(STEP %d)' % (step, hint, step)]
    todo += [indent + EMPTY[t].format(name) + "  // TODO(STEP %d)" % step for t, name in needed]
    out = []
    for i, (_, lines) in enumerate(items):
        if i == cut[0]:
            out += todo
        if i not in cut:
            out += lines
    return out, hint


def make_lab(source, blanks):
    """The lab with the STEPs of blanks left for the student: (text, {step: hint})."""
    lines, bounds, end = lesson_steps(source)
    out, hints, at = [], {}, 0
    for step in cases.STEP_NUMBERS:
        first, last = bounds[step]
        out += lines[at:first]
        if step in blanks:
            rest = "\n".join(code_of(l) for l in lines[last:end])
            region, hints[step] = blank_step(step, lines[first:last], rest)
            out += region
        else:
            out += lines[first:last]
        at = last
    out += lines[at:]
    return "\n".join(out), hints


# --- the starter's other files: templates/, filled in ------------------------------------------

def fill(template, **values):
    """A file of templates/ with each @NAME@ replaced by its value."""
    with open(os.path.join(HERE, "templates", template)) as f:
        text = f.read()
    for name, value in values.items():
        text = text.replace("@%s@" % name, value)
    return text


def readme_command(marker):
    """The commands after <!-- marker --> in the project's README (tools/readme_command reads them)."""
    return subprocess.run([os.path.join(PROJECT, "tools", "readme_command"), marker],
                          capture_output=True, text=True, check=True).stdout.rstrip("\n")


ON_PUSH = {
    "workflow": "Your repository runs the same grade on every push (`.github/workflows/grade.yml`): the grade,\n"
                "step by step, is the summary of each run in the Actions tab, and the run is red while a STEP\n"
                "loses points.",
    "classroom50": "Your classroom (Classroom 50) grades every push the same way: the grade, step by step, is the\n"
                   "text of the submission's release (your repository's Releases), and the Actions tab shows the\n"
                   "run. A run marked as an error is the grader's fault, not your grade: your instructor sees it.",
}


def student_readme(blanks, hints, points, install, rebuild, on_push="workflow"):
    rows = "\n".join("| STEP %d | %s | %s |" % (n, cases.fmt(points[n - 1]),
                                               "yours: " + hints[n] if n in hints else "given")
                     for n in cases.STEP_NUMBERS)
    return fill("starter_README.md", STEPS=", ".join(map(str, blanks)), INSTALL=install,
                REBUILD=rebuild, ROWS=rows, ON_PUSH=ON_PUSH[on_push])


def grade_workflow(points, setup):
    return fill("grade.yml", SETUP=setup, POINTS=",".join(cases.fmt(p) for p in points))


def grader_files():
    """The class grader's files (its commands in grader/, its code in lab04/grader/), which the
    autograder grades each submission with."""
    return project_files.regular(PROJECT, sorted(n for n in project_files.listed(PROJECT)
                                                 if n.split("/", 1)[0] == "grader" or n.split("/")[:2] == ["lab04", "grader"]))


def write_autograder(path, files):
    """Gradescope's autograder zip: setup.sh and run_autograder at its root, and the starter's
    files that build and grade a lab, with the starter's lab04_attention.cpp (never the lesson:
    setup.sh builds the project with it once; each submission brings its own)."""
    import zipfile
    with written(path, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            with open(os.path.join(HERE, "gradescope", name)) as f:
                z.writestr(info, f.read())
        for name in copied() + grader_files():
            z.write(os.path.join(PROJECT, name), name)  # with its mode: check_lab.py runs
        z.writestr("tests/CMakeLists.txt", files["tests/CMakeLists.txt"])
        z.writestr("lab04_attention.cpp", files["lab04_attention.cpp"])  # the starter's, for setup.sh's build
    print("make_starter: wrote %s: Gradescope's autograder (upload it as the autograder's zip)" % path)
    return 0


def write_tree(out, project_files, files):
    """Writes the project's files (copied as they are) and files (name: text) into out."""
    for name in project_files + list(files):
        os.makedirs(os.path.join(out, os.path.dirname(name)), exist_ok=True)
    for name in project_files:
        shutil.copy2(os.path.join(PROJECT, name), os.path.join(out, name))
    for name, text in files.items():
        write_text(os.path.join(out, name), text)


def write_classroom50(out, files, points, install, unisolated=False):
    """A Classroom 50 classroom's part of this lab: the template repository, the autograder's
    bundle, the runtime and how to set them up (templates/classroom50_README.md)."""
    import json
    packages = install.split("--no-install-recommends", 1)[1].split("&&", 1)[0].split()
    template = dict(files)
    del template[".github/workflows/grade.yml"]  # Classroom 50's runner grades each push
    write_tree(os.path.join(out, "template"), copied(), template)
    bundle = {"lab04_attention.cpp": files["lab04_attention.cpp"],  # the starter's: no solution in a public bundle
              "tests/CMakeLists.txt": files["tests/CMakeLists.txt"]}
    write_tree(os.path.join(out, "autograder", "project"), copied() + grader_files(), {})
    write_tree(os.path.join(out, "autograder", "project"), [], bundle)
    grader = fill("classroom50_autograder.py", POINTS=", ".join(str(int(p)) for p in points),
                  UNISOLATED="grade" if unisolated else "refuse",
                  PACKAGES=" ".join(packages))
    path = os.path.join(out, "autograder", "autograder.py")
    write_text(path, grader)
    os.chmod(path, 0o755)
    write_text(os.path.join(out, "runtime.json"), json.dumps({"runs-on": "ubuntu-latest", "apt": packages}, indent=2) + "\n")
    write_text(os.path.join(out, "README.md"), fill("classroom50_README.md", POINTS=",".join(str(int(p)) for p in points)))
    print("make_starter: wrote %s: Classroom 50's template/, autograder/ and runtime.json (%s says how to set "
          "them up)" % (out, os.path.join(out, "README.md")))
    return 0


PRAIRIELEARN_IMAGE = "YOUR_DOCKERHUB_NAME/lab04-attention-grader"  # the README says to name it
PRAIRIELEARN_TIMEOUT = 60  # seconds of a job: six times the lesson's job at 0.9 CPU (tests/prairielearn_test.py)
PRAIRIELEARN_ENTRYPOINT = "/opt/lab04/instructor/prairielearn/run_grader"


def write_prairielearn(out, files, points, blanks, install, unisolated=False):
    """A PrairieLearn course's part of this lab: the question (externally graded, a file editor
    started from the starter's lab) and the grader's image (its Dockerfile and the project it
    builds, with the starter's lab: never the solution), and how to set them up."""
    import json
    import uuid
    packages = install.split("--no-install-recommends", 1)[1].split("&&", 1)[0].split()
    shown = ",".join(cases.fmt(p) for p in points)
    info = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "lab04-attention/prairielearn")),  # the same each time
            "title": "Lab 04: self-attention in C++ with LibTorch", "topic": "Self-attention", "tags": ["lab04", "c++"],
            "type": "v3", "singleVariant": True, "gradingMethod": "External",
            "externalGradingOptions": {"enabled": True, "image": PRAIRIELEARN_IMAGE,
                                       "entrypoint": PRAIRIELEARN_ENTRYPOINT, "timeout": PRAIRIELEARN_TIMEOUT}}
    if unisolated:  # run_grader grades even where nothing keeps /grade from the lab
        info["externalGradingOptions"]["environment"] = {"LAB04_GRADE_UNISOLATED": "1"}
    question = {"info.json": json.dumps(info, indent=2) + "\n",
                "question.html": fill("prairielearn_question.html", STEPS=", ".join(map(str, blanks)), POINTS=shown),
                "lab04_attention.cpp": files["lab04_attention.cpp"], "tests/points": shown + "\n"}
    write_tree(os.path.join(out, "question"), [], question)
    project = copied() + grader_files() + ["instructor/prairielearn/run_grader"]
    write_tree(os.path.join(out, "image", "lab04"), project, {"lab04_attention.cpp": files["lab04_attention.cpp"],
                                                             "tests/CMakeLists.txt": files["tests/CMakeLists.txt"]})
    write_text(os.path.join(out, "image", "Dockerfile"), fill("prairielearn_Dockerfile", PACKAGES=" ".join(packages)))
    write_text(os.path.join(out, "README.md"), fill("prairielearn_README.md", POINTS=shown, IMAGE=PRAIRIELEARN_IMAGE,
                                                    TIMEOUT=str(PRAIRIELEARN_TIMEOUT)))
    print("make_starter: wrote %s: PrairieLearn's question/ and the grader's image/ (%s says how to set them up)"
          % (out, os.path.join(out, "README.md")))
    return 0


# --- the command -----------------------------------------------------------------------------

def parse_args(argv):
    blanks, points, lab_only, out, unisolated = list(DEFAULT_BLANKS), [1.0] * cases.STEPS, False, None, False
    lesson = os.path.join(PROJECT, "lab04_attention.cpp")
    while argv:
        a = argv.pop(0)
        if a == "--blank":
            text = argv.pop(0) if argv else ""
            try:
                blanks = sorted({int(s) for s in text.split(",")})
                assert text and all(1 <= n <= 7 for n in blanks)
            except (ValueError, AssertionError):
                raise Usage("--blank takes STEP numbers from 1 to 7 joined by commas, such as 3,4,5,6, "
                            "not %r" % text[:40])
        elif a == "--points":
            try:
                points = cases.parse_points(argv.pop(0) if argv else "")
            except ValueError as e:
                raise Usage(str(e))
        elif a == "--lab":
            lesson = argv.pop(0) if argv else ""
            if not os.path.isfile(lesson):
                raise Usage("--lab takes the path of a lab04_attention.cpp, not %r" % lesson[:80])
        elif a == "--grade-unisolated":
            unisolated = True
        elif a in ("--lab-only", "--autograder", "--classroom50", "--prairielearn"):
            lab_only = a[2:]
        elif a.startswith("-") or out is not None:
            raise Usage("usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] "
                        "[--lab-only | --autograder | --classroom50 | --prairielearn] OUT (unexpected %r)" % a[:40])
        else:
            out = a
    if out is None:
        raise Usage("usage: make_starter.py [--blank STEPS] [--points P1,...,P7] [--lab FILE] "
                    "[--lab-only | --autograder | --classroom50 | --prairielearn] OUT")
    if unisolated and lab_only not in ("classroom50", "prairielearn"):
        raise Usage("--grade-unisolated is a setting of Classroom 50's autograder or PrairieLearn's grader: give it "
                    "with --classroom50 or --prairielearn")
    if lab_only == "classroom50" and any(p != int(p) for p in points):
        raise Usage("Classroom 50's scores are whole numbers: give --points in whole numbers (such as 2,1,1,1,1,1,1), "
                    "not %s; a fraction is not rounded, so that no grade is changed behind your back"
                    % ",".join(cases.fmt(p) for p in points))
    if lab_only in ("lab-only", "autograder"):
        if os.path.isdir(out) or not os.path.isdir(os.path.dirname(os.path.abspath(out))):
            raise Usage("--%s writes a file: %r is a folder, or its folder does not exist" % (lab_only, out[:80]))
    elif os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise Usage("%r exists and is not an empty folder: give a new folder for the starter" % out[:80])
    return blanks, points, lab_only, out, lesson, unisolated


def main(argv):
    try:
        blanks, points, lab_only, out, lesson, unisolated = parse_args(list(argv))
        with open(lesson) as f:
            lab, hints = make_lab(f.read(), blanks)
        if lab_only == "lab-only":
            write_text(out, lab)
            return 0
        install = readme_command("install-build-run")
        rebuild = readme_command("rebuild-run")
        setup = re.sub(r"\s*&&\s*build/lab04_attention\s*$", "", install).replace("$(command -v sudo) ", "")
        files = {"lab04_attention.cpp": lab,
                 "README.md": student_readme(blanks, hints, points, install, rebuild),
                 "tests/CMakeLists.txt": fill("starter_tests_CMakeLists.txt"),
                 ".github/workflows/grade.yml": grade_workflow(points, setup)}
        if lab_only == "autograder":
            return write_autograder(out, files)
        if lab_only == "prairielearn":
            return write_prairielearn(out, files, points, blanks, install, unisolated)
        if lab_only == "classroom50":
            files["README.md"] = student_readme(blanks, hints, points, install, rebuild, on_push="classroom50")
            return write_classroom50(out, files, points, install, unisolated)
        write_tree(out, copied(), files)
        print("make_starter: wrote %s: STEP %s blanked, points %s" % (
            out, ",".join(map(str, blanks)), ",".join(cases.fmt(p) for p in points)))
        return 0
    except Usage as e:
        print("make_starter: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, StopIteration, UnicodeDecodeError, project_files.NotRegular) as e:
        print("make_starter: cannot make the starter: %s" % e, file=sys.stderr)
        return 2

