#!/usr/bin/env python3
"""bench/timer.py: what bench/run asks of hyperfine, where Debian has no hyperfine (testing, at
times): each command timed from outside (wall clock), its median written as hyperfine writes it
to --export-json ({"results": [{"command": NAME, "median": SECONDS, "times": [...]}]}).

  bench/timer.py [--style none] [-N] [-i] [--warmup N] [--runs N] [--export-json FILE]
                 [--prepare CMD ...] [-n NAME] CMD [-n NAME] CMD ...

As hyperfine: a command runs through `sh -c`, or split into words with -N; one --prepare runs
before every run of every command, several go to the commands in turn; a command that fails
ends the timing with exit 1 unless -i. Bad options: one line, exit 2.
"""
import json
import shlex
import statistics
import subprocess
import sys
import time

USAGE = "expected [--style none] [-N] [-i] [--warmup N] [--runs N] [--export-json FILE] [--prepare CMD] [-n NAME] CMD ..."


def parse(argv):
    opts = {"shell": True, "ignore": False, "warmup": 0, "runs": 10, "json": None}
    prepares, names, commands, name = [], [], [], None
    i = 0
    while i < len(argv):
        a = argv[i]
        takes = a in ("--style", "--warmup", "--runs", "--export-json", "--prepare", "-n")
        if takes and i + 1 >= len(argv):
            raise ValueError("%s needs a value" % a)
        value = argv[i + 1] if takes else None
        if a == "-N":
            opts["shell"] = False
        elif a == "-i":
            opts["ignore"] = True
        elif a == "--style":
            pass
        elif a in ("--warmup", "--runs"):
            if not value.isdigit() or (a == "--runs" and int(value) == 0):
                raise ValueError("%s takes a whole number, got %r" % (a, value))
            opts[a[2:]] = int(value)
        elif a == "--export-json":
            opts["json"] = value
        elif a == "--prepare":
            prepares.append(value)
        elif a == "-n":
            name = value
        elif a.startswith("-"):
            raise ValueError("unknown option %s" % a)
        else:
            commands.append(a)
            names.append(name if name is not None else a)
            name = None
        i += 2 if takes else 1
    if not commands:
        raise ValueError("no command to time")
    if len(prepares) not in (0, 1, len(commands)):
        raise ValueError("%d --prepare for %d commands" % (len(prepares), len(commands)))
    return opts, prepares, names, commands


def run(command, shell):
    args = ["sh", "-c", command] if shell else shlex.split(command)
    return subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def main(argv):
    try:
        opts, prepares, names, commands = parse(argv)
    except ValueError as e:
        print("bench/timer.py: %s (%s)" % (e, USAGE), file=sys.stderr)
        return 2
    results = []
    for k, (name, command) in enumerate(zip(names, commands)):
        prepare = prepares[0] if len(prepares) == 1 else prepares[k] if prepares else None
        times = []
        for n in range(opts["warmup"] + opts["runs"]):
            if prepare is not None:
                subprocess.run(["sh", "-c", prepare], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            start = time.perf_counter()
            code = run(command, opts["shell"])
            seconds = time.perf_counter() - start
            if code != 0 and not opts["ignore"]:
                print("bench/timer.py: %r exited %d" % (command, code), file=sys.stderr)
                return 1
            if n >= opts["warmup"]:
                times.append(seconds)
        results.append({"command": name, "median": statistics.median(times), "times": times})
    if opts["json"]:
        with open(opts["json"], "w") as f:
            json.dump({"results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
