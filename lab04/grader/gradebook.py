"""gradebook.py: what grade_class.py writes, and the merge of the shards of a job array.

  GRADES/grades.csv              a row per student, sorted: student, id (the LMS's
                                 identifier, submissions.py), score (less a late penalty),
                                 max_score, STEP 1 ... STEP 7 (each step's points), status,
                                 late (how late, and what was taken: deadlines.py), commit
                                 (the one graded, with --deadline), diagnosis
  GRADES/feedback/<student>.txt  what that student should read (<student> (<id>) where two
                                 students share a name)
  GRADES/summary.md              what the class did (also printed), the picture first
  GRADES/class.png               the class at a glance (class_picture.py): the spread of
                                 scores, each STEP right, wrong or not reached
  GRADES/class.json              every row, the cases, the points and the class: what --merge
                                 checks and joins
  GRADES/similar.html            the pairs of labs the similarity check named, their shared
                                 lines side by side (similar_page.py)
and, for Gradescope (grade_class.py --gradescope) and PrairieLearn (--prairielearn), the one
submission's grade (grade_of), which lab04/checker/platforms.py writes as that platform's file.
"""
import csv
import io
import json
import os
import re

from lab04.checker import cases, files, platforms
from lab04.checker.mistakes import MISTAKES
from lab04.grader import class_picture, deadlines, similar_page, similarity
from lab04.grader.row import Row
from lab04.grader.status import Status

COLUMNS = ["student", "id", "score", "max_score"] + ["STEP %d" % n for n in cases.STEP_NUMBERS] + [
    "status", "late", "commit", "diagnosis"]
NAMES = {m["id"]: m["did"] for m in MISTAKES}


class Mismatch(Exception):
    """Shards that do not belong together: one line for the usage error."""


def fmt(x):
    return "%g" % x


def plain(text, keep="\n"):
    """Student data (a name, a diagnosis quoting their output or their compiler's errors) as
    text that is safe on a terminal: control characters, ESC among them, as \\xNN; the
    characters in keep (newlines, in a feedback file) stay."""
    return cases.escaped(text, keep)


def md(text):
    """Student data quoted in Markdown (summary.md): what could become an HTML tag, a link, a
    code span or a table's column (< > [ ] ` |) is escaped with a backslash, so it shows as
    written."""
    return re.sub(r"([<>\[\]`|])", r"\\\1", text)


def cell(text):
    """A CSV cell of student data, safe to open in a spreadsheet: one that could start a
    formula (=, +, -, @, or a tab or carriage return before one) gets a leading apostrophe,
    which spreadsheets show as text and do not compute."""
    text = plain(text, keep="")
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def name_of(r):
    """How the gradebook names a row's student: the name, with the identifier where another
    student has the same name."""
    return r.name


def file_name(student):
    return re.sub(r"[^A-Za-z0-9._@+-]", "_", student).lstrip(".") or "_"


def csv_text(rows):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([cell(r.student), cell(r.id), fmt(r.score), fmt(r.max_score)]
                   + [fmt(p) for p in r.steps] + [r.status, cell(r.late), cell(r.commit),
                                                     cell(r.diagnosis)])
    return out.getvalue()


def feedback_text(r):
    head = ["Lab 04 (self-attention): %s" % name_of(r), "score: %s/%s (%s)" % (fmt(r.score), fmt(r.max_score), r.status), ""]
    return plain("\n".join(head + r.feedback), keep="\n\t") + "\n"


def mistake_names(mistakes):
    """The known mistakes of a row's diagnosis (their ids), as [(id, what was done)]."""
    return [(m, NAMES.get(m, m)) for m in mistakes]


def score_counts(rows):
    """{score: the number of students with it}, every row counted (no lab scores 0)."""
    counts = {}
    for r in rows:
        counts[r.score] = counts.get(r.score, 0) + 1
    return counts


