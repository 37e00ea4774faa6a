"""deadlines.py: when a submission counts: a student's repository read as it was at the
deadline, the time it was submitted and where that time comes from, and a row marked late
(late_penalty.py's rules; git_reading.py reads the repository, as data only).

  read_pushes(path)      GitHub's record of a repository's pushes, as `gh api` saves the
                         repository activity API's answer: [(time, commit, ref)], or Bad
  at_deadline(repo, t)   a cloned repository read as it was at the deadline: by the server's
                         record of its pushes where the instructor has one (a time the student
                         cannot write: the push that brought the graded commit), else by
                         Classroom 50's submission tags (submit/<UTC time>-<short hash>) where
                         it has them, else by committer time (the time git records when a
                         commit is made, which the student's own clock, or GIT_COMMITTER_DATE,
                         sets). A tag is in a repository the student can push to: its time is
                         the student's claim, as a commit date is, unless the instructor says
                         that only the workflow may write submit/ tags (--trusted-tags). The
                         last submission at or before the deadline, the lab in that commit,
                         the submissions after it, and the times that contradict each other
  mark(row, ...)         a row marked as late as it was, with the points the penalty takes

A history that cannot be read is that student's row, never the class's end.
"""
import datetime
import os
import re

from lab04.grader import submissions
from lab04.grader.git_reading import MAX_COMMITS, git, only_its_own, tree_entries
from lab04.grader.late_penalty import DAY, Bad, lateness, span
from lab04.grader.status import Status

# Where a submission's time comes from (a row's "time_source"), and whether the student sets it.
COMMIT_DATE, SUBMIT_TAG, TRUSTED_TAG, SERVER_PUSH, UPLOAD_TIME, LMS_MARK = (
    "commit date", "submission tag", "trusted submission tag", "push record", "upload time", "LMS mark")
STUDENTS_CLAIMS = (COMMIT_DATE, SUBMIT_TAG)  # times the student writes: the late column and summary say so
SOURCE_WORDS = {COMMIT_DATE: "by its commit dates, which the student sets (git commit --date): the student's claim",
                SUBMIT_TAG: "by the student's own submit/ tags: a tag in a repository the student can push to is "
                            "the student's claim, as a commit date is",
                TRUSTED_TAG: "by its submit/ tags, which only Classroom 50's workflow may write (--trusted-tags)",
                SERVER_PUSH: "by GitHub's record of each push (--pushes), a time the student cannot write",
                UPLOAD_TIME: "by Gradescope's upload time", LMS_MARK: None}  # (Canvas's mark says itself)
# The pushes of GitHub's repository activity API that bring commits to a branch (its documented
# activity_type values; branch_deletion brings none).
PUSH_TYPES = ("push", "force_push", "branch_creation", "pr_merge", "merge_queue_merge")
# The one form Classroom 50's workflow writes: submit/<UTC time, hyphens for colons>-<7 hex of its commit>.
SUBMIT_TAG_FORM = re.compile(r"submit/(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)-([0-9a-f]{7})")


class Snapshot:
    """A repository as it was at the deadline."""

    def __init__(self):
        self.commit = None  # the graded commit's hash, or None: none at or before the deadline
        self.when = None  # its committer time (aware datetime)
        self.later = []  # committer times of the commits after the deadline, oldest first
        self.labs = []  # paths of lab04_attention.cpp in the graded commit
        self.data = None  # the lab's bytes, when there is exactly one
        self.problem = None  # (status, why) when the lab there cannot be graded
        self.source = COMMIT_DATE  # where the times come from: COMMIT_DATE, SUBMIT_TAG, TRUSTED_TAG, SERVER_PUSH
        self.ignored = []  # submit/ tags not of the form the workflow writes, not counted
        self.contradictions = []  # times that cannot all be true, in words (whatever the source)
        self.record = ""  # why the server's record of pushes was not used, when one was given

    def commit_text(self):
        if not self.commit:
            return ""
        return "%s (%s)" % (self.commit[:12], self.when.strftime("%Y-%m-%d %H:%M:%S %z"))


