"""late_penalty.py: what being late costs, as rules on numbers and times: --deadline's time,
--late-penalty's rule, and the late column's words with the points they take (deadlines.py
applies them to a row; tests/late_penalty_rules_test.py works each out by hand).

  parse_deadline(text)   --deadline's ISO 8601 time, which must name its zone
  parse_penalty(text)    --late-penalty's rule: P%/day (a share of the lab's points per day
                         late, each day begun counting whole), with ,max=Q% as its cap
  lateness(...)          what the late column says, and the points it takes
  span(seconds)          a duration as a person says it
"""
import datetime
import math
import re

DAY = 86400


class Bad(Exception):
    """An option's value that cannot be used: one line for the usage error."""


def parse_deadline(text):
    """--deadline's value as an aware datetime. Accepted: ISO 8601 with a zone, such as
    2026-12-01T23:59:00-05:00, 2026-12-01 23:59+01:00 or 2026-12-01T23:59Z."""
    accepted = "takes an ISO 8601 time with its zone, such as 2026-12-01T23:59:00-05:00 or 2026-12-01T23:59Z"
    value = (text or "").strip()
    try:
        when = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "zZ" and value else value)
    except ValueError:
        raise Bad("--deadline %s, not %r" % (accepted, value[:40]))
    if when.tzinfo is None or when.utcoffset() is None:
        raise Bad("--deadline %r has no zone: it %s" % (value[:40], accepted.replace("takes", "needs")))
    return when


class Penalty:
    """A share of the lab's points per day late (each day begun counts whole), up to a cap."""

    def __init__(self, per_day=0.0, cap=100.0):
        self.per_day, self.cap = per_day, cap

    def __bool__(self):
        return self.per_day > 0

    def share(self, days):
        return min(self.cap, self.per_day * days)

    def __str__(self):
        return "%g%% of the points per day late, at most %g%%" % (self.per_day, self.cap) if self else "none"


def parse_penalty(text):
    """--late-penalty's rule: none, or P%/day with an optional ,max=Q% (0 < P <= 100,
    0 < Q <= 100; without it, up to 100%)."""
    value = (text or "").strip()
    if value == "none":
        return Penalty()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%/day(?:,max=(\d+(?:\.\d+)?)%)?", value)
    if not m or not 0 < float(m.group(1)) <= 100 or (m.group(2) and not 0 < float(m.group(2)) <= 100):
        raise Bad("--late-penalty takes none, or P%%/day with an optional cap ,max=Q%% (P and Q above 0, at most 100, "
                  "such as 10%%/day,max=50%%), not %r" % value[:40])
    return Penalty(float(m.group(1)), float(m.group(2)) if m.group(2) else 100.0)


def span(seconds):
    """A duration as a person says it: 2 d 3 h, 5 h 10 min, 42 s."""
    seconds = int(round(seconds))
    d, rest = divmod(seconds, DAY)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if d:
        return "%d d %d h" % (d, h) if h else "%d d" % d
    if h:
        return "%d h %d min" % (h, m) if m else "%d h" % h
    return "%d min" % m if m else "%d s" % s


def lateness(late_by, penalty, max_score, known=True):
    """(the late column's text, the points the penalty takes) for a submission late_by
    seconds after the deadline (None: on time, or not known). known=False: late, but by how
    much the source does not say (Canvas's _late): it counts as one day, the least it can be."""
    if late_by is None or late_by <= 0:
        return "", 0.0
    days = max(1, math.ceil(late_by / DAY)) if known else 1
    said = "late by %s" % span(late_by) if known else "late (marked so by Canvas, which does not say by how much)"
    if not penalty:
        return said, 0.0
    share = penalty.share(days)
    taken = max_score * share / 100.0
    return "%s: %g%% taken for %d day%s (%g points)" % (said, share, days, "s" * (days > 1), taken), taken
