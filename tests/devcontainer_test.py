#!/usr/bin/env python3
"""The dev container (.devcontainer/devcontainer.json), the project's and the starter's, is
what the README runs: students on macOS and Windows (Codespaces, or VS Code with Docker) get
the machine CI and the fresh Debian chroots test.

usage: devcontainer_test.py WORK_DIR

Checked as far as a machine without Docker allows: the file parses as strict JSON; its image is
a Debian image; its create command is the README's install-build-run command, character for
character, less its last step, the run of the lab (a starter's lab stops at its first blank
with exit 4, which would mark the container's creation as failed): what CI and the fresh
chroots run is what the container runs; its extensions are
clangd and CMake Tools and none that only Microsoft's VS Code may run (cpptools, the remote
extensions, Copilot: code-server and VSCodium cannot); its host asks for what the build needs
(2 cores, 8 GB of memory, 32 GB of disk for LibTorch); the starter make_starter.py writes
carries the same file.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import checklist
import project

PROPRIETARY = re.compile(r"^(ms-vscode\.cpptools.*|ms-vscode-remote\..*|github\.copilot.*|ms-vscode\.vscode-remote.*)$", re.I)


def size_gb(text):
    m = re.fullmatch(r"(\d+)gb", str(text))
    return int(m.group(1)) if m else 0


def problems(path, install):
    try:
        with open(path) as f:
            conf = json.load(f)
    except (OSError, ValueError) as e:
        return ["%s does not parse as JSON: %s" % (path, e)]
    p = []
    if not re.fullmatch(r"debian:(bookworm|trixie|testing|forky|1[2-9])(-slim)?", str(conf.get("image"))):
        p.append("its image %r is not a Debian image the project is tested on" % conf.get("image"))
    if conf.get("postCreateCommand") != install:
        p.append("its postCreateCommand is not the README's install-build-run command less its run of the lab: %r"
                 % conf.get("postCreateCommand"))
    extensions = conf.get("customizations", {}).get("vscode", {}).get("extensions", [])
    for wanted in ("llvm-vs-code-extensions.vscode-clangd", "ms-vscode.cmake-tools"):
        if wanted not in extensions:
            p.append("it lacks the extension %s" % wanted)
    p += ["%s is an extension only Microsoft's VS Code may run" % e for e in extensions if PROPRIETARY.match(e)]
    host = conf.get("hostRequirements", {})
    if host.get("cpus", 0) < 2 or size_gb(host.get("memory")) < 8 or size_gb(host.get("storage")) < 32:
        p.append("its hostRequirements %r ask for less than the build needs" % host)
    return p


def main(argv):
    if len(argv) != 1:
        print("devcontainer_test: usage: devcontainer_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    install = project.readme_command("install-build-run").strip()
    run = " && build/lab04_attention"
    if not install.endswith(run):
        print("devcontainer_test: the README's install-build-run command no longer ends with%s" % run, file=sys.stderr)
        return 2
    install = install[:-len(run)]
    checks = []
    mine = os.path.join(project.ROOT, ".devcontainer", "devcontainer.json")
    found = problems(mine, install)
    checks.append(("the project's dev container runs the README's install line in Debian, with clangd and CMake Tools",
                   not found, found))
    starter = os.path.join(work, "starter")
    made = subprocess.run([sys.executable, os.path.join(project.INSTRUCTOR, "make_starter.py"), starter],
                          capture_output=True, text=True)
    theirs = os.path.join(starter, ".devcontainer", "devcontainer.json")
    same = made.returncode == 0 and os.path.isfile(theirs) and open(theirs).read() == open(mine).read()
    checks.append(("the starter carries the same dev container", same, made.stdout + made.stderr))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