def at_deadline(repo, deadline, pushes=None, trusted_tags=False):
    """The repository at repo read as it was at deadline: a Snapshot, or Unreadable. pushes:
    the server's record of its pushes (read_pushes), a Bad that reading it gave, or None."""
    only_its_own(repo, os.path.realpath(repo))
    if not git(repo, "for-each-ref", "--count=1", "refs/heads", "refs/remotes").strip():
        return Snapshot()  # no commit at all: a repository the student never pushed to
    shot = Snapshot()
    tags, shot.ignored, mismatched = submission_tags(repo)
    shot.contradictions = mismatched + tag_contradictions(repo, tags)
    pushed, shot.record = pushes_of(repo, pushes)
    if pushed:
        commits, shot.source = pushed, SERVER_PUSH
        shot.contradictions += pushed_after_its_tag(tags, pushed)
    elif tags:
        commits, shot.source = tags, TRUSTED_TAG if trusted_tags else SUBMIT_TAG
    else:
        listed = git(repo, "rev-list", "--timestamp", "-n", str(MAX_COMMITS), "HEAD", limit=64 * MAX_COMMITS).decode()
        commits = [(int(t), h) for t, h in (line.split() for line in listed.splitlines())]
    limit = deadline.timestamp()
    before = [c for c in commits if c[0] <= limit]
    shot.later = sorted(t for t, _ in commits if t > limit)
    if not before:
        return shot
    stamp, shot.commit = max(before)
    shot.when = datetime.datetime.fromtimestamp(stamp, deadline.tzinfo)
    for entry in tree_entries(repo, shot.commit):
        info, _, path = entry.partition(b"\t")
        mode, kind, blob = info.split()
        parts = path.decode("utf-8", "surrogateescape").split("/")
        if parts[-1] == submissions.LAB and not any(submissions.SKIPPED.match(p) for p in parts[:-1]):
            shot.labs.append((parts, mode, blob.decode()))
    if len(shot.labs) == 1:
        parts, mode, blob = shot.labs[0]
        if mode != b"100644" and mode != b"100755":
            shot.problem = (Status.NOT_TEXT, "lab04_attention.cpp in commit %s is not a file (a link, or a "
                            "submodule)" % shot.commit[:12])
        elif int(git(repo, "cat-file", "-s", blob)) > submissions.MAX_BYTES:
            shot.problem = (Status.FILE_TOO_LARGE, "the submitted file has more than the %d bytes a lab may have"
                            % submissions.MAX_BYTES)
        else:
            shot.data = git(repo, "cat-file", "blob", blob, limit=submissions.MAX_BYTES)
    shot.labs = ["/".join(parts) for parts, _, _ in shot.labs]
    return shot


def submission_tags(repo):
    """([(time, commit)] of the repository's submission tags of the form Classroom 50's workflow
    writes, whose hash is their commit's; [names of other submit/ tags, not counted]; [a tag of
    that form on another commit than the one it names, in words: a contradiction])."""
    listed = git(repo, "for-each-ref", "--format=%(refname:strip=2)%00%(objectname)%00%(*objectname)",
                 "refs/tags/submit/", limit=1 << 22).decode("utf-8", "surrogateescape")
    counted, ignored, mismatched = [], [], []
    for line in listed.splitlines():
        name, tagged, peeled = (line.split("\0") + ["", ""])[:3]
        commit = peeled or tagged
        m = SUBMIT_TAG_FORM.fullmatch(name)
        when = None
        if m:
            try:
                when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H-%M-%SZ").replace(tzinfo=datetime.timezone.utc)
            except ValueError:
                pass
        if when is None:
            ignored.append(submissions.readable(name)[:80])
        elif not commit.startswith(m.group(2)):
            mismatched.append("tag %s names commit %s but is on commit %s" % (name, m.group(2), commit[:7]))
        else:
            counted.append((int(when.timestamp()), commit))
    return counted, ignored, mismatched


