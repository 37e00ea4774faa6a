// runner_kill.h: what labs left, killed by the run engine's program: every process of a
// sandbox's user id (also lab04_runner --kill-user), or what one run left.
#pragma once

#include <sys/types.h>

#include "runner_job.h"

namespace runner {

// Kills every process of `uid` until none is left; false when some still live after
// `patience` seconds.
bool kill_user(uid_t uid, double patience);

// Kills what the lab of `job`, whose process was `child`, left behind, and reaps it.
void kill_leftovers(const Job& job, pid_t child);

}  // namespace runner
