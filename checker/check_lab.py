#!/usr/bin/env python3
"""check_lab.py: checks a build of the lab step by step, and names a known mistake (lab04/checker/check_lab.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.checker.check_lab import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
