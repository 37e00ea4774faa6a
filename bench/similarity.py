#!/usr/bin/env python3
"""bench/similarity.py: what the class summary's similarity check names, and what it costs.

  bench/similarity.py [CLASSES] [--into DOC]

For classes of 30, 60 and 100 students who each wrote STEPs 3 to 6 alone, in the spellings
students use (tests/honest_class.py, CLASSES draws of each size, default 10): how many honest
students the check names in the class alone (its false positives), and, with five disguised
copies of one lab added (renamed; split over temporaries; moved into a helper; reordered; a
TODO(STEP n) comment on each copied line), how many honest students it names then, and how
many copies it names with their original or another copy. The copied lab is one with three
lines or more of its own (written by at most a tenth of the class); copies of a lab whose every
line many students wrote cannot be told from honest work, and are not counted. Then the time of
a class of 1,000 labs: each lab's own code (in the grader's workers) and the comparison (once).
Prints a Markdown section; with --into, also puts it into DOC between its markers
(<!-- similarity --> and <!-- end of similarity -->), or at its end. Exit status 0; 2 on bad
arguments.
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.dirname(HERE)]
import honest_class  # noqa: E402
import similarity_test  # noqa: E402
from lab04.grader import similarity  # noqa: E402

SIZES = (30, 60, 100)
START, END = "<!-- similarity -->", "<!-- end of similarity -->"


def usage(why):
    print("bench/similarity.py: %s (usage: bench/similarity.py [CLASSES] [--into DOC], CLASSES a whole number "
          "from 1 to 100)" % why, file=sys.stderr)
    return 2


def measured(classes, lesson, keys):
    rows = []
    for students in SIZES:
        alone = named = found = copies = 0
        for seed in range(1, classes + 1):
            labs = honest_class.honest_class(students, seed)
            result = similarity_test.weighed(labs, keys)
            alone += len({n for p in result["pairs"] for n in (p["a"], p["b"])})
            labs, original, made = similarity_test.with_copies(students, seed, lesson, keys)
            result = similarity_test.weighed(labs, keys)
            group = made | {original}
            named += len({n for p in result["pairs"] for n in (p["a"], p["b"])} - group)
            found += sum(1 for c in made if any(c in (p["a"], p["b"]) and {p["a"], p["b"]} <= group
                                                for p in result["pairs"]))
            copies += len(made)
        rows.append("| %d | %d | %d | %d | %d of %d |" % (students, classes, alone, named, found, copies))
    return rows


def timed(lesson, keys):
    labs, _, _ = similarity_test.with_copies(1000, 1, lesson, keys)
    started = time.monotonic()
    own = [(name, similarity.own_code(text, keys)) for name, text in labs.items()]
    own_seconds = time.monotonic() - started
    started = time.monotonic()
    similarity.look_alike(own, (), keys)
    return len(labs), own_seconds, time.monotonic() - started


def main(argv):
    into = None
    if "--into" in argv:
        at = argv.index("--into")
        if at + 1 >= len(argv):
            return usage("--into takes a file")
        into, argv = argv[at + 1], argv[:at] + argv[at + 2:]
        if not os.path.isfile(into):
            return usage("--into %r is not a file" % into)
    if len(argv) > 1 or (argv and not re.fullmatch(r"[1-9]\d?|100", argv[0])):
        return usage("bad arguments %r" % " ".join(argv))
    classes = int(argv[0]) if argv else 10
    lesson, keys = similarity_test.template()
    rows = measured(classes, lesson, keys)
    n, own_seconds, compare_seconds = timed(lesson, keys)
    text = "\n".join([
        START, "", "## Code that looks alike", "",
        "Written by `bench/similarity.py %d` (in `bench/run`): classes of students who each wrote STEPs 3 to 6 "
        "alone (`tests/honest_class.py`), each draw once alone and once with five disguised copies of one lab with "
        "lines of its own." % classes, "",
        "| students | classes | honest students named, the class alone | honest students named, with the copies "
        "| copies named with their original or another copy |",
        "| ---: | ---: | ---: | ---: | ---: |"] + rows + [
        "",
        "A class of %d labs: each lab's own code %.1f s (in the grader's workers), the comparison %.1f s (once)."
        % (n, own_seconds, compare_seconds), "", END])
    print(text)
    if into:
        with open(into) as f:
            doc = f.read()
        if START in doc and END in doc:
            doc = doc[:doc.index(START)] + text + doc[doc.index(END) + len(END):]
        else:
            doc = doc.rstrip("\n") + "\n\n" + text + "\n"
        with open(into, "w") as f:
            f.write(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
