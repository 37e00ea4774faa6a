#!/bin/sh
# record_link.sh RECORD LINK-COMMAND...: the linker launcher of lab04_link_record
# (tests/CMakeLists.txt). CMake runs it with the link command it made for the target, whatever
# the generator (Ninja, Makefiles): it writes the folder the link runs in, then each word of
# the command, each ended by a NUL byte, into RECORD, and links nothing, so that every build
# of the target writes the command again. grade_class_test.py links labs alone with it.
record=$1
shift
printf '%s\0' "$PWD" "$@" >"$record"
