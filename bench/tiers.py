#!/usr/bin/env python3
"""bench/tiers.py: how long each tier of the test suite takes on this machine, side by side in
one run, written as docs/performance.md's section "The test suite, tier by tier".

  bench/tiers.py DOC            runs each tier in turn in build/ (configured and built), times
                                it from outside (wall time, ctest's start to its end), prints the
                                section and writes it to DOC in place of the one there (before
                                "## What each row measures" where it had none); exit 1 when a
                                tier failed (its failures are said in the section)
  bench/tiers.py --ci LOG DOC   the whole CI's time where it ran: reads the line `bash .ci/run`
                                prints last when it passes (its seconds, cores, place, system,
                                commit and date) from LOG (a run's output, as fresh-machine shows
                                it: the instructors' container, a chroot), and writes it as a row
                                of DOC's section "The whole CI, where it ran", in place of the row
                                of the same place and system
  bench/tiers.py --kept DOC     prints DOC's two sections as they are (bench/run's whole run keeps them)

The tiers: unit (`ctest --test-dir build -L unit`: the rules, in one process each), the
student's run (`ctest --preset default`) and the longer checks (`ctest --preset mutation`, which
holds the unit tier too). Their targets are issue 76's: the unit tier under a minute on two cores,
the longer checks with room in the instructors' workflow (60 minutes a Debian, the builds and
the sanitizer suite besides).
"""
import datetime
import os
import re
import subprocess
import sys
import time

TITLE = "## The test suite, tier by tier"
CI_TITLE = "## The whole CI, where it ran"
CI_TARGET = 30 * 60  # issue 76's: the workflow gives each Debian 60 minutes
CI_LINE = re.compile(r"ci: \.ci/run passed in (\d+) s; cores: (\d+); where: ([^;]+); system: ([^;]+); "
                     r"commit: ([0-9a-f]{4,40}|unknown); date: (\d{4}-\d\d-\d\d)\s*$")
