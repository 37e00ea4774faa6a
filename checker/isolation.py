"""isolation.py: what the instructor asked of a lab's isolation, read in one place. LAB_SANDBOX
names a sandbox, or leaves the choice to the machine (unset or empty: the best it allows); every
module that chooses how a lab, or a class's compile, is isolated asks here, and none reads the
variable itself (tests/engine_rule_test.py holds the rule).

  asked()            the mode asked: ANY, or one of MODES; Refused, with one line that names
                     what is accepted, for any other value
  own_users_asked()  whether labs may run as root's users of their own: this process is root
                     and the mode asked is ANY or USER (checker/sandbox.py, the class grader)
  bwrap_allowed()    whether bubblewrap may stand in where root's users cannot: any mode asked
                     but NONE (the class grader's compiles; the checker's sandbox tries
                     bubblewrap only where ANY or BWRAP is asked)
"""
import os

VARIABLE = "LAB_SANDBOX"
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
