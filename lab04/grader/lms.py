"""lms.py: the gradebooks of Canvas and Moodle, read from their own exports and written back
in the shape each imports as it is.

Canvas (--canvas-gradebook EXPORT.csv, Grades, Export): a header (Student, ID, SIS User ID,
SIS Login ID, sometimes Integration ID and Root Account, Section, custom columns, an assignment
per column, "Name (id)", then computed totals), a "Points Possible" row, sometimes a "Manual
Posting" row, then a row per student. Canvas imports that same file back, matching each row by
its ID, and takes a column whose header has no "(id)" as a new assignment. So canvas-import.csv
is the export itself, every row and column as read, with one column filled:

  the lab's column   --canvas-column NAME names it (a name the export lacks is refused); else
                     the one assignment whose name says Lab 04 (lab04, Lab 4); else a new
                     column "Lab 04: self-attention", which Canvas creates as an assignment
                     worth the lab's points (written in its Points Possible row)
  the points         scaled to the column's Points Possible (7 of 7 in a 10-point assignment
                     is 10); a row not graded (no lab, a grader error) is left as Canvas had it

Moodle (--moodle-gradebook EXPORT.csv, Grades, Export, Plain text file): a row per student with
First name, Last name, ID number, Email address and the grade items. Moodle's CSV import (Grades,
Import, CSV file) maps one column to a user field and each other column to a grade item; one
identifier it cannot find cancels the whole import. So moodle-import.csv holds only the students
matched, identified by their email address (Moodle's export always has it, and its import maps it
to "Email address" as it is; a username is not in the export, and the ID number is often empty),
and one column, "Lab 04: self-attention", in percent of the lab's points: "New grade item" takes
it with Moodle's default maximum of 100. A row not graded is left out (a blank would be no grade).

Matching, for both: a grade is written into an LMS student's row only when nothing says it
could be another's. A gradebook row (its student's name, and the identifier the submission
gave, submissions.py: Canvas's ID, Gradescope's sid or email, a cloned repository's folder)
is looked up in every identity column of every LMS student (Canvas: ID, SIS User ID, SIS
Login ID, Integration ID; Moodle: Email address, its part before the @, ID number, Username),
case aside; where none of them holds it, by the full name (Moodle's download names folders
so). It matches when what it fits is one LMS student, the name (where it fits anyone) does not
say another, and no other gradebook row fits that student. Anything else (an identifier in two
students' columns, two students of one name, two rows for one student) matches no one: those
rows are listed in the summary with the reason, to be entered by hand, and the rest of the class
is written. Display names may repeat; Moodle's import names each student by email address.
What cannot be told from the export is left to the instructor: a cloned repository's folder is
the student's GitHub login, which the student chose; if it equals a classmate's login and
nothing else of either says otherwise, it matches the classmate (the summary lists the
classmate's own repository as not in the export).

Canvas's "Points Possible" row (the assignment's maximum, which the scale reads and a new
column gets) is the row Canvas writes there: before the first student, with no ID, SIS or
Section, and "Points Possible" in its first cell; never a student's row, whatever the name.
"""
import csv
import io
import re

LAB_COLUMN = "Lab 04: self-attention"
LAB_NAME = re.compile(r"\blab[ _-]?0?4\b", re.I)
ASSIGNMENT = re.compile(r"^(?P<name>.*) \((?P<id>\d+)\)$")
CANVAS_TOTALS = re.compile(r"(Current|Final|Override) (Score|Points|Grade|Status)")
MAX_BYTES = 64 << 20


class Bad(Exception):
    """An export that cannot be used: one line for the usage error."""


