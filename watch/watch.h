// watch/watch.h: what the watch's files share. watch/lab_watch.cpp is the loop (each run of the
// lab, the wait for a save); watch/build.cpp the builds; watch/verdict.cpp the checker's verdict
// after each run; once_server.cpp --once's server; resident_client.cpp the resident compiler.
// Every run of the lab, the loop's and the verdict's, goes through the run
// engine (engine/run.h).

#pragma once

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <functional>
#include <string>
#include <vector>

#include "run.h"

namespace watch {

extern sigset_t g_handled;   // SIGINT, SIGTERM, SIGHUP and SIGCHLD: read from g_signals only
extern int g_signals;        // a signalfd for them
extern int g_inotify;        // the lab's folder, watched for saves (not with --once)
extern int g_client;         // a served --once: its client's connection, else -1
extern bool g_saved;         // saved again (a served --once: interrupted) since the build began
extern pid_t g_checker_pid;  // the checker (checker/watch_verdict.py), a process group of its own
extern pid_t g_build_group;  // the build's process group while it runs (build.cpp)

void say(const std::string& line);  // the watch's own lines, on standard error
// Ends everything this process started, then ends it as the signal would have.
[[noreturn]] void stop(int sig);
int stop_signal();              // the signal read that stops the watch, or 0 (SIGCHLD, or none)
int wait_for_child(pid_t pid);  // the child's wait status, the watch's signals handled meanwhile

// Waits until `fd` is readable (fd -1: never) or a child changed state; a stop signal ends the
// watch here. True when fd is readable.
bool wait_for(int fd);
// Whether the lab was saved again since the build that runs now (a served --once: whether
// its client was interrupted).
bool saved_again();
constexpr int kCancelled = -2;  // run()'s and once()'s status when that stopped them
// --once's build, run and verdict; its exit status, or kCancelled (lab_watch.cpp).
int run_once(std::vector<char*>& lab_argv, bool check, bool shortcut);
// Rebuilds build/lab04_attention, quietly; stopped when `waiting` is readable and wanted().
void rebuild_the_program(int waiting, const std::function<bool()>& wanted);
// The lab's arguments from the watch's: its path, then all but --once and --no-check.
std::vector<std::string> lab_arguments(int argc, char** argv, bool& check);

// --once, served (once_server.cpp): a server that keeps LibTorch, the checker and the resident
// compiler between runs of --once, and its clients.
void served_once(int argc, char** argv);  // ends this process as the lab did, when served
int serve(int argc, char** argv);         // build/lab04_watch --serve FD: the server
int stop_servers();                       // build/lab04_watch --stop
bool client_interrupted();    // the client sent a signal or went away (reads its message)
void take_clients_context();  // in a run's child: the client's environment, folder, limits
// Calls the main of the module just built, in this process (a child of the watch's).
int lab_main(std::vector<char*>& argv);
// Runs `lab` through the run engine, in a child that starts from this process's state; a save
// of the lab cancels the run, and a stop signal cancels it and ends the watch.
engine::Run run_in_child(engine::Job job, std::function<int()> lab);

// What lab_watch.cpp shares with resident_client.cpp: a command run in the build folder, in
// a process group of its own (`live`: its output straight to standard error), collected by
// finish_build(), true when it succeeded (the compiler's messages shown when `show`, or kept).
struct Build {
  pid_t pid = -1;
  int output = -1;
};
Build start_in_build_folder(const std::vector<std::string>& command, bool live);
Build start_build(const std::vector<const char*>& targets, bool live);
bool finish_build(Build& b, bool show = true, std::string* kept = nullptr);
bool exists(const char* path);
double now();                                // seconds, the real-time clock
timespec modified(const std::string& path);  // a file's time of change, 0 if it cannot be read
bool same(timespec a, timespec b);

// What a run calls: the main of the module the build made (module, symbol), or the lab as the
// resident compiler (resident_client.cpp) linked it in the watch: its constructors, its main.
struct Entry {
  std::string module, symbol;
  void (*init)() = nullptr;
  int (*main)(int, char**) = nullptr;
};
bool resident_available();  // built (the watch's first build builds it)
// The watch's builds (build.cpp): `targets` built, LibTorch loaded meanwhile; a save
// (`shortcut`) compiled by the resident compiler where it can. What a run calls then is
// g_entry; g_compiled_by says by whom and how long it took.
bool build(const std::vector<const char*>& targets, bool shortcut = false);
extern Entry g_entry;
extern std::string g_compiled_by;
// Loads LibTorch into this process, for every run to come; false (said unless quiet) if it cannot.
bool load_runtime(bool quiet);
// Learns the lab's compile flags (Ninja's command for the module's object).
void resident_learn(const std::string& compile);
// Between saves: starts the compiler (again, if a save ended it) and has it read the header.
void resident_idle();
// Compiles the saved lab and links it in the watch: true with `entry`; else false, with why
// not in `why` (empty when clang++ will say it: an error or a warning).
bool resident_build(Entry& entry, std::string& why);

// The verdict (verdict.cpp): the checker starts with the watch and ends with it; verdict()
// runs its cases on the lab just built and prints its lines, false when a save cancelled it.
void start_checker();
void end_checker();
bool verdict(const std::string& program);

}  // namespace watch
