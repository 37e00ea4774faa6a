"""bench/run's helpers, on made-up inputs (the timings themselves are bench/run's, never a
test's): bench/systems.py puts one system's part of docs/performance.md in place of its old
one and keeps the other systems' parts and the rest of the document, in a whole run's new
document too; bench/timer.py, where Debian has no hyperfine, times each command after its own
--prepare and writes hyperfine's medians; bench/tiers.py puts the test suite's tiers in their
section of docs/performance.md, in place of the last, and reads ctest's summary. Bad input to each: one line on stderr, nothing on
stdout, exit 2, the document untouched.

usage: bench_parts_test.py WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import checklist
import project

SYSTEMS = os.path.join(project.ROOT, "bench", "systems.py")
TIERS = os.path.join(project.ROOT, "bench", "tiers.py")
TIMER = os.path.join(project.ROOT, "bench", "timer.py")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run(*words):
    return subprocess.run([sys.executable] + list(words), capture_output=True, text=True)


def systems_checks(work):
    checks = []
    doc = os.path.join(work, "performance.md")
    old_a = write(os.path.join(work, "a.md"), "### A, old\n\n| a | 1 |\n")
    part_b = write(os.path.join(work, "b.md"), "### B\n\n| b | 2 |\n")
    write(doc, "# Performance\n\nthe table\n\n## Notes\n\nthe notes\n")
    done = [run(SYSTEMS, doc, "A", old_a), run(SYSTEMS, doc, "B", part_b)]
    new_a = write(os.path.join(work, "a2.md"), "### A, new\n\n| a | 3 |\n")
    done.append(run(SYSTEMS, doc, "A", new_a))
    text = open(doc).read()
    checks.append(("a system's part replaces its own old part and keeps the other system's and the document",
                   all(d.returncode == 0 for d in done) and "| a | 3 |" in text and "| a | 1 |" not in text
                   and "| b | 2 |" in text and text.startswith("# Performance\n\nthe table\n")
                   and "the notes" in text and text.count("## The watch on each system") == 1
                   and text.index("### A, new") < text.index("### B"), text))
    body = write(os.path.join(work, "body.md"),
                 "# Performance\n\nnew table\n\n<!-- the watch on each system -->\n\n## Notes\n")
    whole = run(SYSTEMS, doc, "B", write(os.path.join(work, "b2.md"), "### B, new\n\n| b | 4 |\n"), body)
    text = open(doc).read()
    checks.append(("a whole run's document takes the section where its place is, with every system's part",
                   whole.returncode == 0 and "new table" in text and "the table" not in text
                   and "| a | 3 |" in text and "| b | 4 |" in text and "<!-- the watch on each system -->" not in text
                   and text.index("## The watch on each system") < text.index("## Notes"), text))
    before = open(doc).read()
    bad = [run(SYSTEMS, doc, "A", os.path.join(work, "missing.md")), run(SYSTEMS, doc), run(SYSTEMS)]
    checks.append(("bad input to systems.py: one line on stderr, nothing on stdout, exit 2, the document untouched",
                   all(b.returncode == 2 and not b.stdout and len(b.stderr.strip().splitlines()) == 1 for b in bad)
                   and open(doc).read() == before, [(b.returncode, b.stdout, b.stderr) for b in bad]))
    return checks


def timer_checks(work):
    checks = []
    out = os.path.join(work, "timed.json")
    marker = os.path.join(work, "prepared")
    done = run(TIMER, "--style", "none", "--runs", "3", "--export-json", out,
               "-n", "slow", "--prepare", "touch %s" % marker, "test -f %s && rm %s && sleep 0.2" % (marker, marker),
               "-n", "quick", "--prepare", "true", "test ! -f %s && sleep 0.05" % marker)
    results = json.load(open(out))["results"] if done.returncode == 0 and os.path.isfile(out) else []
    medians = {r["command"]: r["median"] for r in results}
    checks.append(("timer.py runs each command after its own --prepare and writes its median under its name",
                   done.returncode == 0 and set(medians) == {"slow", "quick"} and 0.2 <= medians["slow"] < 2
                   and 0.05 <= medians["quick"] < medians["slow"], (done.returncode, done.stderr, medians)))
    failed = run(TIMER, "--runs", "1", "false")
    ignored = run(TIMER, "-i", "--runs", "1", "false")
    checks.append(("a failing command ends the timing with exit 1, unless -i",
                   failed.returncode == 1 and ignored.returncode == 0, (failed.returncode, ignored.returncode)))
    bad = [run(TIMER, "--runs", "0", "true"), run(TIMER, "--frobnicate", "true"), run(TIMER),
           run(TIMER, "--prepare", "true", "--prepare", "true", "a", "b", "c")]
    checks.append(("bad input to timer.py: one line on stderr, nothing on stdout, exit 2",
                   all(b.returncode == 2 and not b.stdout and len(b.stderr.strip().splitlines()) == 1 for b in bad),
                   [(b.returncode, b.stdout, b.stderr) for b in bad]))
    return checks


# ctest's summary lines, as ctest 3.25 prints them
CTEST_OUTPUT = """      Start  1: a
1/3 Test  #1: a ....   Passed    0.10 sec
2/3 Test  #2: b ....***Skipped   0.01 sec
3/3 Test  #3: c ....***Failed    0.20 sec

