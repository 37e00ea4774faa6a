"""One engine runs every lab (engine/run.h): nothing else starts a student's code, sets its
limits or reads it against its time.

usage: engine_rule_test.py WORK_DIR

The rule, as the code holds it:
- Resource limits are set in two files only: the engine (engine/run.cpp) and its stand-in
  (engine/stand_in/server.cpp, whose program takes on the limits its client already has: the tests'
  lab server's and the watch's --once server's). Read
  from the source of every product folder and the fast path: a setrlimit() or prlimit() call
  in C++, resource.setrlimit or a "prlimit" command word in Python, ulimit or prlimit in a
  shell script. One exception, named with its reason: lab04/grader/git_reading.py bounds git reading a
  student's repository, which is no lab.
- The mounts a sandbox gives a lab (a /proc of its own, empty folders over the grader's, a root
  of its own for a compile) are made by the engine: mount() is called in engine/runner_child.cpp
  alone, and one shell script mounts, the sandbox's without root or bubblewrap (util-linux's
  unshare, lab04/checker/sandbox.py), where the engine has no right to. Read as above: a mount() call
  in C++, a string of Python that runs "mount -..." in a shell, a mount line of a shell script.
- What a lab may see and do is decided and built in one module, lab04/checker/sandbox.py (with the
  user ids', the allowlist's and the cgroups' modules beside it, and the engine, which makes what it asks): a command list of
  Python whose first word is bwrap, unshare, setpriv and the like, a string that names
  /sys/fs/cgroup, a shell line that runs such a command, a namespace, root or user taken in
  C++. Every script is read, whatever its shebang says (#!/usr/bin/env bash among them).
  Classroom 50's job, which asks through sudo before the grader runs whether its runner can
  isolate a lab at all, runs the module's probes (sandbox.PROBES).
- A job of the run engine is a value (lab04/checker/engine.py's Job), whose wire (a field: a letter,
  then its value) is written there alone: in Python, a string of one capital letter joined to a
  value ("C" + word) or one that formats it ("T%d" % ms), outside lab04/checker/engine.py.
- What the instructor asked of a lab's isolation (LAB_SANDBOX, and LAB_SANDBOX_UIDS, the user
  ids root's sandboxes take) is read in one module,
  lab04/checker/isolation.py, which every module that chooses a sandbox, or how a class's compile is
  isolated, asks: in Python, os.environ.get, os.getenv or os.environ[...] of "LAB_SANDBOX", or
  "LAB_SANDBOX" in os.environ; $LAB_SANDBOX in a shell script; getenv("LAB_SANDBOX") in C++.
  Setting it for a child (a test's, a template's environment) is no choice.
- A lab's isolation, a mode of it (root's user, bubblewrap, unshare, none; a compile's user kept
  out), is chosen in that module too (isolation.choose_runs, choose_compiles); the modules that
  probe the machine pass their answers to it and act on the Isolation it gives back. In Python
  outside it: a mode's word ("bwrap") or name (isolation.BWRAP) given to a name or attribute, or a
  keyword, that says mode, isolation, sandbox, compiles or chosen, or passed to a sandbox, box or
  compiler; returned by a function whose name says choose, mode, isolation or sandbox, or in a
  tuple; a mode's name anywhere but in a comparison; or an Isolation made.
- A process is forked in the engine and in a few places named with what their child is, none
  of them a lab (a C++ fork(), vfork(), clone() or posix_spawn(); in Python os.fork, pty.fork,
  os.posix_spawn or multiprocessing). The two programs that keep LibTorch loaded and run labs
  from it, the watch and the tests' lab server (whose handler for each client forks), run every
  lab through engine::run.
- A lab run by the checker's sandbox, and a compile of the class grader's, is a child of the
  engine's program (lab04_runner), never of a Python process: a stand-in lab prints the name of
  the process it was started by (LAB_SANDBOX=none: no wrapper stands between them).
Prints OK or NOT OK for each file and run.
"""
import ast
import os
import re
import shutil
import sys

import checklist
import project

from lab04.grader import compile_sandbox  # noqa: E402
from lab04.checker import sandbox  # noqa: E402  (the checker's)

PRODUCT = ["lab04", "checker", "grader", "instructor", "engine", "watch", "cmake", "tools", os.path.join("tests", "fast_lab")]
ALLOWED = {os.path.join("engine", "run.cpp"): "the engine",
           os.path.join("engine", "stand_in", "server.cpp"): "the stand-in's server, which gives its program its "
                                                             "client's limits"}
