"""row.py: a student's result, as the class grader keeps it: a Row, with named fields and a
status from status.py. one_student.py makes it, deadlines.py marks it late, and every file is
rendered from it (gradebook.py: grades.csv, the feedback, summary.md, class.json, Gradescope's
results.json; class.json is what Classroom 50's autograder and --merge read back).

class.json holds each row as a JSON object of these fields, in this order (to_json); a row read
back (from_json) is the same Row.
"""
import dataclasses
from typing import Optional

from lab04.checker import cases
from lab04.grader.status import NOT_GRADED, Status


@dataclasses.dataclass
class Row:
    student: str  # the student's name, as the class names them
    max_score: float  # the lab's points
    id: str = ""  # the LMS's identifier, or "" (submissions.py)
    label: str = ""  # how the gradebook names them, where two share a name: the name and the id
    score: float = 0.0  # less a late penalty
    steps: list = dataclasses.field(default_factory=lambda: [0.0] * cases.STEPS)  # each STEP's points
    right: list = dataclasses.field(default_factory=lambda: [False] * cases.STEPS)  # each STEP judged right
    reached: list = dataclasses.field(default_factory=lambda: [False] * cases.STEPS)  # each STEP got to
    status: Optional[Status] = None  # what became of the lab (set by one_student.py), or None before
    diagnosis: str = ""  # one line: the known mistake, what stopped the lab, or why it was not graded
    mistakes: tuple = ()  # the known mistakes' ids, one or two (class.json's "mistake": "a+b", or null)
    feedback: list = dataclasses.field(default_factory=list)  # the lines the student reads
    compile_isolation: str = ""  # how its compile was isolated (compile_sandbox.ISOLATION's key)
    run_sandbox: str = ""  # how its runs were isolated: a runner's user ("user"), or the checker's sandbox's mode
    isolation: str = ""  # how its runs were isolated, and its compile, in words (each file writes its own label)
    own_code: Optional[list] = None  # its own lines, [(number, line)], for the similarity check
    seconds: Optional[dict] = None  # what its compile, its runs and its diagnosis took
    step_lines: Optional[list] = None  # each STEP's line of the report, for Gradescope
    blank: Optional[int] = None  # the first STEP left blank (a starter's TODO), or None
    same_tensor: list = dataclasses.field(default_factory=list)  # copy-paste slips named
    wrong_numbers: Optional[dict] = None  # what it printed where it went wrong: {step, name, key}
    late: str = ""  # how late, and what was taken (deadlines.py)
    commit: str = ""  # the commit graded, with a deadline
    time_source: Optional[str] = None  # what timed it against the deadline (deadlines.py)
    contradictions: list = dataclasses.field(default_factory=list)  # its times that cannot all be true, in words

    def __post_init__(self):
        """A row's status is a Status, and its mistakes a tuple, however they were given (the
        words of a status: ValueError for words that are none)."""
        if self.status is not None:
            self.status = Status(self.status)
        self.mistakes = tuple(self.mistakes)

    @property
    def name(self):
        """How the gradebook names the row's student."""
        return self.label or self.student

    @property
    def key(self):
        """The row's student as an LMS export is matched against: (name, id)."""
        return (self.student, self.id)

    @property
    def graded(self):
        """Whether the lab was graded (its points judged), whatever it scored."""
        return self.status not in NOT_GRADED

    def to_json(self):
        data = dataclasses.asdict(self)
        return {("mistake" if k == "mistakes" else k): ("+".join(v) or None if k == "mistakes" else v)
                for k, v in data.items()}

    @classmethod
    def from_json(cls, data):
        """The Row a class.json holds: its fields (others, of an older grader, ignored)."""
        known = {f.name for f in dataclasses.fields(cls)}
        mistakes = tuple(data["mistake"].split("+")) if data.get("mistake") else ()
        return cls(**{k: v for k, v in data.items() if k in known}, mistakes=mistakes)
