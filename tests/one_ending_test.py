#!/usr/bin/env python3
"""How a run ended has one set of names, from the engine to the gradebook: engine/run.h's
Stopped (kTime, kSize, kStart, kCancelled), whose names engine/run.cpp's stopped_name() puts on
the runner's wire, are lab04/checker/engine.py's Ending of the same names; running.ran() gives a
run's ending as an Ending; lab04/grader/one_student.py's status of a row comes from it by a table,
whose statuses are lab04/grader/status.py's. No module defines an enum or a constant of endings of
its own.

Then for real: lab04_runner (LAB_RUNNER, else build/lab04_runner) runs programs that overrun
their time, flood their output, die of a signal, print nothing, cannot be executed, and print
a line and exit; each comes back with its Ending, and a class's row with its status.

usage: one_ending_test.py
"""
import ast
import os
import re
import sys

import checklist
import project


from lab04.checker import compare, engine, running  # noqa: E402
from lab04.grader import one_student  # noqa: E402
from lab04.grader.status import Status  # noqa: E402

ENDING_WORDS = {"timed out", "too much output", "crashed", "printed nothing", "time", "size", "start", "cancelled",
                "silent"}
# Of those, the ones no other constant holds ("time" is an option's name too).
ONLY_ENDINGS = {"timed out", "too much output", "crashed", "printed nothing", "cancelled", "silent"}


def source(relative):
    with open(os.path.join(project.ROOT, relative), encoding="utf-8") as f:
        return f.read()


def structure():
    checks = []
    header, code = source("engine/run.h"), source("engine/run.cpp")
    enum = re.search(r"enum class Stopped \{([^}]*)\}", header)
    members = [m.strip() for m in enum.group(1).split(",")] if enum else []
    names = dict(re.findall(r"case Stopped::(k\w+): return \"([^\"]*)\";", code))
    checks.append(("run.h's Stopped has a name in stopped_name() for each member", enum is not None and
                   set(members) == set(names), (members, names)))
    wire = {k: v for k, v in names.items() if k != "kNo"}
    python = {"k" + e.name.capitalize(): e.value for e in engine.STOPPED_BY_ENGINE}
    checks.append(("each ending the engine gives has the same name in C++ (kTime) and Python (TIME) and the same "
                   "word on the wire", wire == python, (wire, python)))
    checks.append(("the engine's endings are Endings, and the rest of the Endings are judged from the run's end",
                   set(engine.STOPPED_BY_ENGINE) <= set(engine.Ending) and
                   set(engine.Ending) - set(engine.STOPPED_BY_ENGINE) == {engine.Ending.CRASHED, engine.Ending.SILENT},
                   list(engine.Ending)))
    table = dict(one_student.STATUS_OF_ENDING)
    lab_made = set(engine.Ending) - {engine.Ending.START, engine.Ending.CANCELLED}
    checks.append(("every ending a lab can bring on has a row's status, a status of lab04/grader/status.py",
                   set(table) == lab_made and all(isinstance(s, Status) for s in table.values()), table))
    # No other enum or module constant of endings: an Enum class, or a tuple or a name bound to
    # their words, anywhere in lab04/, checker/, grader/ or instructor/ but engine.Ending and status.Status.
    others = []
    for relative in project.files_in(("lab04", "checker", "grader", "instructor")):
        if not relative.endswith(".py"):
            continue
        tree = ast.parse(re.sub(r"@\w+@", "0", source(relative)))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(getattr(b, "attr", getattr(b, "id", "")).endswith("Enum")
                                                      for b in node.bases):
                words = {n.value.value for n in node.body if isinstance(n, ast.Assign) and
                         isinstance(n.value, ast.Constant)}
                if words & ENDING_WORDS and (relative, node.name) not in (("lab04/checker/engine.py", "Ending"),
                                                                           ("lab04/grader/status.py", "Status")):
                    others.append("%s: class %s" % (relative, node.name))
            elif isinstance(node, ast.Assign):
                constants = {n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant)}
                if constants & ONLY_ENDINGS:
                    others.append("%s: %s" % (relative, ast.unparse(node)[:80]))
    checks.append(("no module but engine.py defines the endings (nor status.py the statuses)", not others, others))
    return checks


def live():
    program = engine.program()
    if not program:
        return [("lab04_runner is built (LAB_RUNNER or build/lab04_runner)", False, None)]
    runner = engine.Runner([program, "-"], engine.minimal_environment())
    home = os.path.abspath("one_ending_home")
    os.makedirs(home, exist_ok=True)
    shell = ["/bin/sh", "-c"]
    runs = {  # (the job's program, its time limit in ms): its Ending, its row's status
        "overruns its time": ((shell + ["echo STEP 1; exec sleep 30"], 300), engine.Ending.TIME, Status.TIMED_OUT),
        "floods its output": ((shell + ["exec yes STEP"], 20000), engine.Ending.SIZE, Status.TOO_MUCH_OUTPUT),
        "dies of a signal": ((shell + ["echo STEP 1; kill -SEGV $$"], 20000), engine.Ending.CRASHED, Status.CRASHED),
        "prints nothing": ((shell + ["exit 0"], 20000), engine.Ending.SILENT, Status.FAILED_TO_RUN),
        "cannot be executed": (([os.path.join(home, "no-such-program")], 20000), engine.Ending.START, None),
        "prints a line and exits": ((shell + ["echo STEP 1"], 20000), None, Status.GRADED),
    }
    checks = []
    try:
        for what, ((command, limit), ending, status) in runs.items():
            run = runner.ask(engine.Job.of(command=command, home=home, wall_ms=limit, max_out=4096, max_err=4096))
            if ending == engine.Ending.START:
                got = run.stopped
            else:
                got = running.ran(["lab"], run, limit / 1000, max_out=4096, max_err=4096).ended
            checks.append(("a program that %s ends %s" % (what, ending), got is ending if ending else got is None,
                           repr(got)))
            if status is not None:
                row = one_student.status_of([compare.CaseResult.of("x", ended=got), compare.CaseResult.of("y")])
                checks.append(("its row's status is %r" % str(status), row is status, repr(row)))
    finally:
        runner.stop()
    return checks


def main(argv):
    if argv:
        print("one_ending_test: usage: one_ending_test.py", file=sys.stderr)
        return 2
    return checklist.report(structure() + live())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
