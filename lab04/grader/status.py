"""status.py: what became of a student's lab, as a row of the gradebook says it: one of a
fixed set. Each module that gives a row its status takes it from here, and each that reads a
status compares it with these, never with words of its own. A Status is its words (a str):
grades.csv, class.json and the feedback show it as it always was.
"""
import enum


class Status(enum.StrEnum):
    # The lab ran: graded on what it printed (the first, to the end; the others stopped)
    GRADED = "graded"
    TIMED_OUT = "timed out"
    CRASHED = "crashed"
    TOO_MUCH_OUTPUT = "too much output"
    FAILED_TO_RUN = "failed to run"
    # It did not build: 0 points, with the compiler's messages
    DID_NOT_COMPILE = "did not compile"
    COMPILE_LIMIT = "did not compile (limit)"
    # Not graded: no points judged (NOT_GRADED)
    GRADER_ERROR = "grader error"
    NO_LAB = "no lab"
    MORE_THAN_ONE_LAB = "more than one lab"
    EMPTY_FILE = "empty file"
    FILE_TOO_LARGE = "file too large"
    NOT_TEXT = "not a text file"
    LINK_OUTSIDE = "link outside the submission"
    HISTORY_UNREADABLE = "history unreadable"
    NONE_BEFORE_DEADLINE = "no submission before the deadline"
    FOLDER_TOO_LARGE = "folder too large"


# The statuses of a row with no grade: the lab was not found, not readable, or the grader failed.
NOT_GRADED = frozenset({Status.GRADER_ERROR, Status.NO_LAB, Status.MORE_THAN_ONE_LAB, Status.EMPTY_FILE,
                        Status.FILE_TOO_LARGE, Status.NOT_TEXT, Status.LINK_OUTSIDE, Status.HISTORY_UNREADABLE,
                        Status.NONE_BEFORE_DEADLINE, Status.FOLDER_TOO_LARGE})
