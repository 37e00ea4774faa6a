#!/usr/bin/env python3
"""The similarity check (lab04/grader/similarity.py) on classes of students who each wrote STEPs 3 to 6
alone (honest_class.py), as the class grader weighs them, without grading:

- in five classes of 30 and one of 100, each with five disguised copies of one lab (renamed;
  split over temporaries; moved into a helper; reordered; a TODO(STEP n) comment on each
  copied line), no honest student is named, and every copy is named with its original or
  another copy;
- the answer is the same in any order of the labs, and in any split of them (as -j and
  shards give them): the same pairs, with the same values;
- a class of honest labs alone names no one; a class too small to tell what is rare says so;
- a lab of more code than a lab has (MAX_OWN tokens) is left out, and named.

The copied lab is one with lines of its own: three or more that at most a tenth of the class
(at least three labs) wrote in the spelled form. A lab whose every line many honest students
wrote too cannot be told from them by its code: its copies are not named, and naming them
would name those students too (docs/instructors.md).

usage: similarity_test.py
"""
import json
import random
import sys
import time

import checklist
import honest_class

from lab04.instructor import blanking
import project

from lab04.grader import similarity  # noqa: E402

CLASSES = [(30, 1), (30, 2), (30, 3), (30, 4), (30, 5), (100, 1)]  # (students, seed)


def template():
    lesson = honest_class.lesson()
    return lesson, similarity.template_keys([lesson, blanking.make_lab(lesson, blanking.DEFAULT_BLANKS)[0]])


def with_copies(students, seed, lesson, keys):
    """(labs {name: text}, the copied lab's name, the copies' names) of a class with five copies."""
    labs = honest_class.honest_class(students, seed)
    units = {name: similarity.units_of(similarity.own_code(text, keys), keys) for name, text in labs.items()}
    held = {}
    for items in units.values():
        for unit in set().union(*items.values()) if items else ():
            if unit.startswith("p "):
                held[unit] = held.get(unit, 0) + 1
    few = max(3, students // 10)
    own = sorted(name for name, items in units.items()
                 if len({u for us in items.values() for u in us if u.startswith("p ") and held[u] <= few}) >= 3)
    original = random.Random(seed).choice(own)
    copies = {}
    for disguise, text in honest_class.disguised(labs[original], lesson).items():
        if disguise != "all at once":
            copies["copy_" + disguise.split()[0].lower().strip("(")] = text
    labs.update(copies)
    return labs, original, set(copies)


def weighed(labs, keys, order=None):
    own = [(name, similarity.own_code(labs[name], keys)) for name in (order or list(labs))]
    return similarity.look_alike(own, (), keys)


def as_json(found):
    return json.dumps(found, sort_keys=True)


def main(argv):
    if argv:
        print("similarity_test: usage: similarity_test.py (no arguments)", file=sys.stderr)
        return 2
    lesson, keys = template()
    checks = []
    for students, seed in CLASSES:
        labs, original, copies = with_copies(students, seed, lesson, keys)
        found = weighed(labs, keys)
        named = {name for p in found["pairs"] for name in (p["a"], p["b"])}
        group = copies | {original}
        honest = sorted(named - group)
        missed = sorted(c for c in copies if not any(c in (p["a"], p["b"]) and {p["a"], p["b"]} <= group
                                                     for p in found["pairs"]))
        checks.append(("a class of %d honest students (draw %d) and five disguised copies of %s: no honest student "
                       "named, every copy named with %s or another copy" % (students, seed, original, original),
                       not honest and not missed, "honest students named: %s; copies not named: %s" % (honest, missed)))
        if (students, seed) == CLASSES[0]:
            alone = weighed(honest_class.honest_class(students, seed), keys)
            checks.append(("the same class without the copies names no one", alone["checked"] and not alone["pairs"],
                           alone["pairs"][:3]))
            names = list(labs)
            shuffled = random.Random(7).sample(names, len(names))
            answers = {as_json(weighed(labs, keys, order)) for order in (names, names[::-1], shuffled)}
            checks.append(("the same pairs with the same values in any order of the labs (three orders)",
                           len(answers) == 1, "%d different answers" % len(answers)))
            pair = found["pairs"][0] if found["pairs"] else {}
            shown = pair.get("shared", [{}])[0]
            checks.append(("a pair says what it shares: each shared line in both labs, with its number and text, and "
                           "how many other labs wrote it", {"a_line", "b_line", "a_text", "b_text", "others"} <= set(shown)
                           and shown["a_text"] in labs[pair["a"]].split("\n")[shown["a_line"] - 1], pair))

    few = weighed({name: text for name, text in list(labs.items())[:6]}, keys)
    checks.append(("six labs: not compared, with the reason (too few to tell what is rare)",
                   not few["checked"] and "too few" in few["why"] and not few["pairs"], few))
    big = dict(labs)
    big["flood"] = lesson.replace("int main(", "int unused_%d() { return 0; }\nint main(" % 0) + "\n".join(
        "int filler_%d(int x) { return (x + %d) * (x - %d); }" % (i, i, i) for i in range(20000))
    started = time.monotonic()
    found = weighed(big, keys)
    seconds = time.monotonic() - started
    checks.append(("a lab of 20,000 lines of its own is left out of the comparison and named, the class weighed all "
                   "the same (%.1f s)" % seconds, found["checked"] and found["left_out"] == ["flood"],
                   found.get("left_out")))
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