NOT_A_LAB = {os.path.join("lab04", "grader", "git_reading.py"): "git reading a student's repository at its deadline"}
C_LIMIT = re.compile(r"\b(setrlimit|prlimit|prlimit64)\s*\(")
SHELL_LIMIT = re.compile(r"^[^#]*\b(ulimit|prlimit)\b", re.M)
MOUNTERS = {os.path.join("engine", "runner_child.cpp"): "the engine: a run's child, entering its sandbox",
            os.path.join("lab04", "checker", "sandbox.py"): "the sandbox without root or bubblewrap: one script"}
# Where a lab's sandbox is decided and built (its commands, its probes, its cgroups, the user ids
# and the engine's fields): lab04/checker/sandbox.py, with the user ids', allowlist's and cgroups' modules beside it. A Python
# list whose first word is one of SANDBOX_COMMANDS, a string naming /sys/fs/cgroup, a shell line
# that runs one, or, in C++, a namespace, a root or a user taken (the engine's alone).
BUILDERS = {os.path.join("lab04", "checker", "sandbox.py"): "the sandbox's one module",
            os.path.join("lab04", "checker", "sandbox_users.py"): "the user ids of root's sandboxes, and its probe that such "
                                                          "a user can run programs",
            os.path.join("lab04", "checker", "allowlist.py"): "the sandbox's allowlist: bubblewrap's command line and the "
                                                       "engine's root of its own, one list",
            os.path.join("lab04", "checker", "cgroups.py"): "the class workers' cgroups, and the out-of-memory killer's count",
            os.path.join("engine", "runner_child.cpp"): "the engine, which makes what the sandbox's module asks",
            os.path.join("engine", "runner_kill.cpp"): "the engine, which kills a sandbox's user as that user"}
SANDBOX_COMMANDS = {"bwrap", "unshare", "setpriv", "nsenter", "capsh", "chroot", "cgexec", "systemd-run"}
C_BUILD = re.compile(r"\b(unshare|chroot|pivot_root|setresuid|setns)\s*\(")
SHELL_BUILD = re.compile(r"^[^#]*?(?:^|[;&|(]|\bsudo|\bexec)\s*(%s)\b" % "|".join(sorted(SANDBOX_COMMANDS)), re.M)
# Where a process is forked, and what its child is: the engine's labs, or no lab at all.
FORKERS = {os.path.join("engine", "run.cpp"): "the engine: a lab's process",
           os.path.join("engine", "runner_kill.cpp"): "the engine's program: a process that sweeps what labs left",
           os.path.join("engine", "runner.cpp"): "the engine's program: a process for each student's runs",
           os.path.join("engine", "stand_in", "client.cpp"): "a server started as a daemon, no lab",
           os.path.join("watch", "build.cpp"): "the build (cmake or ninja), no lab",
           os.path.join("watch", "verdict.cpp"): "the checker's Python, whose labs are the engine's",
           os.path.join("tests", "fast_lab", "server.cpp"): "a handler for each client, whose lab is the engine's",
           os.path.join("lab04", "grader", "whole_class.py"): "the class grader's workers, whose labs are the engine's"}
ENGINE_CALLERS = [os.path.join("watch", "lab_watch.cpp"), os.path.join("tests", "fast_lab", "server.cpp")]
C_FORK = re.compile(r"\b(v?fork|clone3?|posix_spawnp?)\s*\(")
PYTHON_FORKS = {"fork", "forkpty", "posix_spawn", "posix_spawnp"}
C_MOUNT = re.compile(r"\bmount\s*\(")
# Where a job's fields are written: the run engine's client, from a Job.
WIRE_WRITERS = {os.path.join("lab04", "checker", "engine.py"): "the run engine's client (Job.fields)"}
# Where LAB_SANDBOX is read: the one module that says what the instructor asked.
CHOOSERS = {os.path.join("lab04", "checker", "isolation.py"): "the isolation module, which chooses"}
MODE_WORDS = {"user", "bwrap", "unshare", "none", "user-kept-out"}
MODE_NAMES = {"USER", "BWRAP", "UNSHARE", "NONE", "KEPT_OUT", "ANY"}
MODE_HOLDER = re.compile(r"mode|isolation|sandbox|compiles|chosen", re.I)
CHOOSING_FUNCTION = re.compile(r"choose|mode|isolation|sandbox", re.I)
TAKES_A_MODE = re.compile(r"sandbox|box|compiler|isolation|choose", re.I)
ASKERS = {os.path.join("lab04", "checker", "isolation.py"): "the module of what the instructor asked"}
C_ASK = re.compile(r"\bgetenv\s*\(\s*\"LAB_SANDBOX(_UIDS)?\"")
SHELL_ASK = re.compile(r"^[^#]*\$\{?LAB_SANDBOX(_UIDS)?\b", re.M)
SCRIPT_MOUNT = re.compile(r"\bmount\s+-")
SHELL_MOUNT = re.compile(r"^[^#]*\bmount\b", re.M)


