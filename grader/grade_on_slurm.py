#!/usr/bin/env python3
"""grade_on_slurm.py: grades a class on a Slurm cluster, as a job array (lab04/grader/grade_on_slurm.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project: lab04/
from lab04.grader.grade_on_slurm import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
