#!/usr/bin/env python3
"""The reference gives the same tensors when several threads ask for them at once.

usage: reference_threads_test.py

The checker's reference (reference_attention.py) seeds torch's one random generator and draws
from it; the tests and tools that check labs two at a time share one reference in threads. This
test asks from 4 threads at once for the tensors of 24 cases (the lesson's, several heads, and
known mistakes, which are never cached), each thread in its own order, and then once more from
one thread with the reference's cache emptied: every tensor must be equal, bit for bit.
"""
import random
import sys
from concurrent.futures import ThreadPoolExecutor

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)

from lab04.checker import reference_attention
from lab04.checker.mistakes import MISTAKES

ASKS = [(seed, tokens, embed, head, heads, mistake)
        for seed, tokens, embed, head in [(3, 4, 6, 6), (11, 20, 6, 9), (5, 7, 8, 4), (2, 33, 5, 5)]
        for heads, mistake in [(1, None), (2, None), (1, MISTAKES[0]), (1, MISTAKES[-1]),
                               (3, None), (1, MISTAKES[len(MISTAKES) // 2])]]


def tensors_of(ask):
    seed, tokens, embed, head, heads, mistake = ask
    return [reference_attention.attention(seed, tokens, embed, head, mistake=mistake, heads=heads,
                                           of_head=h) for h in range(heads)]


def name(ask):
    seed, tokens, embed, head, heads, mistake = ask
    return "%d,%d,%d,%d heads=%d%s" % (seed, tokens, embed, head, heads,
                                       " with " + mistake["id"] if mistake else "")


def asked_in_threads(rounds=3):
    """Each round: 4 threads, each asking for every case in an order of its own."""
    answers = []
    for round_ in range(rounds):
        reference_attention._LESSON.clear()
        orders = [random.Random(round_ * 4 + t).sample(ASKS, len(ASKS)) for t in range(4)]
        with ThreadPoolExecutor(4) as pool:
            for order, got in zip(orders, pool.map(lambda order: [tensors_of(a) for a in order], orders)):
                answers += zip(order, got)
    return answers


def same(a, b):
    if isinstance(a, bool) or b is None or a is None:
        return a == b
    return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all() | (a.isnan() & b.isnan()).all())


def main():
    threaded = asked_in_threads()
    reference_attention._LESSON.clear()
    alone = {name(a): tensors_of(a) for a in ASKS}
    wrong = []
    for ask, heads in threaded:
        for h, (got, want) in enumerate(zip(heads, alone[name(ask)])):
            bad = [k for k in want if not same(got[k], want[k])]
            if bad:
                wrong.append("%s, head %d: %s" % (name(ask), h, ", ".join(bad)))
    for line in sorted(set(wrong)):
        print("NOT OK  asked from 4 threads at once, %s differ from the same ask alone" % line)
    if wrong:
        print("hint: the reference seeds torch's one random generator and then draws; two threads "
              "that do this at once draw each other's numbers. Compute one case at a time.")
        return 1
    print("OK      %d asks from 4 threads at once, 3 rounds: every tensor equal to the ask alone"
          % len(threaded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
