"""Every file the project writes is written whole or not at all, and never through a link
(lab04/checker/files.py): what a student's checkout, or anyone who can write in the folder, leaves at
PATH or PATH.new, a link to a file of the grader's, a folder, an old file, is replaced, never
followed; a write that fails half way leaves PATH as it was and no PATH.new behind.

usage: file_writer_test.py WORK_DIR
"""
import os
import shutil
import sys

import checklist
import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import files


def fresh(work, name):
    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    victim = os.path.join(folder, "victim")
    with open(victim, "w") as f:
        f.write("the grader's own\n")
    return os.path.join(folder, "out.json"), victim


def text_of(path):
    with open(path) as f:
        return f.read()


def main(argv):
    if len(argv) != 1:
        print("file_writer_test: usage: file_writer_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    checks = []

    path, victim = fresh(work, "link_at_new")
    os.symlink(victim, path + ".new")
    files.write_text(path, "new\n")
    checks.append(("a link left at PATH.new is removed, not written through",
                   text_of(victim) == "the grader's own\n" and text_of(path) == "new\n"
                   and not os.path.islink(path) and not os.path.lexists(path + ".new"),
                   (text_of(victim), os.path.islink(path))))

    path, victim = fresh(work, "link_at_path")
    os.symlink(victim, path)
    files.write_text(path, "new\n")
    checks.append(("a link left at PATH is replaced by the file, its target untouched",
                   text_of(victim) == "the grader's own\n" and not os.path.islink(path) and text_of(path) == "new\n",
                   (text_of(victim), os.path.islink(path))))

    path, victim = fresh(work, "dangling")
    os.symlink(os.path.join(work, "dangling", "made_by_the_link"), path + ".new")
    files.write_text(path, "new\n")
    checks.append(("a dangling link at PATH.new makes no file where it points",
                   not os.path.lexists(os.path.join(work, "dangling", "made_by_the_link")) and text_of(path) == "new\n",
                   sorted(os.listdir(os.path.join(work, "dangling")))))

    path, victim = fresh(work, "folder_at_new")
    os.makedirs(os.path.join(path + ".new", "deep", "er"))
    files.write_text(path, "new\n")
    checks.append(("a folder left at PATH.new is removed, and the file written", text_of(path) == "new\n",
                   sorted(os.listdir(os.path.dirname(path)))))

    path, victim = fresh(work, "half_way")
    files.write_text(path, "old\n")
    try:
        with files.written(path) as f:
            f.write("half of the new")
            raise RuntimeError("the writer failed half way")
    except RuntimeError:
        pass
    checks.append(("a write that fails half way leaves the old file, and no PATH.new",
                   text_of(path) == "old\n" and not os.path.lexists(path + ".new"),
                   (text_of(path), sorted(os.listdir(os.path.dirname(path))))))

    path, victim = fresh(work, "binary_and_text")
    with files.written(path, "wb") as f:
        f.write(b"\x00\x01")
    files.write_text(path + ".csv", "a,b\r\nJos\u00e9,1\r\n", newline="")
    with open(path, "rb") as f, open(path + ".csv", "rb") as g:
        got = (f.read(), g.read())
    checks.append(("bytes are written as they are, text as UTF-8 with its own line ends",
                   got == (b"\x00\x01", "a,b\r\nJos\u00e9,1\r\n".encode()), got))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