def tag_contradictions(repo, tags):
    """The submission tags' times that contradict the commits they are on, in words: a tag
    older than its commit's committer date, and one commit tagged at two different times.
    (The commits' dates come from one git command, however many tags a student pushes.)"""
    said, times = [], {}
    for when, commit in tags:
        times.setdefault(commit, set()).add(when)
    if not times:
        return said
    listed = git(repo, "rev-list", "--timestamp", "-n", str(MAX_COMMITS), "--all", limit=64 * MAX_COMMITS).decode()
    dated = {h: int(t) for t, h in (line.split() for line in listed.splitlines())}
    for commit in sorted(times):
        first = min(times[commit])
        if commit in dated and first < dated[commit]:
            said.append("commit %s is dated %s, after its submit/ tag's time %s" % (
                commit[:7], utc(dated[commit]), utc(first)))
        if len(times[commit]) > 1:
            said.append("commit %s has %d submit/ tags of different times (%s)" % (
                commit[:7], len(times[commit]), ", ".join(utc(t) for t in sorted(times[commit])[:3])))
    return said


def pushed_after_its_tag(tags, pushed):
    """Tags whose time comes before the server's first push of their commit, in words."""
    first = {}
    for when, commit in pushed:
        first[commit] = min(first.get(commit, when), when)
    return ["commit %s was first pushed at %s, after its submit/ tag's time %s" % (commit[:7], utc(first[commit]), utc(t))
            for t, commit in sorted(tags) if commit in first and t < first[commit]]


def utc(stamp):
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


# --- the server's record of pushes -----------------------------------------------------------

MAX_RECORD_BYTES = 64 << 20  # a record of a lab's pushes is a few kB a push


def read_pushes(path):
    """GitHub's record of one repository's pushes, as `gh api --paginate` saves the repository
    activity API's answer (GET /repos/{owner}/{repo}/activity): a JSON array of activities, or
    one array per page, one after the other (--paginate) or in an array (--slurp). Each
    activity that brought commits (PUSH_TYPES) gives (time, the commit after it, its ref).
    Bad, in words, when the file cannot be read or is not of that shape."""
    import json
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECORD_BYTES + 1)
    except OSError as e:
        raise Bad("cannot read it (%s)" % e.strerror)
    if len(data) > MAX_RECORD_BYTES:
        raise Bad("it has more than %d bytes" % MAX_RECORD_BYTES)
    try:
        text, decoder, pages, at = data.decode("utf-8"), json.JSONDecoder(), [], 0
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at == len(text):
                break
            page, at = decoder.raw_decode(text, at)
            pages.append(page)
    except (UnicodeDecodeError, ValueError) as e:
        raise Bad("it is not JSON (%s)" % str(e)[:80])
    activities = []
    for page in pages:
        if not isinstance(page, list):
            raise Bad("it is not a list of activities, as GET /repos/{owner}/{repo}/activity answers")
        for item in page:
            activities += item if isinstance(item, list) else [item]  # (--slurp: a list of pages)
    found = []
    for a in activities:
        if not (isinstance(a, dict) and isinstance(a.get("timestamp"), str) and isinstance(a.get("after"), str)
                and isinstance(a.get("ref"), str) and isinstance(a.get("activity_type"), str)):
            raise Bad("an activity has no timestamp, after, ref or activity_type, as GitHub's documented answer has")
        if a["activity_type"] not in PUSH_TYPES:
            continue
        if not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", a["after"]):
            raise Bad("an activity's after is not a commit's hash (%r)" % a["after"][:50])
        try:
            when = datetime.datetime.fromisoformat(a["timestamp"].replace("Z", "+00:00"))
        except ValueError:
            raise Bad("an activity's timestamp is not an ISO 8601 time (%r)" % a["timestamp"][:40])
        if when.tzinfo is None:
            raise Bad("an activity's timestamp names no time zone (%r)" % a["timestamp"][:40])
        found.append((int(when.timestamp()), a["after"], a["ref"]))
    return found


