"""torch_python.py: this process under a Python that can import torch.

The python3 first on PATH may be a pyenv build that does not see Debian's python3-torch.
find_torch_python (beside this file) chooses one, as it does for the tests and bench/run; the
checker's front ends call with_torch() before they import anything that needs torch.
"""
import importlib.util
import os
import subprocess
import sys

from lab04 import PROJECT


class NoTorch(Exception):
    """No Python here can import torch: the message says how to get one."""


def with_torch():
    """Returns when this Python can import torch; else re-runs this script under one that can
    (os.execv: it does not return), or raises NoTorch."""
    if importlib.util.find_spec("torch") is not None:
        return
    if os.environ.get("CHECK_LAB_SEARCHED") != "1":
        os.environ["CHECK_LAB_SEARCHED"] = "1"
        found = subprocess.run(["sh", os.path.join(PROJECT, "checker", "find_torch_python")],
                               capture_output=True, text=True)
        path = found.stdout.split(" ", 1)[0]
        if found.returncode == 0 and os.path.realpath(path) != os.path.realpath(sys.executable):
            os.execv(path, [path] + sys.argv)
    raise NoTorch("no Python here can import torch: install python3-torch (Debian), or name one in LAB_PYTHON")
