#!/usr/bin/env python3
"""project_files.py: the project's list of files (lab04/project_files.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.project_files import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