def step_counts(rows, points):
    """For each STEP, over the rows whose lab was graded: (step, right, wrong, not reached).
    Right: its points earned (a STEP worth 0 is right for all); not reached: the lab never
    got to it (Row.reached)."""
    graded = [r for r in rows if r.graded]
    counts = []
    for step in cases.STEP_NUMBERS:
        right = sum(1 for r in graded if points[step - 1] == 0 or r.steps[step - 1] == points[step - 1])
        missed = sum(1 for r in graded if not (points[step - 1] == 0 or r.steps[step - 1] == points[step - 1])
                     and not r.reached[step - 1])
        counts.append((step, right, len(graded) - right - missed, missed))
    return counts


def summary_text(rows, points, meta=None, picture=None, picture_missing=None):
    """summary.md; picture, the class's picture's file name (shown first, with what it shows
    in words), or picture_missing, why there is none."""
    total = sum(points)
    n = len(rows)
    graded = [r for r in rows if r.graded]
    lines = ["# Lab 04: what the class did", ""]
    steps = step_counts(rows, points)
    if picture:  # first, described in words (its numbers are the sections below, in text)
        worst = max(steps, key=lambda s: (s[2] + s[3], -s[0]))
        lines += ["![The class at a glance: %d students' scores from %s to %s of %s; the STEP most got wrong or did "
                  "not reach is STEP %d, %d of %d graded labs. The numbers are in the sections Scores and Each "
                  "step below.](%s)" % (n, fmt(min(r.score for r in rows)), fmt(max(r.score for r in rows)),
                                        fmt(total), worst[0], worst[2] + worst[3], len(graded), picture), ""]
    elif picture_missing:
        lines += ["(%s: the numbers are in the sections Scores and Each step below.)" % picture_missing, ""]
    counts = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append("%d students%s." % (n, ": " + ", ".join("%d %s" % (c, s) for s, c in sorted(
        counts.items(), key=lambda kv: (-kv[1], kv[0]))) if counts else " (this shard has none)"))
    scores = sorted((r.score for r in rows), reverse=True)
    if scores:
        mid = scores[len(scores) // 2] if len(scores) % 2 else (scores[len(scores) // 2 - 1] + scores[len(scores) // 2]) / 2
        lines.append("Mean score %.2f/%s, median %s/%s (every student counts; no lab scores 0)."
                     % (sum(scores) / n, fmt(total), fmt(mid), fmt(total)))
    if meta and meta.get("cases"):
        lines.append(cases_line(meta))
    if meta and (meta.get("deadline") or meta.get("late_penalty", "none") != "none"):
        lines.append("Deadline: %s; late penalty: %s." % (meta.get("deadline") or "none given", meta.get("late_penalty")))
    dated = [r for r in rows if r.time_source == deadlines.COMMIT_DATE]
    tagged = [r for r in rows if r.time_source == deadlines.SUBMIT_TAG]
    if dated or tagged:
        lines.append("Times: %d of the repositories are timed by times the students write themselves (%s): the late "
                     "column says so. GitHub's record of the pushes (--pushes), Gradescope's upload times and "
                     "Canvas's late mark are times they cannot write." % (len(dated) + len(tagged), ", ".join(
                         w for w in ("%d by their commit dates alone (git commit --date)" % len(dated) if dated else "",
                                     "%d by submit/ tags they can push themselves" % len(tagged) if tagged else "")
                         if w)))
    contradicted = [r for r in rows if r.contradictions]
    if contradicted:
        lines.append("Contradictions: %d of the repositories %s times that cannot all be true (the late column "
                     "names them): %s." % (len(contradicted), "has" if len(contradicted) == 1 else "have",
                                           ", ".join(md(name_of(r)) for r in contradicted[:10])))
    lines += ["Isolation: " + i for i in sorted({r.isolation for r in rows if r.isolation})]
    distribution = score_counts(rows)
    lines += ["", "## Scores", "", "| score | students | |", "|---|---|---|"]
    most = max(distribution.values(), default=0)
    for s in sorted(distribution, reverse=True):  # a bar of # per student, at most 50 wide
        bar = distribution[s] if most <= 50 else max(1, round(distribution[s] * 50 / most))
        lines.append("| %s/%s | %d | %s |" % (fmt(s), fmt(total), distribution[s], "#" * bar))
    lines += ["", "## Each step: right, wrong, or not reached", "",
              "Of the %d students whose lab was graded (not counting no lab, or a file that is not one); not "
              "reached: the lab stopped before the STEP, left it blank, or did not compile:" % len(graded), ""]
    for step, right, wrong, missed in steps:
        share = 100.0 * right / len(graded) if graded else 0.0
        lines.append("- STEP %d, %s: %d of %d right (%.0f%%), %d wrong, %d not reached"
                     % (step, cases.STEP_NAMES[step], right, len(graded), share, wrong, missed))
    made = {}
    for r in rows:
        for mid, _ in mistake_names(r.mistakes):
            made.setdefault(mid, []).append(md(name_of(r)))
    lines += ["", "## Known mistakes, by the number of students who made them", ""]
    if not made:
        lines.append("None: no lab's numbers are those of a known mistake.")
    for mid, who in sorted(made.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append("- %s: %d student%s (%s) [%s]" % (NAMES.get(mid, mid), len(who), "" if len(who) == 1 else "s",
                                                       ", ".join(sorted(who)), mid))
    unexplained = [r for r in graded if r.score < r.max_score and not r.mistakes and r.status == Status.GRADED
                   and not r.blank]
    blanks = [r for r in graded if r.blank]
    if blanks:
        lines += ["", "## Labs with a STEP not written yet", ""] + [
            "- %s (%s/%s): STEP %d" % (md(name_of(r)), fmt(r.score), fmt(r.max_score), r.blank) for r in blanks]
    lines += ["", "## Labs no known mistake explains", ""]
    if not unexplained:
        lines.append("None.")
    for r in unexplained:
        lines.append("- %s (%s/%s, %s): %s" % (md(name_of(r)), fmt(r.score), fmt(r.max_score), r.status,
                                               md(r.diagnosis) or "no diagnosis"))
        lines += ["  - " + md(s) for s in r.same_tensor]
    late = [r for r in rows if r.late]
    if late:
        lines += ["", "## Late, and commits after the deadline", ""] + [
            "- %s: %s" % (md(name_of(r)), md(r.late)) for r in late]
    groups = {}
    for r in unexplained:
        if r.wrong_numbers:
            groups.setdefault(r.wrong_numbers["key"], []).append(r)
    groups = [g for g in groups.values() if len(g) > 1]
    if groups:
        lines += ["", "## Labs that printed the same wrong numbers", "",
                  "No known mistake explains these labs, yet each group printed the same wrong numbers, from the "
                  "STEP named on, in every case it got wrong: a hint to look at them side by side (the same slip, "
                  "a shared source), never a verdict.", ""]
        for g in sorted(groups, key=lambda g: (-len(g), name_of(g[0]))):
            w = g[0].wrong_numbers
            lines.append("- STEP %s (%s): %s" % (w["step"], w["name"], ", ".join(sorted(md(name_of(r)) for r in g))))
    lines += similarity_lines(meta.get("similarity") if meta else None, meta)
    stopped = [r for r in graded if r.status != Status.GRADED]
    if stopped:
        lines += ["", "## Labs that did not run to the end", ""] + [
            "- %s (%s/%s, %s): %s" % (md(name_of(r)), fmt(r.score), fmt(r.max_score), r.status, md(r.diagnosis))
            for r in stopped]
    others = [r for r in rows if r not in graded]
    if others:
        lines += ["", "## Not graded", ""] + ["- %s: %s (%s)" % (md(name_of(r)), r.status, md(r.diagnosis))
                                              for r in others]
    return "\n".join(plain(line, keep="") for line in lines) + "\n"


def similarity_lines(found, meta):
    """The summary's part on labs whose own code shares what students who worked alone would not
    (similarity.look_alike's result): each pair named, and the lines they share side by side."""
    if found is None:
        return [] if meta and meta.get("shard", WHOLE) != WHOLE else [
            "", "## Code that looks alike", "", "Not checked (--no-similarity)."]
    lines = ["", "## Code that looks alike", ""]
    if not found["checked"]:
        return lines + ["Not checked: %s. The class was graded all the same." % found["why"]]
    lines.append("Each lab's own code (its lines that are neither the lesson's nor the handed-out template's, nor "
                 "code the lesson's comments spell out) was compared with every other's: line by line, and statement "
                 "by statement in two forms that see through cheap disguises (names, types, temporaries, one-line "
                 "helpers, braces, order; LibTorch's spellings of one operation). What two labs share is weighed by "
                 "how many labs wrote the same (%d compared): a pair is named only when students who worked alone "
                 "would share as much with a chance below 1 in %d over a class of this size. A hint to look at them "
                 "side by side, never a verdict: the grades are not changed." % (
                     found["compared"], round(1 / similarity.CHANCE)))
    # (no time in it: the summary of one class graded twice, or in shards and merged, is the
    # same text)
    if found.get("left_out"):
        lines += ["", "Left out of the comparison, with more than %d tokens of code of their own (not parsed): %s." % (
            similarity.MAX_OWN, ", ".join(md(n) for n in found["left_out"]))]
    lines.append("")
    if not found["pairs"]:
        return lines + ["None: no two labs share what students who worked alone would not."]
    lines += ["Side by side, in a browser: similar.html, beside this summary.", ""]
    groups = similarity.groups(found["pairs"])
    for g in (g for g in groups if len(g) > 2):  # many labs alike: one line, then each pair
        inside = [p for p in found["pairs"] if p["a"] in g and p["b"] in g]
        lines.append("- a group of %d labs that share what students who worked alone would not (%d pairs named): %s"
                     % (len(g), len(inside), ", ".join(md(n) for n in sorted(g))))
    for p in found["pairs"]:
        rare = "%d of them written by no one else in the class" % p["rare"] if p["group"] == 2 else \
            "%d of them written by no one outside its group of %d" % (p["rare"], p["group"])
        lines.append("- %s and %s%s: share %d lines, %s (%d%% of %s's own lines, %d%% of %s's); by chance, in "
                     "fewer than 1 class in 10^%.1f" % (
                         md(p["a"]), md(p["b"]), " (an earlier term's)" if p.get("earlier") else "", len(p["shared"]),
                         rare, p["a_share"], md(p["a"]), p["b_share"], md(p["b"]), p["evidence"]))
        for s in p["shared"][:SHARED_SHOWN]:
            lines.append("    - %s line %d `%s` | %s line %d `%s` (%s)" % (
                md(p["a"]), s["a_line"], s["a_text"].replace("`", "'"), md(p["b"]), s["b_line"],
                s["b_text"].replace("`", "'"), "no one else" if s["others"] == 0 else "%d others" % s["others"]))
        if len(p["shared"]) > SHARED_SHOWN:
            lines.append("    - and %d more lines (class.json has them all)" % (len(p["shared"]) - SHARED_SHOWN))
    return lines


SHARED_SHOWN = 8  # shared lines of a pair shown side by side in the summary


def cases_line(meta):
    """What the summary says of the cases the class was graded on."""
    if meta.get("draw") == "public":
        return "Cases: the public ones (--draw public), which every student's own checker uses: a lab that " \
               "printed their answers would score full marks. %s." % " ".join(meta["cases"])
    if meta.get("draw") is None:
        return "Cases: %s." % " ".join(meta["cases"])
    return "Cases: drawn for this grade, no student has seen them (--draw %s: a regrade with it grades on the same " \
           "cases): %s." % (meta["draw"], " ".join(meta["cases"]))


def grade_of(row, points, meta=None):
    """One row as the platforms' files take it (platforms.Grade): each STEP's points and line
    of the report, the row's feedback as the output (escaped as the feedback files are), with
    its isolation and cases; in extra, its status and the draw of its cases (to grade it
    again alike: check_lab.py --grade --draw SEED). A lab that was not graded, or did not
    compile, scores 0 with the reason."""
    extra = {"status": str(row.status)}  # how its runs ended (status.py), as a value
    if meta:
        extra.update(draw=meta.get("draw"), cases=meta.get("cases"))
    return platforms.Grade(
        score=float(row.score), points=list(points), earned=[float(p) for p in row.steps], right=list(row.right),
        lines={n: plain(line, keep="") for n, line in enumerate(row.step_lines or [], 1)},
        output=feedback_text(row) + ("\n" + plain("isolation: " + row.isolation) if row.isolation else "")
        + ("\n" + cases_line(meta) if meta else ""),
        status=str(row.status), graded=row.graded, why=plain(row.diagnosis or row.status, keep=""), extra=extra)


def export_lines(folder, export, rows):
    """Writes the LMS's import file (lms.py) for the class's rows; returns what the summary says."""
    matched, unmatched, why = export.match([r.key for r in rows])
    text, column, no_email = export.filled(rows, matched, rows[0].max_score if rows else 0)
    name = "%s-import.csv" % export.kind.lower()
    files.write_text(os.path.join(folder, name), text, newline="")
    placed = [r for r in rows if r.key in matched]
    left = [r for r in placed if not r.graded]
    lines = ["", "## %s's gradebook" % export.kind, "",
             "%s is %s with the column %r filled in for %d of the %d students: import it as it is (%s)." % (
                 name, os.path.basename(export.path) if export.kind == "Canvas" else "Moodle's import file",
                 column, len(placed) - len(left) - len(no_email), len(rows),
                 "Grades, Import" if export.kind == "Canvas" else
                 "Grades, Import, CSV file: map Email address to useremail, the lab to a new grade item")]
    if no_email:
        lines.append("Matched, but %s's export has no email address for them, so left out: %s." % (
            export.kind, ", ".join(md(name_of(r)) for r in no_email)))
    if left:
        lines.append("Not graded, so left out: %s." % ", ".join("%s (%s)" % (md(name_of(r)), r.status) for r in left))
    unsure = [r for r in rows if r.key in why]
    if unsure:  # matched no one rather than maybe the wrong one: the instructor enters these
        lines.append("Matched no one, because more than one student could be theirs (enter these by hand): %s." % (
            "; ".join("%s: %s" % (md(name_of(r)), md(why[r.key])) for r in unsure)))
    lines.append("In the class, not in %s's export: %s." % (
        export.kind, ", ".join(md(name_of(r)) for r in rows if r.key not in matched and r.key not in why)
        or "none"))
    lines.append("In %s's export, not in the class: %s." % (export.kind, ", ".join(md(n) for n in unmatched) or "none"))
    return lines


def write(folder, rows, meta, exports=()):
    """Writes every file; returns the summary and the number of rows that are "grader error"
    (the grader's own fault: the gradebook is incomplete)."""
    rows = sorted(rows, key=lambda r: r.key)
    files.folder(os.path.join(folder, "feedback"))
    taken = set()
    for r in rows:
        name = file_name(name_of(r))
        while name in taken:
            name += "_"
        taken.add(name)
        files.write_text(os.path.join(folder, "feedback", name + ".txt"), feedback_text(r))
    files.write_text(os.path.join(folder, "grades.csv"), csv_text(rows), newline="")
    picture = class_picture.draw(folder, score_counts(rows), sum(meta["points"]),
                                 [("STEP %d" % s, *n) for s, *n in step_counts(rows, meta["points"])]) if rows else None
    summary = summary_text(rows, meta["points"], meta, picture, class_picture.available())
    for export in exports:
        summary += "\n".join(plain(line, keep="") for line in export_lines(folder, export, rows)) + "\n"
    files.write_text(os.path.join(folder, "summary.md"), summary)
    if meta.get("shard", WHOLE) == WHOLE:  # (a shard's comes at --merge, with the whole class)
        files.write_text(os.path.join(folder, "similar.html"), similar_page.page(meta.get("similarity")))
    with files.written(os.path.join(folder, "class.json")) as f:
        json.dump(dict(meta, shard=shard_text(meta["shard"]), rows=[r.to_json() for r in rows]), f, indent=1)
    return summary, sum(1 for r in rows if r.status == Status.GRADER_ERROR)


def row_of(shard, data):
    """The Row a shard's class.json holds, or Mismatch."""
    try:
        return Row.from_json(data)
    except (TypeError, ValueError, KeyError, AttributeError):
        raise Mismatch("%s's class.json holds a row this grader cannot read: grade that shard again" % shard)


WHOLE = (1, 1)  # a shard (I, N) that is the whole class


def shard_text(shard):
    """A shard (I, N) as class.json keeps it: "I/N"."""
    return "%d/%d" % shard


def shard_read(text, where):
    """The shard (I, N) a class.json names (shard_text wrote it); Mismatch when it names none."""
    m = re.fullmatch(r"(\d{1,5})/(\d{1,5})", text) if isinstance(text, str) else None
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise Mismatch("%s's class.json names no shard I/N (it says %r): grade that shard again with grade_class.py "
                       "--shard I/N" % (where, str(text)[:20]))
    return int(m.group(1)), int(m.group(2))


def merge(folder, shards, exports=(), look_alike=None):
    """Joins the class.json of each shard of one class into one gradebook in folder; look_alike,
    given the rows, says which labs' own code looks alike (similarity.look_alike), or None."""
    parts = []
    for s in shards:
        try:
            with open(os.path.join(s, "class.json")) as f:
                parts.append((s, json.load(f)))
        except (OSError, ValueError):
            raise Mismatch("%s holds no class.json that can be read: name the GRADES folders that "
                           "grade_class.py --shard wrote" % s)
    first = parts[0][1]
    seen, rows = {}, []
    for s, p in parts:
        if p.get("draw") != first.get("draw"):
            raise Mismatch("%s and %s were graded on different draws of cases (--draw %s and --draw %s): grade every "
                           "shard of a class with the same --draw SEED" % (parts[0][0], s, first.get("draw"), p.get("draw")))
        for key, what in (("cases", "cases"), ("points", "points"), ("class", "students"), ("deadline", "deadline"),
                          ("late_penalty", "late penalty")):
            if p.get(key) != first.get(key):
                raise Mismatch("%s and %s were graded with other %s: only shards of one class, graded "
                               "alike, can be merged" % (parts[0][0], s, what))
        shard = shard_read(p.get("shard", shard_text(WHOLE)), s)
        if shard in seen:
            raise Mismatch("%s and %s are both shard %s: each shard once" % (seen[shard], s, shard_text(shard)))
        seen[shard] = s
        rows += [(s, r) for r in p["rows"]]
    n = shard_read(first.get("shard", shard_text(WHOLE)), parts[0][0])[1]
    if any(k[1] != n for k in seen):
        raise Mismatch("the shards were cut in different numbers (%s): merge the N shards of one --shard I/N"
                       % ", ".join(shard_text(k) for k in sorted(seen)))
    missing = [shard_text((i, n)) for i in range(1, n + 1) if (i, n) not in seen]
    if missing:
        raise Mismatch("shard %s is missing: merge all %d shards" % (", ".join(missing), n))
    rows = [row_of(s, r) for s, r in rows]
    names = [name_of(r) for r in rows]
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise Mismatch("student %s is in more than one shard: these shards do not belong together" % twice[0])
    if sorted(names) != sorted(first["class"]):
        raise Mismatch("the shards' students are not the class's: these shards do not belong together")
    files.folder(folder)
    meta = {k: first.get(k) for k in ("cases", "draw", "points", "class", "deadline", "late_penalty")}
    meta.update(shard=WHOLE, similarity=look_alike(rows) if look_alike else None)
    return write(folder, rows, meta, exports)
