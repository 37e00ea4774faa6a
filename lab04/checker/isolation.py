"""isolation.py: how a lab is isolated, chosen in one place from what the instructor asked and
what the machine allows. LAB_SANDBOX names a sandbox, or leaves the choice to the machine (unset
or empty: the best it allows). No other module reads the variable or chooses a mode: the
checker's sandbox and the class grader's workers run the machine's probes and pass their
answers here (tests/engine_rule_test.py holds the rule).

  choose_runs(setpriv, own_user, bwrap, unshare, closed)
                     the Isolation of a lab's runs: own_user() takes a user id of root's and
                     says why it cannot run programs (None: it can); bwrap() and unshare()
                     whether those sandboxes work here; closed(), the folder that stopped
                     root's user. Called lazily, in this order, only as far
                     as the choice needs. Refused, with one line, where the mode asked cannot be had
  choose_compiles(own_user, bwrap)
                     how a class's compiles are isolated: own_user is None (no user of root's), or
                     whether that user has a root of its own (True) or is kept out by ACLs (False)
  OWN_USER           the Isolation of runs through the class grader's runner (always root's user)

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
import shutil
from dataclasses import dataclass
from typing import Callable, Optional

VARIABLE = "LAB_SANDBOX"
UIDS_VARIABLE = "LAB_SANDBOX_UIDS"
DEFAULT_UIDS = range(61000, 62000)
LOWEST_UID, HIGHEST_UID, MOST_UIDS = 1000, 2**31 - 2, 100000  # no system account's; 65534 aside
ANY, USER, BWRAP, UNSHARE, NONE = "", "user", "bwrap", "unshare", "none"
MODES = (USER, BWRAP, UNSHARE, NONE)
KEPT_OUT = "user-kept-out"  # a compile's: root's user, no root of its own, kept out by ACLs


@dataclass(frozen=True)
class Isolation:
    """How a lab's runs are isolated. mode: one of MODES; why: for NONE, the reason in words;
    closed: for NONE where root's user could not run programs, the folder closed to other users
    that stopped it (the advice is to open it)."""
    mode: str
    why: Optional[str] = None
    closed: Optional[str] = None


OWN_USER = Isolation(USER)


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


def choose_runs(setpriv: bool, own_user: Callable[[], Optional[str]], bwrap: Callable[[], bool],
                unshare: Callable[[], bool], closed: Callable[[], Optional[str]] = lambda: None) -> Isolation:
    """The Isolation of a lab's runs: root's user of its own where this process is root and
    setpriv is there (own_user() takes the id and says why it cannot run programs, or None),
    else bubblewrap, else user namespaces (unshare), else none, as far as LAB_SANDBOX allows.
    closed(): the folder closed to other users, asked only where root's user could not run."""
    wanted = asked()  # (Refused, for a mode it does not take,
    user_ids()  # or user ids it cannot take)
    root = os.geteuid() == 0
    if own_users_asked():
        if setpriv:
            cannot = own_user()
            if cannot is None:
                return Isolation(USER)
            if wanted:
                raise Refused("LAB_SANDBOX=user: " + cannot)
            return Isolation(NONE, cannot, closed())
        if wanted:
            raise Refused("LAB_SANDBOX=user needs setpriv (util-linux)")
    if wanted == USER and not root:
        raise Refused("LAB_SANDBOX=user needs root: it runs the lab as a user of its own")
    if wanted in (ANY, BWRAP) and bwrap():
        return Isolation(BWRAP)
    if wanted == BWRAP:
        raise Refused("LAB_SANDBOX=bwrap: bubblewrap is not installed, or cannot make namespaces here")
    if wanted in (ANY, UNSHARE) and unshare():
        return Isolation(UNSHARE)
    if wanted == UNSHARE:
        raise Refused("LAB_SANDBOX=unshare: user namespaces cannot be made here")
    if wanted == NONE:
        return Isolation(NONE, "LAB_SANDBOX=none")
    return Isolation(NONE, "no user namespaces here" if shutil.which("bwrap") else
                     "bubblewrap is not installed and no user namespaces can be made here")


def choose_compiles(own_user: Optional[bool], bwrap: Callable[[], bool]) -> str:
    """How a class's compiles are isolated, USER, KEPT_OUT, BWRAP or NONE: as root's user (with a root of
    its own, or kept out by ACLs where no mount namespace can be made), else in bubblewrap where
    it works and LAB_SANDBOX is not none, else not at all."""
    if own_user is not None:
        return USER if own_user else KEPT_OUT
    return BWRAP if bwrap_allowed() and bwrap() else NONE

