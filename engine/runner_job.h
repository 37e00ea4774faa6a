// runner_job.h: a job of the run engine's program (engine/runner.cpp says what its fields are),
// as a value, and its reader: the one place the wire's letters are read.
#pragma once

#include <sys/resource.h>

#include <string>
#include <utility>
#include <vector>

namespace runner {

struct Job {
  std::string module, home;
  std::vector<std::string> command;  // C: a program instead of a module
  long uid = -1;       // -1: run as this process's user (not root: no user of its own)
  bool alone = false;  // K: this process has a PID namespace of its own (bubblewrap, unshare)
  std::vector<std::string> places, cgroups, hidden, shown;  // P, G, X and B
  std::string root;                                         // I
  bool own_proc = false;                                    // V
  bool new_student = false;                                 // N
  std::string scratch_size = "64m";                         // S
  std::string library;                                      // W
  long wall_ms = 60000;
  size_t max_out = 4 << 20, max_err = 256 << 10;
  std::vector<std::pair<int, rlim_t>> limits;
  std::vector<std::string> env, args;
};

// Reads one job from stdin; false at the end of the input.
bool read_job(Job& job);

}  // namespace runner
