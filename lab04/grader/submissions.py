"""submissions.py: finds each student's lab04_attention.cpp in a folder of submissions.

The shapes it reads (the first that fits the folder's top level):
  Gradescope's export   submission_metadata.yml maps each submission_<id> folder to its
                        submitters (:name:, :sid:, :email:); each submitter gets a row
                        (student = sid, else email, else name), so each member of a group;
                        each submission's :created_at: is kept, for the late column
  Canvas's download     files <login>_<id>_<id>_lab04_attention.cpp: student <login>; a
                        file <login>_late_... or <login>_LATE_... is marked late
  a file per student    <student>.cpp at the top level
  a folder per student  the lab anywhere inside (a cloned repository, a Moodle download's
                        "<name>_<id>_assignsubmission_file_" folder: student <name>); an
                        empty folder is a student with no lab
Folders named .git, build or starter* inside a student's folder are not searched. The search is
bounded (MAX_DEPTH folders deep, MAX_ENTRIES entries): a folder past that is its student's row,
"folder too large", and the class goes on.

Each student also has the identifier the LMS gives, where it gives one: Canvas's user id (the
first number of the file's name, the "ID" column of Canvas's gradebook), Moodle's participant
id (the number in the folder's name, "Participant <id>" in its grading worksheet), Gradescope's
sid or email. Two students of one name are two rows, told apart by it; one name and one
identifier (or none) with several labs is one student, whose row says so.

Names are bytes from the file system: whatever they hold (not UTF-8, control characters,
newlines), a student's name is text with those escaped (\xe9, \n), never an error.
"""
import os
import re
import stat

from lab04.checker import cases
from lab04.grader.status import Status

LAB = "lab04_attention.cpp"
MAX_BYTES = 1 << 20  # a lab is about 20 kB; a file larger than this is not graded
CANVAS = re.compile(r"^(?P<login>[^_]+)(?P<late>_(?:late|LATE))?_(?P<id>\d+)_\d+_(?P<file>.+\.cpp)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_\w*?_?$")
SKIPPED = re.compile(r"^(\.git|\.github|build.*|starter.*|node_modules)$")


class Bad(Exception):
    """The folder cannot be read as a class: one line for the usage error."""


