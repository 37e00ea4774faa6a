"""The project is copied from its list of files, whatever lies beside them: every path of the
suite and of the instructor's kit that copies the project (tests/project.py's copy, the
starter, Gradescope's autograder, Classroom 50's template and bundle, PrairieLearn's image)
copies the listed files and nothing else, while build folders of several names (b, out, _build,
cmake-build-debug, and one outside the checkout) hold a listening lab server's socket, a FIFO
and a build's files, and an editor's files lie beside the lab; and a listed file that is not a
regular file is refused with its name, nothing written.

usage: project_files_test.py WORK_DIR

The list (tools/project_files.txt) is also compared with what git tracks, where the project
is a git checkout: a file added or removed without the list fails here, by name.
"""
import os
import shutil
import socket
import subprocess
import sys
import zipfile

import checklist
import project

PLANTED = {  # a user's build folders and editors' files in a checkout: name -> what it is
    "b/tests/lab04_fast-0123abcd.sock": "socket",  # the tests' lab server, listening (issue 61's case)
    "b/CMakeCache.txt": "file",
    "out/tests/watch.fifo": "fifo",
    "out/lab04_attention": "file",
    "_build/compile_commands.json": "file",
    "cmake-build-debug/CMakeFiles/lab04.dir/lab04_attention.cpp.o": "file",
    "lab04_attention.cpp~": "file",
    ".lab04_attention.cpp.swp": "file",
    "checker/.cases.py.swp": "file",
    "checker/__pycache__/cases.cpython-311.pyc": "file",
    "engine/engine.fifo": "fifo",
    "grader/notes.txt~": "file",
    "cmake/#lab_targets.cmake#": "file",
}


def plant(root, planted, listening):
    """Makes each planted name in root; sockets are bound and listening (kept in `listening`)."""
    for name, kind in planted.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if kind == "socket":
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            here = os.getcwd()
            os.chdir(os.path.dirname(path))  # a short name: a socket's path has at most 107 bytes
            try:
                server.bind(os.path.basename(path))
            finally:
                os.chdir(here)
            server.listen(1)
            listening.append(server)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            with open(path, "w") as f:
                f.write("not the project's\n")


def tree(root):
    """Every entry under root that is not a folder, relative to it."""
    found = set()
    for top, dirs, names in os.walk(root):
        found.update(os.path.relpath(os.path.join(top, n), root) for n in names)
    return found


