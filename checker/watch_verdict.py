#!/usr/bin/env python3
"""watch_verdict.py: the watch's verdict on each saved edit (lab04/checker/watch_verdict.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.checker.watch_verdict import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