def pushes_of(repo, pushes):
    """([(time, commit)] of the pushes that brought commits to the branch the clone has checked
    out (any branch, when it has none checked out), each commit one the clone has; why the
    record was not used ("" when it was, or none was given))."""
    if pushes is None:
        return [], ""
    if isinstance(pushes, Bad):
        return [], "its record of pushes was not used: %s" % pushes
    branch = git(repo, "rev-parse", "--symbolic-full-name", "HEAD").decode("utf-8", "surrogateescape").strip()
    branch = branch if branch.startswith("refs/heads/") else ""  # ("HEAD": none checked out)
    on_branch = [(t, c) for t, c, ref in pushes if ref == branch or not branch and ref.startswith("refs/heads/")]
    if not on_branch:
        return [], "its record of pushes has no push of %s" % (branch or "a branch")
    known = set(git(repo, "rev-list", "-n", str(MAX_COMMITS), "--all", limit=64 * MAX_COMMITS).decode().split())
    kept = [(t, c) for t, c in on_branch if c in known]
    if not kept:
        return [], "its record of pushes names no commit of this repository (another repository's record?)"
    return kept, ""


def mark(row, student, deadline, penalty, graded):
    """Fills a gradebook row's (a row.Row's) late and commit columns for student, and takes the penalty
    from its score when the lab was graded (graded): a repository read at the deadline is on
    time (its later commits are said, not graded); Canvas's _late counts as one day;
    Gradescope's :created_at: is compared with the deadline."""
    shot, said, taken, source = student.snapshot, "", 0.0, None
    row.commit = shot.commit_text() if shot is not None else ""
    if shot is not None:
        source = shot.source if shot.commit or shot.later else None
        what = {SUBMIT_TAG: "submission", TRUSTED_TAG: "submission", SERVER_PUSH: "push"}.get(shot.source, "commit")
        if shot.later and shot.commit:
            said = "on time (graded at the deadline); %d later %s%s not graded, the last %s after the deadline" % (
                len(shot.later), what, "s" * (len(shot.later) > 1), span(shot.later[-1] - deadline.timestamp()))
        elif shot.later:
            said = "%d %s%s, all after the deadline (the first %s after it)" % (
                len(shot.later), what, "s" * (len(shot.later) > 1), span(shot.later[0] - deadline.timestamp()))
        elif shot.commit:
            said = "on time"
        if source and said:
            said += " (%s)" % SOURCE_WORDS[source]
        if shot.ignored:
            said += "%s%d submit/ tag%s not of the form Classroom 50's workflow writes, not counted (%s)" % (
                "; " if said else "", len(shot.ignored), "s" * (len(shot.ignored) > 1), ", ".join(shot.ignored[:3]))
        if shot.record:
            said += "%s%s" % ("; " if said else "", shot.record)
        if shot.contradictions:
            said += "%stimes that contradict each other: %s" % ("; " if said else "", "; ".join(shot.contradictions[:3]))
    elif student.marked_late:
        said, taken = lateness(DAY, penalty, row.max_score, known=False)
        source = LMS_MARK
    elif student.submitted is not None and deadline is not None:
        when = submitted_time(student.submitted)
        if when is None:
            said = "not known: the time of submission %r cannot be read" % str(student.submitted)[:40]
        else:
            said, taken = lateness((when - deadline).total_seconds(), penalty, row.max_score)
            said, source = said or "on time", UPLOAD_TIME
    elif deadline is not None and shot is None and not student.unreadable:
        said = "not known: no history or time of submission"
    if source and said and SOURCE_WORDS[source] and shot is None:
        said += " (%s)" % SOURCE_WORDS[source]
    row.time_source = source
    row.contradictions = list(shot.contradictions) if shot is not None else []
    if not graded:
        taken = 0.0
    if taken:
        row.score = max(0.0, row.score - taken)
    notes = ["Graded: commit %s, the last at or before the deadline." % row.commit] if row.commit else []
    notes += ["Late: %s%s." % (said, "; your score is %g" % row.score if taken else "")] if said else []
    if notes:
        row.feedback = row.feedback + [""] + notes
    row.late = said


def submitted_time(value):
    """Gradescope's :created_at: (YAML gives a datetime, or text such as
    2026-12-01 10:02:03.123456000 -0500) as an aware datetime, or None."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)  # YAML's zone-less is UTC
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.\d+)? ?(Z|[+-]\d\d:?\d\d)?", str(value).strip())
    if not m:
        return None
    zone = m.group(3) or "+00:00"
    zone = "+00:00" if zone == "Z" else zone if ":" in zone else zone[:3] + ":" + zone[3:]
    return datetime.datetime.fromisoformat("%sT%s%s" % (m.group(1), m.group(2), zone))