def read_table(path, what):
    """A CSV file's rows, whether it began with a byte-order mark, and its separator."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise Bad("%s cannot be read: %s" % (path, e.strerror))
    if len(data) > MAX_BYTES:
        raise Bad("%s is larger than %d MB: give %s" % (path, MAX_BYTES >> 20, what))
    try:
        text = data.decode("utf-8-sig")
        first = text.split("\n", 1)[0]
        separator = ";" if first.count(";") > first.count(",") else ","
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=separator))
    except (UnicodeDecodeError, csv.Error) as e:
        raise Bad("%s is not a CSV file in UTF-8 (%s): give %s" % (path, str(e)[:80], what))
    return rows, data.startswith(b"\xef\xbb\xbf"), separator


def cell(row, i):
    return row[i].strip() if i is not None and i < len(row) else ""


def words(text):
    return " ".join(text.lower().split())


class Export:
    """An LMS's export: its rows, the rows that are students, each student's name and identities."""
    kind = ""

    def __init__(self, path, rows, bom, separator):
        self.path, self.rows, self.bom, self.separator = path, rows, bom, separator
        self.header = rows[0]
        self.students = []  # indexes of the rows that are students
        self.column = None  # the lab's column (Canvas)

    def column_of(self, name):
        return self.header.index(name) if name in self.header else None

    def name(self, i):
        raise NotImplementedError

    def identities(self, i):
        """What identifies row i, as the gradebook may hold it: ([identifier], [name])."""
        raise NotImplementedError

    def match(self, students):
        """({(name, id) of a gradebook row: the export's row index}, the names of the export's
        students nobody matched, {(name, id): why it matched no one}). students: (name, id)."""
        by_identity, by_name = {}, {}
        for i in self.students:
            ids, names = self.identities(i)
            for value in ids:
                by_identity.setdefault(value.lower(), set()).add(i)
            for value in names:
                by_name.setdefault(words(value), set()).add(i)
        fits, why = {}, {}
        for name, ident in students:
            values = {v.lower() for v in (ident, name) if v}
            hits = set().union(*(by_identity.get(v, set()) for v in values))
            named = by_name.get(words(name), set()) if name else set()
            if len(hits) > 1:
                why[(name, ident)] = "fits %d students of %s's export (%s)" % (
                    len(hits), self.kind, ", ".join(self.name(h) for h in sorted(hits)[:3]))
            elif hits and named and not hits & named:
                why[(name, ident)] = "its identifier fits %s and its name %s" % (
                    self.name(min(hits)), self.name(min(named)))
            elif not hits and len(named) > 1:
                why[(name, ident)] = "%d students of %s's export have that name and nothing else tells them " \
                    "apart" % (len(named), self.kind)
            elif hits or named:
                fits[(name, ident)] = min(hits or named)
        claimed = {}
        for key, row in fits.items():
            claimed.setdefault(row, []).append(key)
        found = {}
        for row, keys in claimed.items():
            if len(keys) == 1:
                found[keys[0]] = row
                continue
            for key in keys:
                why[key] = "%s's student %s fits %d rows of the class (%s)" % (
                    self.kind, self.name(row), len(keys), ", ".join(k[0] for k in keys[:3]))
        taken = set(found.values())
        return found, [self.name(i) for i in self.students if i not in taken], why

    def text(self, rows):
        out = io.StringIO()
        csv.writer(out, delimiter=self.separator, lineterminator="\r\n").writerows(rows)
        return ("\ufeff" if self.bom else "") + out.getvalue()


class Canvas(Export):
    kind = "Canvas"
    NEEDED = ("ID", "Section")

    def __init__(self, *a):
        super().__init__(*a)
        self.where = {n: self.column_of(n) for n in ("Student", "LastName", "FirstName", "ID", "SIS User ID",
                                                      "SIS Login ID", "Integration ID", "Section")}
        self.students = [i for i, r in enumerate(self.rows[1:], 1) if cell(r, self.where["ID"]).isdigit()]
        first = min(self.students, default=len(self.rows))
        identity = [self.where[n] for n in ("ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section")]
        self.points_row = next((i for i in range(1, first) if cell(self.rows[i], 0) == "Points Possible"
                                and not any(cell(self.rows[i], c) for c in identity)), None)

    def name(self, i):
        r = self.rows[i]
        return cell(r, self.where["Student"]) or ("%s, %s" % (cell(r, self.where["LastName"]),
                                                               cell(r, self.where["FirstName"])))

    def identities(self, i):
        r, w = self.rows[i], self.where
        ids = [cell(r, w[n]) for n in ("ID", "SIS User ID", "SIS Login ID", "Integration ID")]
        name = self.name(i)  # Canvas's "Last, First", and First Last as a download names it
        last, _, first = name.partition(",")
        return [v for v in ids if v], [name] + ([first + " " + last] if first else [])

    def choose_column(self, name=None):
        """The lab's column: named, the one that says Lab 04, or a new one."""
        header = self.header
        assignments = [i for i, h in enumerate(header) if i > self.where["Section"] and not CANVAS_TOTALS.search(h)]
        if name:
            found = [i for i in assignments if header[i] == name or (ASSIGNMENT.match(header[i]) and
                                                                       ASSIGNMENT.match(header[i]).group("name") == name)]
            if len(found) > 1:
                raise Bad("%s has %d columns named %r: name the one to fill with its id, as its header says (%s)"
                          % (self.path, len(found), name, header[found[0]]))
            if not found:
                raise Bad("%s has no assignment named %r: give a name its header has (%s), or leave --canvas-column "
                          "out to fill the one that says Lab 04, or add one" % (
                              self.path, name, ", ".join(header[i] for i in assignments[:4]) or "it has none"))
        else:
            found = [i for i in assignments if LAB_NAME.search(header[i])]
            if len(found) > 1:
                raise Bad("%s has %d assignments that could be Lab 04 (%s): name the one to fill with "
                          "--canvas-column" % (self.path, len(found), ", ".join(header[i] for i in found[:3])))
        self.column = found[0] if found else None
        self.new_name = name or LAB_COLUMN

    def filled(self, rows, matched, max_score):
        """The export with the lab's column filled for the gradebook's rows that were graded
        (row.py's Rows): (text, the column's name, rows left out)."""
        out = [list(r) + [""] * (len(self.header) - len(r)) for r in self.rows]
        column = self.column
        if column is None:
            column = len(self.header)
            for r in out:
                r.append("")
            out[0][column] = self.new_name
        possible = None
        if self.points_row is not None:  # Canvas's own row, found where Canvas writes it
            r = out[self.points_row]
            try:
                possible = float(r[column].replace(",", "."))
            except ValueError:
                r[column] = "%g" % max_score
        scale = possible / max_score if possible and max_score else 1.0
        for r in rows:
            i = matched.get(r.key)
            if i is not None and r.graded:
                out[i][column] = "%g" % round(r.score * scale, 2)
        return self.text(out), out[0][column], []


class Moodle(Export):
    kind = "Moodle"
    NEEDED = ("First name", "Last name", "Email address")
    IDENTIFIER = "Email address"

    def __init__(self, *a):
        super().__init__(*a)
        self.where = {n: self.column_of(n) for n in ("First name", "Last name", "ID number", "Email address",
                                                      "Username")}
        self.students = [i for i, r in enumerate(self.rows[1:], 1) if any(c.strip() for c in r)]

    def name(self, i):
        r = self.rows[i]
        return "%s %s" % (cell(r, self.where["First name"]), cell(r, self.where["Last name"]))

    def identities(self, i):
        r, w = self.rows[i], self.where
        email = cell(r, w["Email address"])
        ids = [email, email.partition("@")[0] if "@" in email else ""]
        ids += [cell(r, w[n]) for n in ("ID number", "Username")]
        return [v for v in ids if v], [self.name(i)]

    def filled(self, rows, matched, max_score):
        """Moodle's import file: the email address and the lab's percent, for each student matched
        and graded who has an email address: (text, the column's name, the rows left out for
        want of one)."""
        out, no_email = [[self.IDENTIFIER, LAB_COLUMN]], []
        for r in rows:
            i = matched.get(r.key)
            email = cell(self.rows[i], self.where["Email address"]) if i is not None else ""
            if i is not None and r.graded and not email:
                no_email.append(r)
            elif email and r.graded:
                out.append([email, "%g" % round(100.0 * r.score / max_score if max_score else 0.0, 2)])
        return self.text(out), LAB_COLUMN, no_email


def read_export(kind, path):
    """Canvas's or Moodle's gradebook export, checked for the columns it needs."""
    what = {"canvas": "Canvas's gradebook export (Grades, Export, CSV) as Canvas wrote it",
            "moodle": "Moodle's grade export (Grades, Export, Plain text file) as Moodle wrote it"}[kind]
    cls = Canvas if kind == "canvas" else Moodle
    rows, bom, separator = read_table(path, what)
    header = rows[0] if rows else []
    missing = [n for n in cls.NEEDED if n not in header]
    if kind == "canvas" and "Student" not in header and "LastName" not in header:
        missing.insert(0, "Student")
    if missing:
        raise Bad("%s has no %s column: expected %s, whose header has %s" % (
            path, ", ".join(missing), what, ", ".join(("Student",) + cls.NEEDED if kind == "canvas" else cls.NEEDED)))
    return cls(path, rows, bom, separator)