def readable(name):
    """A name from the file system as text anyone can read: bytes that are not UTF-8 as
    \\xNN, control characters as \\n, \\t or \\xNN; nothing else changes."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return cases.escaped(name, named={"\n": "\\n", "\t": "\\t", "\r": "\\r"})


class Student:
    def __init__(self, name, labs, shape, folder=None, ident="", own=None):
        self.name, self.labs, self.shape = readable(name), labs, shape
        self.id = readable(ident)  # the LMS's identifier, or ""
        self.folder = folder  # the class's folder: paths are said from there
        self.own = own  # the student's own folder (a link may stay inside it), or None
        self.text = None  # the lab, read once by problem(): no later step reads the original
        self.marked_late = False  # Canvas's file name says late
        self.submitted = None  # when the LMS says it was submitted (Gradescope's :created_at:), or None
        self.snapshot = None  # a repository read at the deadline (deadlines.Snapshot), or None
        self.unreadable = None  # why its history cannot be read, or None
        self.too_large = None  # why its folder was not searched to the end (TooLarge), or None

    @property
    def label(self):
        """The name, with the identifier where another student has the same name."""
        return "%s (%s)" % (self.name, self.id) if getattr(self, "homonym", False) and self.id else self.name

    def problem(self):
        """Why this student's lab cannot be graded (the row's status and its reason), or None."""
        if self.unreadable:
            return Status.HISTORY_UNREADABLE, "the repository's history cannot be read: %s" % self.unreadable
        if self.too_large and self.snapshot is None:
            return Status.FOLDER_TOO_LARGE, "the submission's folder was not searched to the end: %s" % self.too_large
        shot, labs = self.snapshot, self.labs
        if shot is not None:
            if shot.commit is None:
                return Status.NONE_BEFORE_DEADLINE, "the repository has no commit at or before the deadline"
            labs, at = shot.labs, " in commit %s, the last before the deadline" % shot.commit[:12]
        if not labs:
            return Status.NO_LAB, "no lab04_attention.cpp was found in the submission" + (at if shot else "")
        if len(labs) > 1:
            return Status.MORE_THAN_ONE_LAB, "%d labs were found (%s): submit one" % (
                len(labs), ", ".join(readable(p if shot else os.path.relpath(p, self.folder or "/")) for p in labs[:4]))
        if shot is not None:
            data, problem = (None, shot.problem) if shot.problem else (shot.data, None)
        else:
            data, problem = read_once(labs[0], self.own)
        if problem:
            return problem
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or "\0" in text:
            return Status.NOT_TEXT, "the submitted file is not text (UTF-8 without NUL bytes)"
        if not text:
            return Status.EMPTY_FILE, "the submitted file is empty"
        self.text = text
        return None


def read_once(path, own):
    """The submitted file's bytes, read by the grader without following a link out of the
    student's own folder (own; None: no link at all): (data, None) or (None, (status, why))."""
    real = os.path.realpath(path)
    if real != os.path.abspath(path) and (own is None or not real.startswith(os.path.realpath(own) + os.sep)):
        return None, (Status.LINK_OUTSIDE, "the submitted lab04_attention.cpp is a symbolic link to "
                      "a file outside the submission; submit the file itself")
    try:  # O_NONBLOCK: a FIFO in place of the file cannot hold the grader
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return None, (Status.NOT_TEXT, "the submitted file cannot be read (%s)" % e.strerror)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None, (Status.NOT_TEXT, "the submitted lab04_attention.cpp is not a regular file")
        data = f.read(MAX_BYTES + 1)
    if not data:
        return None, (Status.EMPTY_FILE, "the submitted file is empty")
    if len(data) > MAX_BYTES:
        return None, (Status.FILE_TOO_LARGE, "the submitted file has more than the %d bytes a lab may have" % MAX_BYTES)
    return data, None


MAX_DEPTH = 32  # folders inside a student's folder; a repository's lab sits a few deep
MAX_ENTRIES = 100000  # files and folders searched in one student's folder


class TooLarge(Exception):
    """A student's folder past the search's bounds: that row's status, never the class's end."""


def find_labs(folder):
    """Every lab04_attention.cpp under folder, as paths relative to it, sorted. The search is a
    loop, not a recursion, and bounded: a folder more than MAX_DEPTH deep, or more than
    MAX_ENTRIES entries, raises TooLarge (a committed file 1,100 folders deep ended the class
    with a RecursionError)."""
    found, entries, stack = [], 0, [("", 0)]
    while stack:
        relative, depth = stack.pop()
        try:
            listing = sorted(os.scandir(os.path.join(folder, relative)), key=lambda e: e.name)
        except OSError:
            continue
        entries += len(listing)
        if entries > MAX_ENTRIES:
            raise TooLarge("it holds more than %d files and folders" % MAX_ENTRIES)
        for e in listing:
            path = os.path.join(relative, e.name)
            if e.is_dir(follow_symlinks=False):
                if SKIPPED.match(e.name):
                    continue
                if depth + 1 > MAX_DEPTH:
                    raise TooLarge("it has folders more than %d deep (%s/...)" % (MAX_DEPTH, readable(path[:60].rstrip("/"))))
                stack.append((path, depth + 1))
            elif e.name == LAB and not (e.is_symlink() and e.is_dir()):
                found.append(path)
    return sorted(found, key=lambda p: (p.count(os.sep), p))


def search(path):
    """The labs under path (absolute) and why the search stopped (None: it did not)."""
    try:
        return [os.path.join(path, p) for p in find_labs(path)], None
    except TooLarge as e:
        return [], str(e)


