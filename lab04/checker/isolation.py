"""isolation.py: what the instructor asked of a lab's isolation, read in one place. LAB_SANDBOX
names a sandbox, or leaves the choice to the machine (unset or empty: the best it allows); every
module that chooses how a lab, or a class's compile, is isolated asks here, and none reads the
variable itself (tests/engine_rule_test.py holds the rule).

  asked()            the mode asked: ANY, or one of MODES; Refused, with one line that names
                     what is accepted, for any other value
  own_users_asked()  whether labs may run as root's users of their own: this process is root
                     and the mode asked is ANY or USER (lab04/checker/sandbox.py, the class grader)
  bwrap_allowed()    whether bubblewrap may stand in where root's users cannot: any mode asked
                     but NONE (the class grader's compiles; the checker's sandbox tries
                     bubblewrap only where ANY or BWRAP is asked)
  user_ids()         the user ids root's sandboxes take (LAB_SANDBOX_UIDS, FIRST-LAST; 61000-61999
                     when unset or empty); Refused, with one line, for any other value

Graders of one machine that share its network namespace (chroots, the host) never take one user
id twice: they see each other's locks (lab04/checker/sandbox_users.py). Graders that do not (one on the
host and one in a container, or the tests' graders beside their own containers) are given ranges
apart, since the engine's kill of a user id on the host also reaches that id's processes in a
container.
"""
import os
import re

VARIABLE = "LAB_SANDBOX"
UIDS_VARIABLE = "LAB_SANDBOX_UIDS"
DEFAULT_UIDS = range(61000, 62000)
LOWEST_UID, HIGHEST_UID, MOST_UIDS = 1000, 2**31 - 2, 100000  # no system account's; 65534 aside
ANY, USER, BWRAP, UNSHARE, NONE = "", "user", "bwrap", "unshare", "none"
MODES = (USER, BWRAP, UNSHARE, NONE)


class Refused(Exception):
    """The sandbox asked for cannot be set up here: one line, for the usage error."""


def asked():
    """The mode LAB_SANDBOX asks for: ANY (unset or empty) or one of MODES."""
    value = os.environ.get("LAB_SANDBOX", ANY)  # (the one read: the rule's test looks for it by name)
    if value not in (ANY,) + MODES:
        raise Refused("%s takes %s or %s, or nothing (the best this machine allows), not %r" % (
            VARIABLE, ", ".join(MODES[:-1]), MODES[-1], value[:40]))
    return value


def own_users_asked():
    return os.geteuid() == 0 and asked() in (ANY, USER)


def bwrap_allowed():
    return asked() != NONE


def user_ids():
    """The range of user ids LAB_SANDBOX_UIDS names, FIRST-LAST (both included), or
    DEFAULT_UIDS."""
    value = os.environ.get("LAB_SANDBOX_UIDS", "").strip()
    if not value:
        return DEFAULT_UIDS
    found = re.fullmatch(r"(\d{1,10})-(\d{1,10})", value)
    first, last = (int(found.group(1)), int(found.group(2))) if found else (0, -1)
    if not (LOWEST_UID <= first <= last <= HIGHEST_UID and last - first < MOST_UIDS and not first <= 65534 <= last):
        raise Refused("%s takes FIRST-LAST, user ids %d to %d (at most %d, not 65534), or nothing for %d-%d, "
                      "not %r" % (UIDS_VARIABLE, LOWEST_UID, HIGHEST_UID, MOST_UIDS, DEFAULT_UIDS[0],
                                  DEFAULT_UIDS[-1], value[:40]))
    return range(first, last + 1)