def without_cpp_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def python_limits(text):
    """The places a Python module sets a limit: resource.setrlimit, or "prlimit" as a word of a
    command (its docstrings and comments aside)."""
    found = []
    for node in ast.walk(ast.parse(re.sub(r"@\w+@", "0", text))):  # (a template's @NAME@: a value)
        if isinstance(node, ast.Attribute) and node.attr in ("setrlimit", "prlimit"):
            found.append("line %d: %s" % (node.lineno, node.attr))
        if isinstance(node, (ast.List, ast.Tuple)):
            for item in node.elts:
                if isinstance(item, ast.Constant) and item.value == "prlimit":
                    found.append("line %d: a prlimit command" % node.lineno)
    return found


def python_mount_scripts(text):
    """The lines of a Python module where a string holds a shell script that mounts."""
    tree = ast.parse(re.sub(r"@\w+@", "0", text))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return ["line %d: a script that mounts" % node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SCRIPT_MOUNT.search(node.value)
            and id(node) not in docstrings]


def python_builders(text):
    """The lines of a Python module that build or probe a sandbox: a command (a list) whose first
    word is a sandbox's command, a string that names the cgroups' folder."""
    found = []
    for node in ast.walk(ast.parse(re.sub(r"@\w+@", "0", text))):
        if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                and node.elts[0].value in SANDBOX_COMMANDS:
            found.append("line %d: %s" % (node.lineno, node.elts[0].value))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "/sys/fs/cgroup" in node.value:
            found.append("line %d: the cgroups' folder" % node.lineno)
    return found


def python_asks(text):
    """The lines of a Python module that read LAB_SANDBOX: environ.get, getenv, environ[...] (read,
    not set), or a test of whether it is in the environment."""
    found = []

    def named(node):
        return isinstance(node, ast.Constant) and node.value in ("LAB_SANDBOX", "LAB_SANDBOX_UIDS")
    for node in ast.walk(ast.parse(re.sub(r"@\w+@", "0", text))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "getenv") \
                and node.args and named(node.args[0]):
            found.append("line %d: %s(%r)" % (node.lineno, node.func.attr, node.args[0].value))
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and named(node.slice):
            found.append("line %d: [%r]" % (node.lineno, node.slice.value))
        if isinstance(node, ast.Compare) and named(node.left) and any(isinstance(op, (ast.In, ast.NotIn))
                                                                    for op in node.ops):
            found.append("line %d: %r in" % (node.lineno, node.left.value))
    return found


