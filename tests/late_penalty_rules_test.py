#!/usr/bin/env python3
"""The rules of a deadline, in this process (tier unit): lab04/grader/late_penalty.py reads --deadline
and --late-penalty, says a duration as a person does, takes the penalty for each day begun up to its
cap; lab04/grader/deadlines.py reads Gradescope's upload time, and marks a row late or on time from
a snapshot, an upload time or Canvas's late mark. Every expected value below is worked out by hand
from the rule as docs/instructors.md states it (a day begun counts whole; P% of the lab's points per
day, at most Q%), never taken from the module's output. No git, no class, no compile: a second.

usage: late_penalty_rules_test.py
"""
import datetime
import sys

import project  # noqa: F401  (puts the project, and its package lab04/, on sys.path)
import checklist

from lab04.grader import deadlines, late_penalty  # noqa: E402
from lab04.grader.row import Row  # noqa: E402
from lab04.grader.submissions import Student  # noqa: E402

UTC = datetime.timezone.utc
DAY = 86400


def refused(parse, text):
    """Whether parse refuses text with late_penalty.Bad, whose one line names the option."""
    try:
        parse(text)
    except late_penalty.Bad as e:
        return str(e).startswith("--") and "\n" not in str(e)
    return False


def penalty_checks():
    checks = []
    # --deadline: ISO 8601 with a zone, and nothing else
    for text, utc in [("2026-12-01T23:59Z", datetime.datetime(2026, 12, 1, 23, 59, tzinfo=UTC)),
                      ("2026-12-01T23:59:00-05:00", datetime.datetime(2026, 12, 2, 4, 59, tzinfo=UTC)),
                      ("2026-12-01 23:59+01:00", datetime.datetime(2026, 12, 1, 22, 59, tzinfo=UTC)),
                      (" 2026-12-01T23:59z ", datetime.datetime(2026, 12, 1, 23, 59, tzinfo=UTC))]:
        got = late_penalty.parse_deadline(text)
        checks.append(("--deadline %r is %s in UTC" % (text, utc), got == utc and got.utcoffset() is not None, got))
    for text in ("2026-12-01T23:59", "2026-12-01", "", "tomorrow", "Z", "2026-13-01T00:00Z"):
        checks.append(("--deadline %r is refused with one line naming the option" % text,
                       refused(late_penalty.parse_deadline, text), text))
    # --late-penalty: none, or P%/day[,max=Q%] with 0 < P, Q <= 100
    for text, per_day, cap in [("none", 0.0, 100.0), ("10%/day", 10.0, 100.0), ("10%/day,max=50%", 10.0, 50.0),
                               ("2.5%/day,max=100%", 2.5, 100.0), ("100%/day", 100.0, 100.0)]:
        got = late_penalty.parse_penalty(text)
        checks.append(("--late-penalty %r is %g%% a day, at most %g%%" % (text, per_day, cap),
                       (got.per_day, got.cap) == (per_day, cap), (got.per_day, got.cap)))
    checks.append(("--late-penalty none takes nothing (a false penalty)", not late_penalty.parse_penalty("none"), "true"))
    for text in ("0%/day", "101%/day", "10%/day,max=0%", "10%/day,max=120%", "10%", "10 %/day", "-5%/day",
                 "10%/day,max=50", "10%/week", ""):
        checks.append(("--late-penalty %r is refused with one line naming the option" % text,
                       refused(late_penalty.parse_penalty, text), text))
    # a duration as a person says it: the two largest units, the second left out when 0
    for seconds, said in [(0, "0 s"), (42, "42 s"), (59.6, "1 min"), (60, "1 min"), (61, "1 min"),
                          (3600, "1 h"), (3660, "1 h 1 min"), (DAY - 1, "23 h 59 min"), (DAY, "1 d"),
                          (DAY + 3 * 3600 + 59, "1 d 3 h"), (2 * DAY + 59, "2 d")]:
        checks.append(("%s s is said %r" % (seconds, said), late_penalty.span(seconds) == said, late_penalty.span(seconds)))
    # the penalty: each day begun counts whole, the share capped, taken of the lab's points
    ten_a_day, capped = late_penalty.Penalty(10.0), late_penalty.Penalty(10.0, 25.0)
    for late_by, penalty, max_score, taken, days in [
            (1, ten_a_day, 10.0, 1.0, 1),            # a second late: a day begun
            (DAY, ten_a_day, 10.0, 1.0, 1),          # exactly a day: one day
            (DAY + 1, ten_a_day, 10.0, 2.0, 2),      # a day and a second: two
            (5 * DAY, capped, 10.0, 2.5, 5),         # 50% capped at 25%
            (3 * DAY - 1, ten_a_day, 7.0, 2.1, 3),   # 30% of 7 points
            (20 * DAY, ten_a_day, 7.0, 7.0, 20)]:    # never more than every point
        said, got = late_penalty.lateness(late_by, penalty, max_score)
        checks.append(("late by %d s at %s of %g points takes %g (%d day%s)" % (late_by, penalty, max_score, taken, days,
                                                                              "s" * (days > 1)),
                       abs(got - taken) < 1e-12 and said.startswith("late by %s: " % late_penalty.span(late_by))
                       and ("for %d day%s " % (days, "s" * (days > 1))) in said, (said, got)))
    for late_by in (None, 0, -5):
        checks.append(("a submission %s takes nothing and says nothing" % ("of no known time" if late_by is None else
                                                                          "%d s from the deadline" % late_by),
                       late_penalty.lateness(late_by, ten_a_day, 10.0) == ("", 0.0), late_penalty.lateness(late_by, ten_a_day, 10.0)))
    said, got = late_penalty.lateness(3 * DAY, late_penalty.Penalty(), 10.0)
    checks.append(("without a penalty a late submission is said late and loses nothing",
                   said == "late by 3 d" and got == 0.0, (said, got)))
    said, got = late_penalty.lateness(DAY, ten_a_day, 10.0, known=False)
    checks.append(("late by an unknown time (Canvas's mark) counts as one day, and says it is not known by how much",
                   got == 1.0 and "does not say by how much" in said, (said, got)))
    return checks


