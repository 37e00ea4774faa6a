#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: it installs what
# the lab needs to build and be graded (clang and lld, CMake and Ninja, LibTorch, OpenBLAS,
# and PyTorch for the checker's reference), from the distribution's packages.
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends g++ clang lld make ninja-build cmake libtorch-dev \
  libopenblas0 python3 python3-torch
