#!/usr/bin/env python3
"""without_override.py: runs a command as root, but without the capabilities that let root read,
write or own any file whatever its mode (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER), so
that a folder of mode 555 is as unwritable to it as to any user. For the tests that must meet a
folder the grader cannot write (tests/project.py's Unwritable) where no mount namespace can be
made and no immutable flag set: a container with Docker's default capabilities, which keeps
CAP_SETPCAP (needed to take a capability out of the bounding set) and the three above.

usage: without_override.py COMMAND [ARG...]
The capabilities leave the bounding, inheritable, ambient, permitted and effective sets, so
that neither this process nor what it executes (as root, execve() gives back what the
bounding set holds) has them. Exit 2 with one line when they cannot be dropped.
"""
import ctypes
import os
import struct
import sys

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3  # <linux/capability.h>
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4  # <linux/prctl.h>
CAPABILITY_VERSION_3 = 0x20080522


def drop(caps):
    """Takes caps out of every set of this process; raises OSError where it cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in caps:
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, %d)" % cap)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # (an old kernel has no ambient set)
    header = ctypes.create_string_buffer(struct.pack("Ii", CAPABILITY_VERSION_3, 0))
    data = ctypes.create_string_buffer(24)  # two of {effective, permitted, inheritable}, 32 bits each
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    words = list(struct.unpack("6I", data.raw))
    mask = ~sum(1 << cap for cap in caps) & 0xFFFFFFFF  # all three are below 32: the first word of each set
    words[0:3] = [w & mask for w in words[0:3]]
    data = ctypes.create_string_buffer(struct.pack("6I", *words))
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def main(argv):
    if not argv:
        print("without_override: usage: without_override.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    try:
        drop([CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER])
    except OSError as e:
        print("without_override: cannot drop root's file capabilities here: %s (%s)" % (
            e.strerror or os.strerror(e.errno or 0), e.filename or e.args[-1]), file=sys.stderr)
        return 2
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print("without_override: cannot run %s: %s" % (argv[0], e.strerror), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