def upload_time_checks():
    checks = []
    for value, utc in [("2026-12-01 10:02:03.123456000 -0500", datetime.datetime(2026, 12, 1, 15, 2, 3, tzinfo=UTC)),
                       ("2026-12-01T10:02:03Z", datetime.datetime(2026, 12, 1, 10, 2, 3, tzinfo=UTC)),
                       ("2026-12-01 10:02:03 +05:30", datetime.datetime(2026, 12, 1, 4, 32, 3, tzinfo=UTC)),
                       ("2026-12-01 10:02:03", datetime.datetime(2026, 12, 1, 10, 2, 3, tzinfo=UTC)),
                       (datetime.datetime(2026, 12, 1, 10, 2, 3), datetime.datetime(2026, 12, 1, 10, 2, 3, tzinfo=UTC)),
                       (datetime.datetime(2026, 12, 1, 10, 2, 3, tzinfo=datetime.timezone(datetime.timedelta(hours=-1))),
                        datetime.datetime(2026, 12, 1, 11, 2, 3, tzinfo=UTC))]:
        got = deadlines.submitted_time(value)
        checks.append(("Gradescope's upload time %r is %s in UTC" % (str(value), utc), got == utc, got))
    for value in ("yesterday", "2026-12-01", "", "2026-12-01 10:02:03 EST"):
        checks.append(("an upload time %r that cannot be read is None" % value, deadlines.submitted_time(value) is None,
                       deadlines.submitted_time(value)))
    return checks


def marked(student, penalty="10%/day", score=7.0, graded=True):
    row = Row(student=student.name, max_score=7.0, score=score)
    deadlines.mark(row, student, late_penalty.parse_deadline("2026-12-01T23:59Z"), late_penalty.parse_penalty(penalty), graded)
    return row


def uploaded(when):
    s = Student("ann", ["lab04_attention.cpp"], "gradescope")
    s.submitted = when
    return s


def mark_checks():
    checks = []
    row = marked(uploaded("2026-12-01 23:59:00 +0000"))
    checks.append(("an upload at the deadline is on time, by Gradescope's upload time, and keeps its points",
                   row.late.startswith("on time") and row.score == 7.0 and row.time_source == deadlines.UPLOAD_TIME,
                   (row.late, row.score, row.time_source)))
    row = marked(uploaded("2026-12-03 00:00:00 +0000"))  # 1 d 0 h 1 min late: two days begun
    checks.append(("an upload 1 d 1 min late loses 20% of 7 points (1.4) and its feedback says the score left",
                   abs(row.score - 5.6) < 1e-9 and row.late.startswith("late by 1 d: 20% taken for 2 days")
                   and any("your score is 5.6" in line for line in row.feedback), (row.late, row.score, row.feedback)))
    row = marked(uploaded("2026-12-02 00:00:00 +0000"), score=0.5)
    checks.append(("a penalty never takes a score below 0", row.score == 0.0, row.score))
    row = marked(uploaded("2026-12-05 00:00:00 +0000"), graded=False, score=3.0)
    checks.append(("a lab that was not graded is said late and nothing is taken", row.score == 3.0 and
                   row.late.startswith("late by"), (row.late, row.score)))
    row = marked(uploaded("not a time"))
    checks.append(("an upload time that cannot be read is said not known and takes nothing",
                   row.late.startswith("not known") and row.score == 7.0, (row.late, row.score)))
    s = Student("bob", ["lab04_attention.cpp"], "canvas")
    s.marked_late = True
    row = marked(s)
    checks.append(("Canvas's late mark takes one day's penalty (10% of 7) and names Canvas",
                   abs(row.score - 6.3) < 1e-9 and "Canvas" in row.late and row.time_source == deadlines.LMS_MARK,
                   (row.late, row.score)))
    shot = deadlines.Snapshot()
    shot.commit, shot.when = "0123456789abcdef", datetime.datetime(2026, 12, 1, 20, 0, tzinfo=UTC)
    shot.later = [late_penalty.parse_deadline("2026-12-02T01:59Z").timestamp()]
    s = Student("cyd", ["lab04_attention.cpp"], "repositories")
    s.snapshot = shot
    row = marked(s)
    checks.append(("a repository graded at the deadline keeps its points, names its commit, says the later commit "
                   "(2 h after) and that its times are the student's claim",
                   row.score == 7.0 and row.commit.startswith("0123456789ab") and "1 later commit not graded" in row.late
                   and "2 h" in row.late and "student's claim" in row.late and row.time_source == deadlines.COMMIT_DATE,
                   (row.late, row.commit)))
    shot = deadlines.Snapshot()
    shot.later = [late_penalty.parse_deadline("2026-12-02T00:29Z").timestamp()]
    s.snapshot = shot
    row = marked(s, score=0.0, graded=False)
    checks.append(("a repository with commits only after the deadline says so (the first 30 min after it)",
                   row.late.startswith("1 commit, all after the deadline (the first 30 min after it)") and not row.commit,
                   row.late))
    return checks


def main(argv):
    if argv:
        print("late_penalty_rules_test: usage: late_penalty_rules_test.py", file=sys.stderr)
        return 2
    return checklist.report(penalty_checks() + upload_time_checks() + mark_checks())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
