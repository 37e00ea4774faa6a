// engine/run.h: the run engine, the one piece of code that starts a student's lab.
//
// Aims. Running untrusted code right is a handful of details that are easy to get wrong once
// and then to fix in one copy only: the lab's limits set in the child before any of its code
// runs; its output read from pipes against a wall-time limit that judges the lab and not the
// reader (which a loaded machine may wake late); what it printed before it was stopped still
// counted; what it left behind killed before the answer goes back. This file says how a run is
// asked for (a Job) and what comes back (a Run); engine/run.cpp does it, for every caller:
// engine/runner.cpp (the checker's and the class grader's runs, through lab04/checker/engine.py),
// the watch (watch/lab_watch.cpp) and the tests' lab server (tests/fast_lab/server.cpp). No other
// code forks, limits or kills a lab (tests/engine_rule_test.py holds that).
//
// What the lab does in its child is the caller's: a Job carries two functions, one run before
// the limits are set (entering a sandbox: mounts, cgroups) and one after (becoming another
// user, then loading or executing the lab).

#pragma once

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace engine {

// How a run ended early, if it did: the engine stopped it (time, size, a cancel), or the lab
// never started (start: the child could not be made, or could not enter its sandbox). Their
// names (stopped_name) travel on the runner's wire and are lab04/checker/engine.py's Ending, the
// one set of names from here to the gradebook (tests/one_ending_test.py holds them equal).
enum class Stopped { kNo, kTime, kSize, kStart, kCancelled };

// What a Job's `given` says of one of the child's descriptors 0, 1 and 2, besides a descriptor
// of this process's to take: the engine's (stdin /dev/null; stdout and stderr the pipes when
// captured, else this process's), or none (closed).
constexpr int kEngines = -1, kClosed = -2;

struct Job {
  long wall_ms = 0;  // its wall-time limit; 0: none (the watch's own run)
  // A session of its own (no controlling terminal to reach); false: a process group of its own
  // in this process's session (the watch's runs: the student's terminal and Ctrl-C reach them).
  bool own_session = true;
  // The child's descriptors 0, 1 and 2: a descriptor of this process's for each (a server
  // running its client's program hands it the client's), kEngines or kClosed.
  int given[3] = {kEngines, kEngines, kEngines};
  bool capture = true;         // read stdout and stderr; false: the child keeps this
                               // process's (the watch prints the lab's run as it comes)
  size_t max_out = 4 << 20;    // stdout bytes past which the run is stopped (kSize)
  size_t max_err = 256 << 10;  // stderr bytes likewise
  std::vector<std::pair<int, rlim_t>> limits;  // RLIMIT_* and its value, set in the child
  std::function<void()> enter;                 // in the child, before the limits (may _exit)
  std::function<int()> lab;            // in the child, after the limits: the lab; its status
  std::function<void(pid_t)> started;  // in this process, once the child exists
  // Kills what the lab left behind (its process group by default), in this process, at once
  // when the lab ends and again after the run.
  std::function<void(pid_t)> kill_leftovers;
  // Descriptors to wake on while the lab runs, and what to do when one is readable: true
  // cancels the run (the watch: a save of the lab; its signals).
  std::vector<int> wake_on;
  std::function<bool(int)> woken;
};

struct Run {
  Stopped stopped = Stopped::kNo;
  int status = 0;  // the wait status (waitpid's), when not stopped
  std::string out, err;
  bool exited() const { return stopped == Stopped::kNo && WIFEXITED(status); }
  // The exit status, or minus the signal that ended it.
  int code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }
};

// Runs a job: forks, sets the child's descriptors (stdin /dev/null; stdout and stderr the
// pipes, when captured; those `given`; nothing else open), calls enter, sets the limits, calls lab
// and _exits with its status. Meanwhile reads the pipes until the lab and its pipes are done, or a
// limit or a cancel stops it; then kills what is left and reads what the pipes still hold.
Run run(const Job& job);

// In the child, before any of the lab's code ran: says on stderr what could not be done (and
// why, from errno) and ends the child; the run then ended kStart, the caller's failure.
[[noreturn]] void refuse(const char* what);

// The resource a limit's name stands for ("as", "nproc", "fsize", "cpu", "core", "stack"),
// or -1.
int resource_named(const std::string& name);

// The name of how a run ended early: "-" (it did not), "time", "size", "start", "cancelled".
const char* stopped_name(Stopped stopped);

}  // namespace engine