def is_a_mode(node):
    """A mode's word, a mode's name of the isolation module, or an expression that may be one."""
    if isinstance(node, ast.Constant):
        return node.value in MODE_WORDS
    if isinstance(node, ast.Attribute):
        return node.attr in MODE_NAMES and isinstance(node.value, ast.Name) and node.value.id == "isolation"
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(is_a_mode(e) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return is_a_mode(node.body) or is_a_mode(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(is_a_mode(v) for v in node.values)
    return False


def named_for_a_mode(target):
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(named_for_a_mode(t) for t in target.elts)
    return MODE_HOLDER.search(name) is not None


def python_choosers(text):
    """The lines of a Python module that choose a mode of isolation: a mode given to a name,
    attribute or keyword that holds one, returned by a function that chooses or in a tuple, or
    an Isolation made."""
    found = []
    tree = ast.parse(re.sub(r"@\w+@", "0", text))
    for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None and is_a_mode(node.value) and (
                    isinstance(node.value, ast.Tuple) or CHOOSING_FUNCTION.search(function.name)):
                found.append("line %d: returns a mode" % node.lineno)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None \
                and is_a_mode(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(named_for_a_mode(t) for t in targets):
                found.append("line %d: a mode given" % node.lineno)
        if isinstance(node, ast.keyword) and node.arg and MODE_HOLDER.search(node.arg) and is_a_mode(node.value):
            found.append("line %d: %s=a mode" % (node.value.lineno, node.arg))
        if isinstance(node, ast.Call):
            callee = node.func.id if isinstance(node.func, ast.Name) else \
                node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if callee == "Isolation":
                found.append("line %d: an Isolation made" % node.lineno)
            elif TAKES_A_MODE.search(callee) and any(is_a_mode(a) for a in node.args):
                found.append("line %d: a mode passed to %s" % (node.lineno, callee))
    compared = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Compare)
                for operand in [c.left] + c.comparators for n in ast.walk(operand)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_a_mode(node) and id(node) not in compared:
            found.append("line %d: isolation.%s" % (node.lineno, node.attr))
    return sorted(set(found))


def python_wire(text):
    """The lines of a Python module that write a field of a job: a capital letter joined to a
    value ("C" + word) or formatting one ("T%d" % ms)."""
    found = []
    for node in ast.walk(ast.parse(re.sub(r"@\w+@", "0", text))):
        if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            letter = node.left.value
            if isinstance(node.op, ast.Add) and re.fullmatch(r"[A-Z]", letter) or \
                    isinstance(node.op, ast.Mod) and re.fullmatch(r"[A-Z]%[sd]|[A-Z]%s=%[sd]", letter):
                found.append("line %d: %r" % (node.lineno, letter))
    return found


def python_forks(text):
    """The lines of a Python module that fork: os.fork and its kin, multiprocessing."""
    found = []
    for node in ast.walk(ast.parse(re.sub(r"@\w+@", "0", text))):
        if isinstance(node, ast.Attribute) and node.attr in PYTHON_FORKS and isinstance(node.value, ast.Name) \
                and node.value.id in ("os", "pty"):
            found.append("line %d: %s.%s" % (node.lineno, node.value.id, node.attr))
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0] == "multiprocessing"
                for alias in node.names):
            found.append("line %d: multiprocessing" % node.lineno)
    return found


def is_shell_script(name, text):
    """A shell script by its name or by its first line, whatever the shebang says it with."""
    return name.endswith(".sh") or re.match(r"#!\s*\S*(/|env\s+)(ba|da|k)?sh\b", text) is not None


def limit_setters(mounts=False, builders=False, forks=False, asks=False, wire=False, chooses=False):
    """{file (relative to the project): where it sets limits} for every product file that does;
    with mounts, where it mounts (a mount() call, a script); with builders, where it builds or
    probes a sandbox; with asks, where it reads LAB_SANDBOX; with chooses, where it chooses a
    mode of isolation (Python alone: no script or C++ chooses one); with wire, where it writes a job's
    field; with forks, where it forks (C++ and
    Python: a shell script forks for every command it runs)."""
    never = re.compile(r"(?!)")
    c_rule, shell_rule, python_rule = (never, never, python_wire) if wire else \
        (never, never, python_choosers) if chooses else \
        (C_ASK, SHELL_ASK, python_asks) if asks else \
        (C_MOUNT, SHELL_MOUNT, python_mount_scripts) if mounts else \
        (C_BUILD, SHELL_BUILD, python_builders) if builders else \
        (C_FORK, re.compile(r"(?!)"), python_forks) if forks else (C_LIMIT, SHELL_LIMIT, python_limits)
    found = {}
    for relative in project.files_in(PRODUCT):  # the project's list: never an editor's file or a cache
        path, name = os.path.join(project.ROOT, relative), os.path.basename(relative)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if name.endswith((".cpp", ".h")):
            places = [m.group(0) for m in c_rule.finditer(without_cpp_comments(text))]
        elif name.endswith(".py") or re.match(r"#!\s*\S*(/|env\s+)python", text):
            places = python_rule(text)
        elif is_shell_script(name, text):
            places = [m.group(0).strip() for m in shell_rule.finditer(text)]
        else:
            continue
        if places:
            found[relative] = places
    return found


def parent_of_a_sandboxed_lab(work):
    """The name of the process that started a lab run by the checker's sandbox."""
    lab = os.path.join(work, "parent_lab.sh")
    with open(lab, "w") as f:
        f.write('#!/bin/sh\necho "parent: $(cat /proc/$PPID/comm)"\n')
    os.chmod(lab, 0o755)
    os.environ["LAB_SANDBOX"] = "none"
    box = sandbox.Sandbox(lab)
    try:
        run = box.run([], 30, 1 << 16, 1 << 16)
    finally:
        box.close()
    return run.out.decode(errors="replace").strip() or run.err.decode(errors="replace").strip()


def parent_of_a_compile(work):
    """The name of the process that started a compile of the class grader's."""
    compiler = compile_sandbox.Compiler(("", []), "true")
    try:
        status, output, _ = compiler.run(["sh", "-c", 'echo "parent: $(cat /proc/$PPID/comm)"'], work)
    finally:
        getattr(compiler, "close", lambda: None)()  # (its engine, where it has one)
    return output.decode(errors="replace").strip()


