"""Without lld the lab still builds: the default preset, configured where no ld.lld can be found,
builds and runs the lab with the system's linker, and says once at configure what the faster
path needs.

usage: no_lld_test.py PROJECT_DIR WORK_DIR [LAB_LINKED_HERE]

"No ld.lld" is a PATH without it: WORK_DIR/bin holds a link to every program on PATH but
ld.lld (clang, which finds ld.lld in its own folder when asked for lld, is then not asked).
The copy's lab is built with the default preset into WORK_DIR/build. A binary linked by lld
says so in its .comment section ("Linker: LLD ..."), GNU ld's does not: that tells which
linker made it. LAB_LINKED_HERE, the project's own build of the lab, given where that build
links with lld (not with -DLAB_LLD=OFF, as the gcc preset), shows the difference. Prints OK or NOT OK for each promise, and exits 1 if one did not hold.
"""
import os
import re
import shutil
import subprocess
import sys

import checklist
import project

ADVICE = "no ld.lld was found (install lld for faster links after each edit)"


def linked_by_lld(binary):
    with open(binary, "rb") as f:
        return re.search(rb"Linker: [^\0]*LLD", f.read()) is not None


def path_without_lld(folder):
    os.makedirs(folder)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = os.path.join(folder, name)
            if not name.startswith("ld.lld") and not os.path.lexists(target):
                os.symlink(os.path.join(directory, name), target)
    return folder


def main(argv):
    if len(argv) not in (2, 3) or not os.path.isfile(os.path.join(argv[0], "CMakePresets.json")):
        print("no_lld_test: usage: no_lld_test.py PROJECT_DIR WORK_DIR [LAB_LINKED_HERE]", file=sys.stderr)
        return 2
    project_dir, work = argv[:2]
    shutil.rmtree(work, ignore_errors=True)
    source = os.path.join(work, "source")
    project.copy(project_dir, source)
    env = dict(os.environ, PATH=path_without_lld(os.path.join(work, "bin")))
    build = os.path.join(work, "build")
    checks = [("no ld.lld on the PATH the build sees", shutil.which("ld.lld", path=env["PATH"]) is None,
               shutil.which("ld.lld", path=env["PATH"]))]
    configure = subprocess.run(["cmake", "--preset", "default", "-B", build], cwd=source, env=env,
                               capture_output=True, text=True)
    said = configure.stdout.count(ADVICE)
    checks.append(("the default preset configures, and says once what the faster link needs",
                   configure.returncode == 0 and said == 1,
                   "exit %d, the advice said %d times:\n%s" % (configure.returncode, said,
                                                               (configure.stdout + configure.stderr)[-1500:])))
    built = subprocess.run(["cmake", "--build", build, "--target", "lab04_attention"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lab = os.path.join(build, "lab04_attention")
    checks.append(("the lab builds", built.returncode == 0 and os.path.isfile(lab), built.stdout[-1500:]))
    if os.path.isfile(lab):
        checks.append(("... with the system's linker, not lld", not linked_by_lld(lab), "its .comment names LLD"))
        golden = open(project.GOLDEN).read()
        run = subprocess.run([lab], capture_output=True, text=True)
        checks.append(("... and prints the lesson's output", run.returncode == 0 and run.stdout == golden,
                       "exit %d:\n%s%s" % (run.returncode, run.stdout[-400:], run.stderr[-400:])))
    if len(argv) == 3:
        checks.append(("the project's own lab, built to link with lld, is linked by lld (%s)" % argv[2],
                       linked_by_lld(argv[2]), "its .comment names no LLD"))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
