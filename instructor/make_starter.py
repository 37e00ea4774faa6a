#!/usr/bin/env python3
"""make_starter.py: makes the starter and the platforms' autograders (lab04/instructor/make_starter.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.instructor.make_starter import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