def held_to(found, allowed, doing, otherwise, seen, seen_what):
    """The checks of one rule: each file found doing it is one of allowed (else otherwise says
    what it is not), and the search sees the files that must be found doing it (seen)."""
    checks = [("%s %s: it is %s" % (relative, doing, allowed.get(relative, otherwise)), relative in allowed, places)
              for relative, places in sorted(found.items())]
    checks.append(("%s (the search sees it)" % seen_what, all(f in found for f in seen), sorted(found)))
    return checks


def main(argv):
    if len(argv) != 1:
        print("engine_rule_test: usage: engine_rule_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = argv[0]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    checks = []
    setters = limit_setters()
    for relative, places in sorted(setters.items()):
        if relative in NOT_A_LAB:
            checks.append(("%s sets limits for what is no lab (%s)" % (relative, NOT_A_LAB[relative]), True, places))
            continue
        checks.append(("%s sets a lab's limits: it is %s" % (relative, ALLOWED.get(relative, "not the engine")),
                       relative in ALLOWED, places))
    checks.append(("the engine is found setting limits (the search sees it)", "engine/run.cpp" in setters,
                   sorted(setters)))
    checks.append(("at most 2 files set a lab's limits", len(set(setters) - set(NOT_A_LAB)) <= 2, sorted(setters)))
    mounters = limit_setters(mounts=True)
    for relative, places in sorted(mounters.items()):
        checks.append(("%s mounts for a lab: it is %s" % (relative, MOUNTERS.get(relative, "not the engine")),
                       relative in MOUNTERS and (relative.endswith(".cpp") or len(places) == 1), places))
    checks.append(("the engine is found mounting (the search sees it)", "engine/runner_child.cpp" in mounters,
                   sorted(mounters)))
    checks += held_to(limit_setters(builders=True), BUILDERS, "builds or probes a lab's sandbox",
                      "not the sandbox's module", [os.path.join("lab04", "checker", "sandbox.py"), "engine/runner_child.cpp"],
                      "the sandbox's module is found building")
    checks += held_to(limit_setters(wire=True), WIRE_WRITERS, "writes a job's fields",
                      "not the run engine's client: build an engine.Job", [os.path.join("lab04", "checker", "engine.py")],
                      "the run engine's client is found writing a job's fields")
    checks += held_to(limit_setters(asks=True), ASKERS, "reads LAB_SANDBOX",
                      "not the module of what the instructor asked (lab04/checker/isolation.py): ask it",
                      [os.path.join("lab04", "checker", "isolation.py")],
                      "the module of what the instructor asked is found reading LAB_SANDBOX")
    checks += held_to(limit_setters(chooses=True), CHOOSERS, "chooses a mode of isolation",
                      "not the isolation module (lab04/checker/isolation.py): pass it what was probed",
                      [os.path.join("lab04", "checker", "isolation.py")], "the isolation module is found choosing a mode")
    forkers = limit_setters(forks=True)
    for relative, places in sorted(forkers.items()):
        checks.append(("%s forks: %s" % (relative, FORKERS.get(relative, "not the engine, nor a process named as no lab")),
                       relative in FORKERS, places))
    checks.append(("the engine is found forking (the search sees it)",
                   "engine/run.cpp" in forkers and os.path.join("lab04", "grader", "whole_class.py") in forkers, sorted(forkers)))
    for relative in ENGINE_CALLERS:
        with open(os.path.join(project.ROOT, relative), encoding="utf-8") as f:
            code = without_cpp_comments(f.read())
        checks.append(("%s runs its labs through engine::run" % relative, "engine::run(" in code, ""))
    checks.append(("every script is read whatever its shebang: instructor/gradescope/run_autograder and "
                   "instructor/prairielearn/run_grader among them",
                   all(is_shell_script(n, open(os.path.join(project.ROOT, n)).read()) for n in (
                       os.path.join("instructor", "gradescope", "run_autograder"),
                       os.path.join("instructor", "prairielearn", "run_grader"))), ""))
    parent = parent_of_a_sandboxed_lab(work)
    checks.append(("a lab the checker's sandbox runs is started by the engine (lab04_runner)",
                   parent == "parent: lab04_runner", parent))
    parent = parent_of_a_compile(work)
    checks.append(("a compile of the class grader's is started by the engine (lab04_runner)",
                   parent == "parent: lab04_runner", parent))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
