"""A grader never takes a user id another grader of this machine holds, even one in another
root (a chroot, a container with the host's network and processes), whose lock files it
cannot see: it would kill that grader's labs as its own leftovers, and their students would get
the crash as a grade. The other grader is played here by a process of the first free user id,
and that id's lock held as another root holds it (the abstract socket only).

usage: sandbox_uid_test.py   (as root; elsewhere it says SKIPPED)
"""
import os
import socket
import subprocess
import sys
import time

import checklist
import project

sys.path.insert(0, project.CHECKER)
import sandbox_users  # noqa: E402


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
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
