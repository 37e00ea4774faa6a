"""A grader never takes a user id another grader of this machine holds, even one in another
root (a chroot, a container with the host's network and processes), whose lock files it
cannot see: it would kill that grader's labs as its own leftovers, and their students would get
the crash as a grade. The other grader is played here by a process of the first free user id,
and that id's lock held as another root holds it (the abstract socket only).

Nor does a grader kill what runs as a user id it gave back: a sandbox closed twice (by its
grader, then at the grader's exit) once killed, the second time, the labs of the grader that
had taken that id in between (a class test's checks of labs graded alone were killed so, in a
container under load). The second grader is played by the id's lock and a process of it.

usage: sandbox_uid_test.py   (as root; elsewhere it says SKIPPED)
"""
import os
import socket
import subprocess
import sys
import time

import checklist
import project

from lab04.checker import sandbox, sandbox_users  # noqa: E402


def given_back_and_closed_again():
    """A Sandbox closed, its user id taken by another grader whose lab runs, then the Sandbox
    closed again (as atexit does): the other grader's lab must live."""
    box = sandbox.Sandbox("/bin/true")
    if box.mode != "user":
        box.close()
        return [("a user id given back: skipped, no user id of its own here (%s)" % box.isolation[:80], True, "")]
    uid = box.uid
    box.close()
    try:
        other = sandbox_users.UidLock(uid)
    except OSError:
        return [("a user id given back: skipped, another grader took it first", True, "")]
    lab = subprocess.Popen(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--", "sleep", "60"],
                           cwd="/")
    time.sleep(0.3)
    try:
        box.close()  # again, as at the grader's exit
        time.sleep(0.3)
        return [("a sandbox closed twice does not kill the lab of the grader that took its user id since",
                 lab.poll() is None, "it was killed: %s" % lab.returncode)]
    finally:
        lab.kill()
        lab.wait()
        other.close()


def main(argv):
    if argv:
        print("sandbox_uid_test: usage: sandbox_uid_test.py", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("SKIPPED: needs root (user ids of the sandbox's own)")
        return 0
    first, lock = sandbox_users.take_uid()  # the id the other grader has: the first free one
    cannot = sandbox_users.user_cannot_run(first)
    lock.close()
    if cannot:  # a root closed to other users (some chroots): no grader takes user ids there
        print("SKIPPED: %s" % cannot)
        return 0
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind("\0lab04-sandbox-uid-%d" % first)  # held as a grader in another root holds it
    lab = subprocess.Popen(["setpriv", "--reuid=%d" % first, "--regid=%d" % first, "--clear-groups", "--",
                            "sleep", "60"], cwd="/")
    time.sleep(0.3)
    try:
        taken, mine = sandbox_users.take_uid()
        time.sleep(0.3)
        checks = [("a user id held by a grader in another root is not taken", taken != first,
                   "took %d, held elsewhere" % taken),
                  ("that grader's lab is left running", lab.poll() is None, "it ended: %s" % lab.returncode)]
        mine.close()
    finally:
        lab.kill()
        lab.wait()
        other.close()
    return checklist.report(checks + given_back_and_closed_again())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
