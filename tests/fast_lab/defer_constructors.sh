#!/bin/sh
# defer_constructors.sh OBJCOPY READELF IN OUT: the object IN as OUT, for a module the tests' lab
# server loads once (server.cpp): its constructors moved out of the loader's sight, from
# .init_array to a section of its own, lab04_init_array, which module_init.cpp's
# lab04_module_init() runs in each child, before main. An object with constructors the move
# would reorder (by priority: .init_array.N, or old .ctors) is copied as it is: a module
# without a lab04_init_array section is loaded in each child, its constructors run by the
# loader there.
set -eu
[ $# -eq 4 ] || { echo "usage: defer_constructors.sh OBJCOPY READELF IN OUT" >&2; exit 2; }
objcopy=$1 readelf=$2 in=$3 out=$4
if "$readelf" -SW "$in" | grep -Eq '[[:space:]]\.(init_array\.|ctors|preinit_array)'; then
  cp "$in" "$out"
else
  "$objcopy" --rename-section .init_array=lab04_init_array "$in" "$out"
fi