def make(kit, option, out):
    """Runs the copy's make_starter.py; (exit status, stdout, stderr). (It takes a second; one
    that opens a FIFO to copy it waits for a writer that never comes.)"""
    try:
        done = subprocess.run([sys.executable, os.path.join(kit, "instructor", "make_starter.py")] + option + [out],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return -1, "", "make_starter.py %s did not end in 120 s" % " ".join(option)
    return done.returncode, done.stdout, done.stderr


def shipped_checks(copy, listed, work):
    """Each of the instructor's kit's outputs made from copy: (name, files of the project it holds,
    relative to the project, or an error) for each."""
    outputs = {}
    code, out, err = make(copy, [], os.path.join(work, "starter"))
    outputs["the starter"] = (code, err, tree(os.path.join(work, "starter")) if code == 0 else set())
    zip_path = os.path.join(work, "autograder.zip")
    code, out, err = make(copy, ["--autograder"], zip_path)
    names = set()
    if code == 0:
        with zipfile.ZipFile(zip_path) as z:
            names = {n for n in z.namelist() if not n.endswith("/")}
    outputs["Gradescope's autograder.zip"] = (code, err, names)
    code, out, err = make(copy, ["--classroom50"], os.path.join(work, "classroom50"))
    made = os.path.join(work, "classroom50")
    outputs["Classroom 50's template"] = (code, err, tree(os.path.join(made, "template")) if code == 0 else set())
    outputs["Classroom 50's autograder bundle"] = (
        code, err, tree(os.path.join(made, "autograder", "project")) if code == 0 else set())
    code, out, err = make(copy, ["--prairielearn"], os.path.join(work, "prairielearn"))
    outputs["PrairieLearn's image"] = (
        code, err, tree(os.path.join(work, "prairielearn", "image", "lab04")) if code == 0 else set())
    checks = []
    # What the kit writes itself, not copied from the project (make_starter.py): the starter's lab,
    # README, tests and workflow, and Gradescope's two scripts.
    written = {"lab04_attention.cpp", "README.md", "tests/CMakeLists.txt", ".github/workflows/grade.yml",
               "setup.sh", "run_autograder"}
    for name, (code, err, names) in outputs.items():
        stray = sorted(n for n in names if n not in listed and n not in written)
        planted = sorted(n for n in names if n in PLANTED)
        checks.append(("%s, made from a checkout with build folders and editors' files: only the project's listed "
                       "files (and what the kit writes)" % name, code == 0 and not stray and not planted
                       and any(n.startswith("checker/") for n in names),
                       "exit %d, %s; not on the list: %s" % (code, err.strip()[-300:], stray[:8])))
    return checks


def refused_checks(copy, work):
    """A listed file that is a FIFO, a socket or a link: each copying path names it and writes nothing."""
    checks = []
    target = os.path.join(copy, "watch", "verdict.cpp")
    kept = target + ".kept"
    os.rename(target, kept)
    listening = []
    try:
        for kind, words in (("fifo", "a FIFO"), ("socket", "a socket"), ("link", "a symbolic link")):
            if kind == "link":
                os.symlink("/etc/passwd", target)
            else:
                plant(copy, {"watch/verdict.cpp": kind}, listening)
            dest = os.path.join(work, "refused-" + kind)
            try:
                project.copy(copy, dest)
                ok, got = False, "copied, no error"
            except project.project_files.NotRegular as e:
                ok, got = e.name == "watch/verdict.cpp" and words in str(e) and not os.path.exists(dest), str(e)
            except Exception as e:  # any other error is a crash of the test's copy, as in issue 61
                ok, got = False, "%s: %s" % (type(e).__name__, e)
            checks.append(("the tests' copy, with watch/verdict.cpp %s: refused with its name, nothing copied"
                           % words, ok, got))
            out = os.path.join(work, "starter-" + kind)
            code, stdout, stderr = make(copy, [], out)
            lines = stderr.strip().splitlines()
            checks.append(("make_starter.py, with watch/verdict.cpp %s: exit 2, one line naming it, nothing on "
                           "standard output, no starter" % words,
                           code == 2 and len(lines) == 1 and "watch/verdict.cpp" in lines[0] and words in lines[0]
                           and not stdout and not os.path.exists(out),
                           "exit %d; stdout %r; stderr %r" % (code, stdout[-200:], stderr[-400:])))
            zip_path = os.path.join(work, "autograder-%s.zip" % kind)
            code, stdout, stderr = make(copy, ["--autograder"], zip_path)
            checks.append(("make_starter.py --autograder, with watch/verdict.cpp %s: exit 2, one line naming it, "
                           "no zip" % words, code == 2 and "watch/verdict.cpp" in stderr
                           and len(stderr.strip().splitlines()) == 1 and not os.path.exists(zip_path),
                           "exit %d; stderr %r" % (code, stderr[-400:])))
            for server in listening:
                server.close()
            listening.clear()
            os.remove(target)
    finally:
        for server in listening:
            server.close()
        if os.path.lexists(target):
            os.remove(target)
        os.rename(kept, target)
    return checks


def main(argv):
    if len(argv) != 1:
        print("project_files_test: usage: project_files_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    checks = []

    if project.project_files.tracked(project.ROOT) is not None:
        done = subprocess.run([sys.executable, os.path.join(project.TOOLS, "project_files.py"), "--check",
                               project.ROOT], capture_output=True, text=True)
        checks.append(("the list (tools/project_files.txt) names what git tracks, no more and no less",
                       done.returncode == 0, done.stdout[-800:] + done.stderr[-300:]))
    else:
        print("(the project is not a git checkout here: the list is not compared with git's)")

    listed = set(project.files(project.ROOT))
    checks.append(("the list names the lab, its build, the checker and this test",
                   {"lab04_attention.cpp", "CMakeLists.txt", "checker/check_lab.py", "tests/project_files_test.py",
                    "tools/project_files.txt"} <= listed, sorted(listed)[:10]))

    # A user's checkout: the listed files, as a download of the project has them, then build
    # folders of several names and editors' files beside them; one build folder outside it.
    checkout = os.path.join(work, "checkout")
    project.copy(project.ROOT, checkout)
    listening = []
    try:
        plant(checkout, PLANTED, listening)
        plant(work, {"outside-build/tests/lab04_fast-4567cdef.sock": "socket"}, listening)
        dest = os.path.join(work, "copy")
        try:
            copied = project.copy(checkout, dest)
            ok, got = set(copied) == listed and tree(dest) == listed, sorted(tree(dest) ^ listed)[:8]
        except Exception as e:  # issue 61: OSError [Errno 6] on the lab server's socket
            ok, got = False, "%s: %s" % (type(e).__name__, e)
        checks.append(("the tests' copy of a checkout with build folders (b, out, _build, cmake-build-debug), a "
                       "listening socket, FIFOs and editors' files: exactly the listed files", ok, got))
        checks += shipped_checks(checkout, listed, work)
        checks += refused_checks(checkout, work)
    finally:
        for server in listening:
            server.close()
    status = checklist.report(checks)
    if status == 0:
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
