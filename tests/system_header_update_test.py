"""A system update must not break the build: a header the precompiled header was made from,
replaced by other contents with an older date (as a Debian package update does), makes the
next build rebuild the precompiled header, instead of failing (clang: "file ... has been
modified since the precompiled header was built") or going on with the old contents (g++); so
does one replaced by other bytes of the same size and date; the same headers as new files (new
inodes: a container's overlay file system, a build copied whole) rebuild nothing.

usage: system_header_update_test.py PROJECT_DIR WORK_DIR CXX_COMPILER [LINKER_FLAGS]

No system file is touched: a copy of the project, in WORK_DIR, is built with a copy of
<linux/errno.h> found first (-isystem), which the precompiled header includes through
<cerrno>; the test replaces that copy, then edits the lab, as a student would, and rebuilds. Prints OK or NOT OK for each promise, and exits 1 if one did not hold.
"""
import glob
import os
import shutil
import subprocess
import sys
import time

import checklist
import project

HEADER = "linux/errno.h"


def main(argv):
    if len(argv) not in (3, 4) or not os.path.isfile(os.path.join(argv[0], "lab04_attention.cpp")):
        print("system_header_update_test: usage: system_header_update_test.py PROJECT_DIR WORK_DIR "
              "CXX_COMPILER [LINKER_FLAGS]", file=sys.stderr)
        return 2
    project_dir, work, compiler = argv[:3]
    linker_flags = argv[3] if len(argv) == 4 else ""
    shutil.rmtree(work, ignore_errors=True)
    source = os.path.join(work, "source")
    project.copy(project_dir, source)
    include = os.path.join(work, "include")
    os.makedirs(os.path.join(include, "linux"))
    copy = os.path.join(include, HEADER)
    shutil.copy(os.path.join("/usr/include", HEADER), copy)
    build = os.path.join(work, "build")
    configure = subprocess.run(
        ["cmake", "-S", source, "-B", build, "-G", "Ninja", "-DCMAKE_CXX_COMPILER=" + compiler,
         "-DCMAKE_EXE_LINKER_FLAGS=" + linker_flags, "-DCMAKE_CXX_FLAGS=-isystem " + include],
        capture_output=True, text=True)
    if configure.returncode != 0:
        print("NOT OK  the build could not be configured:\n" + configure.stdout[-2000:] + configure.stderr[-2000:])
        return 1

    def rebuild():
        return subprocess.run(["cmake", "--build", build, "--target", "lab04_attention"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def pch_dir():  # where the build put the precompiled header (it says so in lab04_paths.txt)
        with open(os.path.join(build, "lab04_paths.txt")) as f:
            return dict(line.split(" ", 1) for line in f.read().splitlines())["pch_dir"]

    def pch_time():
        found = glob.glob(os.path.join(pch_dir(), "cmake_pch.hxx.[pg]ch"))
        return os.stat(found[0]).st_mtime_ns if found else None

    first = rebuild()
    inputs = "".join(open(f).read() for f in glob.glob(os.path.join(pch_dir(), "*.inputs")))
    checks = [("the lab builds, with a precompiled header made from the copy of <%s>" % HEADER,
               first.returncode == 0 and copy in inputs, first.stdout[-1500:] or "the header is not among its inputs")]
    made = pch_time()
    again = rebuild()
    checks.append(("a build with nothing changed does not rebuild the precompiled header",
                   again.returncode == 0 and pch_time() == made, again.stdout[-1500:]))

    # The same header as a new file (a new inode; the same bytes, size and date), as in each
    # container made from an image (its overlay file system) or a build copied whole: no rebuild.
    moved = copy + ".moved"
    shutil.copy2(copy, moved)
    os.replace(moved, copy)
    again = rebuild()
    checks.append(("the same headers with new inodes (a container's overlay, a copied build) do not rebuild it",
                   again.returncode == 0 and pch_time() == made and "rebuilding it" not in again.stdout,
                   again.stdout[-1500:]))
    # Other bytes of the same size and date, as a new file: the checksums see it.
    with open(copy, "rb") as f:
        data = f.read()
    stat = os.stat(copy)
    swapped = data.replace(b"<", b'"', 1).replace(b">", b'"', 1)  # #include "asm/errno.h": the same header
    with open(moved, "wb") as f:
        f.write(swapped)
    os.utime(moved, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(moved, copy)
    same_size = len(swapped) == len(data) and swapped != data
    again = rebuild()
    checks.append(("a header replaced by other bytes of the same size and date rebuilds it, saying why",
                   same_size and again.returncode == 0 and pch_time() != made and "rebuilding it" in again.stdout,
                   "same size: %s; %s" % (same_size, again.stdout[-1500:])))
    made = pch_time()

    with open(copy, "a") as f:
        f.write("/* the update's new contents */\n")
    old = time.mktime((2001, 1, 1, 0, 0, 0, 0, 0, -1))
    os.utime(copy, (old, old))  # older than the precompiled header, as a package's files are
    with open(os.path.join(source, "lab04_attention.cpp"), "a") as f:
        f.write("// an edit after the update\n")
    updated = rebuild()
    checks.append(("after the header is replaced by an older file, the next build after an edit succeeds",
                   updated.returncode == 0, updated.stdout[-1500:]))
    checks.append(("... and it rebuilt the precompiled header, saying why",
                   pch_time() != made and "rebuilding it" in updated.stdout, updated.stdout[-1500:]))
    golden = open(project.GOLDEN).read()
    try:
        printed = subprocess.run([os.path.join(build, "lab04_attention")], capture_output=True, text=True).stdout
    except OSError as e:
        printed = "cannot run it: %s" % e
    checks.append(("the lab it built prints the lesson's output", printed == golden, printed[-300:]))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