def read_yaml(path):
    try:
        import yaml
    except ImportError:
        raise Bad("reading %s needs PyYAML: apt-get install python3-yaml" % path)
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise Bad("%s cannot be read as YAML: %s" % (path, str(e).splitlines()[0][:120]))
    if not isinstance(data, dict):
        raise Bad("%s does not map submissions to their submitters" % path)
    return data


def field(d, name):
    """A field of Gradescope's YAML, whose keys are Ruby symbols (":sid") or plain."""
    if not isinstance(d, dict):
        return None
    value = d.get(":" + name, d.get(name))
    return str(value).strip() if value not in (None, "") else None


def gradescope(folder):
    data = read_yaml(os.path.join(folder, "submission_metadata.yml"))
    students = []
    for sub, meta in sorted(data.items(), key=lambda kv: str(kv[0])):
        path = os.path.join(folder, str(sub))
        labs, too_large = search(path) if os.path.isdir(path) else ([], None)
        submitters = (meta.get(":submitters") or meta.get("submitters") or []) if isinstance(meta, dict) else []
        for who in submitters:
            name = field(who, "sid") or field(who, "email") or field(who, "name")
            if name:
                s = Student(name, labs, "Gradescope export", ident=field(who, "sid") or field(who, "email") or "",
                            own=path)
                s.too_large = too_large
                s.submitted = meta.get(":created_at", meta.get("created_at"))
                students.append(s)
    return students


def student_folders(folder, names):
    students = []
    for name in names:
        path = os.path.join(folder, name)
        m = MOODLE.match(name)
        labs, too_large = search(path)
        students.append(Student(m.group("name") if m else name, labs, "a folder per student",
                                ident=m.group("id") if m else "", own=path))
        students[-1].too_large = too_large
    # Cloned repositories share their assignment's prefix (lab04-attention-<login>): dropped.
    prefix = os.path.commonprefix([s.name for s in students]) if len(students) > 1 else ""
    cut = prefix.rfind("-") + 1 if "-" in prefix else 0
    if cut and all(len(s.name) > cut for s in students):
        for s in students:
            s.name = s.name[cut:]
    return students


def find_students(folder):
    """The class in folder: a list of Student, one per row, sorted by name; several labs or
    submissions of one name become one Student with all of them (its row says so)."""
    if not os.path.isdir(folder):
        raise Bad("no folder %r: SUBMISSIONS must be a folder of submissions" % folder)
    entries = sorted(e for e in os.listdir(folder) if not e.startswith("."))
    files = [e for e in entries if os.path.isfile(os.path.join(folder, e))]
    dirs = [e for e in entries if os.path.isdir(os.path.join(folder, e)) and not os.path.islink(os.path.join(folder, e))]
    if "submission_metadata.yml" in files:
        students = gradescope(folder)
    else:
        students = []
        for name in files:
            m = CANVAS.match(name)
            if m:
                s = Student(m.group("login"), [os.path.join(folder, name)], "Canvas download", ident=m.group("id"))
                s.marked_late = bool(m.group("late"))
                students.append(s)
            elif name.endswith(".cpp"):
                students.append(Student(name[:-4], [os.path.join(folder, name)], "a file per student"))
        students += student_folders(folder, dirs)
    merged = {}
    for s in students:  # one row per name and identifier
        s.folder = folder
        key = (s.name, s.id)
        if key in merged:
            merged[key].labs = sorted(set(merged[key].labs) | set(s.labs))
            merged[key].marked_late |= s.marked_late
        else:
            merged[key] = s
    names = [name for name, _ in merged]
    for s in merged.values():
        s.homonym = names.count(s.name) > 1
    if not merged:
        raise Bad("%r holds nothing to grade: expected a folder per student, Canvas's "
                  "<login>_<id>_<id>_lab04_attention.cpp files, <student>.cpp files, or Gradescope's "
                  "export (submission_metadata.yml)" % folder)
    return [merged[n] for n in sorted(merged)]
