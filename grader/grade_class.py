#!/usr/bin/env python3
"""grade_class.py: grades a whole class (lab04/grader/grade_class.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.grader.grade_class import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