67% tests passed, 1 tests failed out of 3
"""


def tiers_checks(work):
    sys.path.insert(0, os.path.join(project.ROOT, "bench"))
    import tiers
    checks = []
    section = [tiers.TITLE, "", "new tiers", ""]
    doc = write(os.path.join(work, "tiers.md"), "# Performance\n\n| a table |\n\n%s\n\n## What each row measures\n\n"
                "notes\n" % tiers.TITLE.replace("tier by tier", "x"))
    tiers.write(doc, section)
    text = open(doc).read()
    checks.append(("a document without the tiers' section gets it before what each row measures, the rest kept",
                   text == "# Performance\n\n| a table |\n\n%s\n\n%s\n\nnew tiers\n\n## What each row measures\n\n"
                   "notes\n" % (tiers.TITLE.replace("tier by tier", "x"), tiers.TITLE), text))
    tiers.write(doc, [tiers.TITLE, "", "newer tiers", ""])
    text = open(doc).read()
    checks.append(("the section is replaced in place by the next run's, once", text.count(tiers.TITLE + "\n") == 1
                   and "newer tiers" in text and "new tiers\n" not in text and text.endswith("notes\n"), text))
    kept = run(TIERS, "--kept", doc)
    checks.append(("--kept prints the section as the document has it (a whole run of bench/run keeps it)",
                   kept.returncode == 0 and kept.stdout == "%s\n\nnewer tiers\n\n" % tiers.TITLE, kept))
    checks.append(("ctest's summary is read: 3 tests, 1 failed, 1 skipped", tiers.counted(CTEST_OUTPUT) == (3, 1, 1),
                   tiers.counted(CTEST_OUTPUT)))
    checks += ci_checks(work, tiers, doc)
    before = open(doc).read()
    log = write(os.path.join(work, "ci.log"), "ci: step\nci: .ci/run failed\n")
    for words in ([], ["--kept"], ["--kept", os.path.join(work, "none.md")], ["-x", doc], [doc, doc], ["--ci", doc],
                  ["--ci", os.path.join(work, "none.log"), doc], ["--ci", log, doc], ["--ci", log]):
        got = run(TIERS, *words)
        checks.append(("bad input to tiers.py (%s): one line on stderr, nothing on stdout, exit 2, the document "
                       "untouched" % (" ".join(words) or "nothing"), got.returncode == 2 and not got.stdout
                       and len(got.stderr.strip().splitlines()) == 1 and open(doc).read() == before, got))
    return checks


def ci_checks(work, tiers, doc):
    """bench/run --ci LOG: .ci/run's last line, as .ci/run prints it, read into a row of its place."""
    checks = []
    with open(os.path.join(project.ROOT, ".ci", "run")) as f:
        last_line = f.read().split("# Its last line")[1].split("\n", 1)[1]
    said = subprocess.run(["bash", "-euo", "pipefail", "-c", "started=$SECONDS\n" + last_line], cwd=project.ROOT,
                          capture_output=True, text=True)
    checks.append((".ci/run's last line is one bench/run --ci reads (seconds, cores, where, system, commit, date)",
                   said.returncode == 0 and tiers.CI_LINE.search(said.stdout.strip()) is not None, said))
    line = "ci: .ci/run passed in %d s; cores: 2; where: %s; system: Debian GNU/Linux 12 (bookworm); commit: " \
        "abc1234; date: 2026-12-08"
    container = "a container, Docker's default capabilities"
    log = write(os.path.join(work, "container.log"), "00:01:02 ci: test: ctest\n00:20:00 %s\n00:20:01 %s\n" % (
        line % (2000, container), line % (1425, container)))
    got = run(TIERS, "--ci", log, doc)
    text = open(doc).read()
    row = [r for r in text.splitlines() if r.startswith("| " + container)]
    checks.append(("a log's last passing line is written as its place's row: 23 min 45 s, under 30 min, the tiers "
                   "kept", got.returncode == 0 and len(row) == 1 and "| 23 min 45 s | < 30 min | yes |" in row[0]
                   and "abc1234" in row[0] and "newer tiers" in text, (got, text)))
    write(os.path.join(work, "slow.log"), line % (1900, container) + "\n")
    run(TIERS, "--ci", os.path.join(work, "slow.log"), doc)
    write(os.path.join(work, "chroot.log"), line % (1500, "a chroot") + "\n")
    run(TIERS, "--ci", os.path.join(work, "chroot.log"), doc)
    text = open(doc).read()
    rows = [r for r in text.splitlines() if "| Debian GNU/Linux 12" in r]
    checks.append(("a new run of a place replaces its row (31 min 40 s, over its target: no), another place's is "
                   "added", len(rows) == 2 and "31 min 40 s" in rows[0] and "**no**" in rows[0]
                   and rows[1].startswith("| a chroot |") and text.count(tiers.CI_TITLE + "\n") == 1, text))
    kept = run(TIERS, "--kept", doc)
    checks.append(("--kept prints the CI's section after the tiers'", kept.returncode == 0 and
                   0 <= kept.stdout.find(tiers.TITLE) < kept.stdout.find(tiers.CI_TITLE) and "a chroot" in kept.stdout,
                   kept))
    return checks


def main(argv):
    if len(argv) != 1:
        print("bench_parts_test: usage: bench_parts_test.py WORK_DIR", file=sys.stderr)
        return 2
    work = argv[0]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return checklist.report(systems_checks(work) + timer_checks(work) + tiers_checks(work))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
