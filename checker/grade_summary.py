#!/usr/bin/env python3
"""grade_summary.py: a grade as Markdown, for a CI job's summary (lab04/checker/grade_summary.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.checker.grade_summary import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
