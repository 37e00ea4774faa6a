// watch/watch.h: what the watch's two files share. watch/lab_watch.cpp is the loop (the
// build, each run of the lab, the wait for a save); watch/verdict.cpp is the checker's verdict
// after each run. Every run of the lab, the loop's and the verdict's, goes through the run
// engine (engine/run.h).

#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "run.h"

namespace watch {

extern sigset_t g_handled;   // SIGINT, SIGTERM, SIGHUP and SIGCHLD: read from g_signals only
extern int g_signals;        // a signalfd for them
extern int g_inotify;        // the lab's folder, watched for saves (not with --once)
extern pid_t g_checker_pid;  // the checker (checker/watch_verdict.py), a process group of its own

// Waits until `fd` is readable (fd -1: never) or a child changed state; a stop signal ends the
// watch here. True when fd is readable.
bool wait_for(int fd);
// Whether the lab was saved again since the build that runs now.
bool saved_again();
// Calls the main of the module just built, in this process (a child of the watch's).
int lab_main(std::vector<char*>& argv);
// Runs `lab` through the run engine, in a child that starts from this process's state; a save
// of the lab cancels the run, and a stop signal cancels it and ends the watch.
engine::Run run_in_child(engine::Job job, std::function<int()> lab);

// The verdict (verdict.cpp): the checker starts with the watch and ends with it; verdict()
// runs its cases on the lab just built and prints its lines, false when a save cancelled it.
void start_checker();
void end_checker();
bool verdict(const std::string& program);

}  // namespace watch