CI_HEAD = ["| where | system | cores | commit | date | wall time | target | met |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
BEFORE = "## What each row measures"
TIERS = [  # (name, command, target in seconds or None, what the target is)
    ("unit: the rules, each in one process", ["ctest", "--test-dir", "build", "-L", "unit"], 60, "< 60 s"),
    ("the student's run", ["ctest", "--preset", "default"], None, ""),
    ("the longer checks (the mutation suite; the unit tier among them)", ["ctest", "--preset", "mutation"], 25 * 60,
     "< 25 min (the whole CI in 30)"),
]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ratio(r):
    """A ratio as a reader says it: two significant digits under 10 (0.78, 2.5), whole above (211)."""
    return "%.2g" % r if r < 10 else "%.0f" % r


def section_of(doc, title=TITLE):
    """(the lines before DOC's section, its lines, the lines after it); its lines are [] where
    it has none."""
    lines = doc.splitlines()
    if title not in lines:
        return lines, [], []
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[:start], lines[start:end], lines[end:]


def counted(output):
    """(tests, failed, skipped) as ctest's summary says them."""
    total = re.search(r"tests passed, (\d+) tests? failed out of (\d+)", output)
    skipped = len(re.findall(r"\*\*\*Skipped|Not Run \(Disabled\)| Skipped ", output))
    if not total:
        return 0, 0, skipped
    return int(total.group(2)), int(total.group(1)), skipped


def timed(command):
    begin = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return time.monotonic() - begin, done.returncode, done.stdout + done.stderr


def minutes(seconds):
    return "%d min %02d s" % divmod(round(seconds), 60) if seconds >= 60 else "%.1f s" % seconds


def measure():
    rows, failed_any, first = [], False, None
    for name, command, target, said in TIERS:
        print("bench/tiers.py: %s: %s" % (name, " ".join(command)), file=sys.stderr)
        seconds, status, output = timed(command)
        tests, failed, skipped = counted(output)
        failed_any |= status != 0
        first = first or seconds
        met = "" if target is None else ("yes" if seconds < target else "**no**")
        notes = ["%d failed" % failed] if status else []
        notes += ["%d skipped" % skipped] if skipped else []
        rows.append("| %s | `%s` | %d%s | %s | %s | %s | %s |" % (
            name, " ".join(command), tests, " (%s)" % ", ".join(notes) if notes else "", minutes(seconds),
            "1x" if seconds == first else "%sx the unit tier" % ratio(seconds / first), said, met))
    cores = os.cpu_count()
    lines = [TITLE, "", "`bench/tiers.py` (`bench/run --tiers`), %s, %d cores: each tier run in turn in `build/`, "
             "timed from outside. A test of two tiers runs in each." % (datetime.date.today().isoformat(), cores), "",
             "| tier | command | tests | wall time | compared | target | met |",
             "| --- | --- | --- | --- | --- | --- | --- |"] + rows + [""]
    return lines, failed_any


def ci_row(log_text):
    """The row of the whole CI's run that LOG's last passing line says, or None."""
    found = [CI_LINE.search(line) for line in log_text.splitlines()]
    found = [m for m in found if m]
    if not found:
        return None
    seconds, cores, where, system, commit, date = found[-1].groups()
    seconds = int(seconds)
    return "| %s | %s | %s | %s | %s | %s | < %d min | %s |" % (
        where.strip(), system.strip(), cores, commit, date, minutes(seconds), CI_TARGET // 60,
        "yes" if seconds < CI_TARGET else "**no**")


def ci_section(doc, row):
    """DOC's CI section with ROW in place of the row of its place and system (added after the others)."""
    old = [line for line in section_of(doc, CI_TITLE)[1] if line.startswith("| ") and line not in CI_HEAD]
    key = row.split(" | ")[:2]
    rows = [line for line in old if line.split(" | ")[:2] != key] + [row]
    return [CI_TITLE, "", "`bash .ci/run` says, as its last line when it passes, how long it took, on how many cores, "
            "where (this machine, a chroot, a container: the instructors' workflow runs it in one with Docker's "
            "default capabilities), on which system and commit; `bench/run --ci LOG` writes that line of a run's "
            "output here, a row per place and system.", ""] + CI_HEAD + rows + [""]


def write(doc_path, section, title=TITLE):
    doc = open(doc_path).read() if os.path.isfile(doc_path) else ""
    before, old, after = section_of(doc, title)
    if not old and BEFORE in before:
        i = before.index(BEFORE)
        before, after = before[:i], before[i:]
    text = "\n".join(before + section + after) + "\n"
    with open(doc_path + ".new", "w") as f:
        f.write(text)
    os.replace(doc_path + ".new", doc_path)


def main(argv):
    if len(argv) == 2 and argv[0] == "--kept":
        if not os.path.isfile(argv[1]):
            print("bench/tiers.py: --kept takes the document whose section to print, and %s is not a file" % argv[1],
                  file=sys.stderr)
            return 2
        doc = open(argv[1]).read()
        for title in (TITLE, CI_TITLE):
            kept = section_of(doc, title)[1]
            if kept:
                print("\n".join(kept))
        return 0
    if len(argv) == 3 and argv[0] == "--ci":
        log, doc_path = argv[1:]
        if not os.path.isfile(log) or not os.path.isfile(doc_path):
            print("bench/tiers.py: --ci takes a log of bash .ci/run's output and the document to write, and %s is "
                  "not a file" % (log if not os.path.isfile(log) else doc_path), file=sys.stderr)
            return 2
        row = ci_row(open(log, errors="replace").read())
        if row is None:
            print("bench/tiers.py: %s has no line of a passing .ci/run (\"ci: .ci/run passed in N s; cores: ...\"): "
                  "give the output of a run that passed" % log, file=sys.stderr)
            return 2
        section = ci_section(open(doc_path).read(), row)
        print("\n".join(section))
        write(doc_path, section, CI_TITLE)
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print("bench/tiers.py: expected DOC (docs/performance.md), --ci LOG DOC or --kept DOC, got: %s"
              % (" ".join(argv) or "nothing"), file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(ROOT, "build", "CTestTestfile.cmake")):
        print("bench/tiers.py: build/ has no tests: configure and build it first (cmake --preset default && cmake "
              "--build --preset default)", file=sys.stderr)
        return 2
    section, failed = measure()
    print("\n".join(section))
    write(argv[0], section)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
