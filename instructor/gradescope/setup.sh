#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: it installs what
# the lab needs to build and be graded (clang and lld, CMake and Ninja, LibTorch, OpenBLAS,
# PyTorch for the checker's reference, util-linux's setpriv and unshare for the sandbox),
# from the distribution's packages; then it builds the project once, with the starter's lab
# (the zip has no solution) and the run engine's program (lab04_runner), so that each
# submission compiles only its lab; and it runs the grader's pre-flight once
# (grader/prepare_image), so that no submission runs its own.
# AUTOGRADER_ROOT stands for /autograder, to try it elsewhere.
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
if [[ ${LAB_SKIP_INSTALL:-} != 1 ]]; then
  apt-get update
  apt-get install -y --no-install-recommends g++ clang lld make ninja-build cmake libtorch-dev \
    libopenblas0 python3 python3-torch util-linux
fi
cmake -S "$root/source" -B "$root/build" -G Ninja -DCMAKE_CXX_COMPILER=clang++
cmake --build "$root/build" --target lab04_attention lab04_runner lab04_module
# The sandbox's user must enter the project and its build (the grader hides them from each
# compile and run); it may not list or read the results.
chmod o=x "$root"
chmod o=rx "$root/source" "$root/build"
"$root/source/grader/prepare_image" "$root/build" --gradescope
