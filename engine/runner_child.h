// runner_child.h: what the child of a run does, in the run engine's program: it enters the
// sandbox the job asks for (its cgroups, its mounts: a root of its own, private places, a /proc
// of its own; engine/runner.cpp's comment says which field makes which), then, within the limits
// the engine has set, becomes the sandbox's user with nothing of root's left, and the lab.
#pragma once

#include "runner_job.h"

namespace runner {

// In the child, before its limits are set (the engine sets them): the cgroups, the private
// places and the folder of the run.
void enter_sandbox(const Job& job);

// In the child, within its limits: a user of its own (as root) with nothing of root's left,
// the job's environment, then the lab. Returns the lab's status.
int become_the_lab(const Job& job);

}  // namespace runner
