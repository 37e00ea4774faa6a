#!/bin/sh
# Keeps the precompiled header in step with the headers it was made from (cmake/lab_targets.cmake says
# why). Two uses, both set up by cmake/lab_targets.cmake (lab_pch()):
#
#   pch_guard.sh --record COMPILER ARGS...   the compiler launcher of the header's target: runs
#       the compile; when it made a precompiled header (-o *.pch or *.gch), lists the headers it
#       read (from its -MF dependency file) in <header>.inputs, their inode, size and date in
#       <header>.stamp and their checksums in <header>.sums
#   pch_guard.sh TRIGGER...                  before every build: for each <header>.inputs next
#       to a TRIGGER, takes the same figures again; if a size or a date differs (a header
#       replaced, even by an older file), rewrites that TRIGGER, a header its precompiled header
#       includes, so it is rebuilt (each precompiled header has a trigger of its own). Where
#       only inodes differ, the same files may have been copied (a container's overlay file
#       system gives every file a new inode in each container made from an image; so does a
#       build copied whole), or a file may have been replaced by one of the same size and date:
#       the checksums decide, and when they agree the stamp takes the new inodes.
#
# Only POSIX sh, sed, tr, xargs, stat, cut and cksum: before every build it takes milliseconds
# (the checksums of the headers, about 15 MB, only when inodes moved: a fraction of a second).
set -eu

figures() {  # the inode, size, date and name of each file listed in $1, one per line
  tr '\n' '\0' <"$1" | xargs -0 stat -c '%i %s %Y %n' -- 2>&1 || true
}

sums() {  # the checksum, size and name of each file listed in $1, one per line
  tr '\n' '\0' <"$1" | xargs -0 cksum -- 2>&1 || true
}

without_inodes() {  # figures' lines less their first field
  cut -d ' ' -f 2-
}

if [ "${1:-}" = --record ]; then
  shift
  status=0
  "$@" || status=$?
  depfile="" output=""
  previous=""
  for argument in "$@"; do
    case $previous in
      -MF) depfile=$argument ;;
      -o) output=$argument ;;
    esac
    previous=$argument
  done
  case $output in
    *.pch | *.gch)
      if [ "$status" -eq 0 ] && [ -f "$depfile" ]; then
        # A make rule: "target: a b \" lines; "\ " is a space inside a name.
        sed -e '1s/^[^:]*: *//' -e 's/\\$//' -e 's/\\ /\x01/g' "$depfile" | tr ' ' '\n' |
          sed -e '/^$/d' | tr '\001' ' ' >"$output.inputs"
        figures "$output.inputs" >"$output.stamp"
        sums "$output.inputs" >"$output.sums"
      fi
      ;;
  esac
  exit "$status"
fi

[ $# -ge 1 ] || { echo "usage: pch_guard.sh --record COMPILER ARGS... | pch_guard.sh TRIGGER..." >&2; exit 2; }
for trigger in "$@"; do
  mkdir -p "$(dirname "$trigger")"
  [ -f "$trigger" ] || echo "// Rewritten when a header of the precompiled header changes." >"$trigger"
  for inputs in "$(dirname "$trigger")"/*.inputs; do
    [ -f "$inputs" ] || continue
    stamp=${inputs%.inputs}.stamp
    now=$(figures "$inputs")
    [ "$now" != "$(cat "$stamp" 2>/dev/null)" ] || continue
    if [ "$(printf '%s\n' "$now" | without_inodes)" = "$(cat "$stamp" 2>/dev/null | without_inodes)" ] &&
      sums "$inputs" | cmp -s - "${inputs%.inputs}.sums"; then
      printf '%s\n' "$now" >"$stamp"  # the same headers, moved: the next check is quick again
    else
      echo "lab: a header the precompiled header was made from has changed since (a system update?): rebuilding it" >&2
      printf '// Rewritten when a header of the precompiled header changes; last: %s\n' "$(date)" >"$trigger"
    fi
  done
done
