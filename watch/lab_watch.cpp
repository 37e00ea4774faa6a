// lab04_watch: edit the lab, save, and see the new run, without waiting for LibTorch to load.
//
//   build/lab04_watch [--no-check] [lab options]          the watch: runs the lab, then again
//                                                         at each save
//   build/lab04_watch --once [--no-check] [lab options]   rebuilds the lab and runs it once
//                                                         (the README's rebuild-run), loading
//                                                         LibTorch during the compile
//
// The watch builds and runs the lab, then again each time lab04_attention.cpp is saved, and
// after each run says how long the save took to show. Compile errors are shown as the
// compiler prints them; a crash or an exit status other than 0 is one line; Ctrl-C (or
// SIGTERM) ends it and every process it started.
//
// The verdict. After each run (and after --once's), lines starting with "check:" say whether
// every STEP is right: the checker's own verdict (checker/watch_verdict.py, the same compare
// and diagnosis as the test run), on the checker's cases. The checker starts with the watch,
// in the background, and computes the reference once; the watch runs the cases itself, each a
// forked child as fast as the run above, within the checker's limits, and hands the checker
// what they printed; runs that print what earlier runs printed get the verdict kept then
// (lab04/checker/memo.py, in the build folder). A save during a verdict cancels it. --no-check
// leaves it out; without a Python that can import torch the watch says so once and goes on without
// it.
//
// Why it is fast: LibTorch is loaded into this process once (lab04_runtime, a shared library
// linked to it), while the first build runs, not at every run. Each run is a child process
// (fork) that loads the lab just built, as a module (lab04_module), and calls its main. The
// child starts from the state of a process that has not run anything yet, as
// build/lab04_attention does, so it prints the same bytes; and a crash of the lab ends the
// child, never the watch. Where the build has clang's libraries, a save is compiled in the
// watch by its resident compiler (resident_client.cpp), which read LibTorch's header once,
// and clang++ compiles only what it refuses. The lab itself, lab04_attention.cpp, knows
// nothing of this.

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "watch.h"  // what this file shares with verdict.cpp, and the run engine

// Set by CMakeLists.txt for this build folder.
constexpr const char* kSource = LAB_SOURCE;       // the file to watch
constexpr const char* kBuildDir = LAB_BUILD_DIR;  // the build folder

namespace watch {

sigset_t g_handled;        // SIGINT, SIGTERM, SIGHUP and SIGCHLD: read from g_signals only
int g_signals = -1;        // a signalfd for them
int g_inotify = -1;        // the lab's folder, watched for saves (not with --once)
int g_client = -1;         // a served --once: its client's connection (once_server.cpp)
timespec g_save{};         // when the lab that is built and run now was saved
bool g_saved = false;      // saved again since then: what runs now is out of date
pid_t g_checker_pid = -1;  // the checker (checker/watch_verdict.py), in a process group of its own

double now() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

void say(const std::string& line) {  // the watch's own lines, on standard error
  std::string text = "watch: " + line + "\n";
  if (write(STDERR_FILENO, text.data(), text.size()) < 0) return;
}

// Ends everything this process started, then ends it as the signal would have. (A run of the
// lab is the engine's to stop: a signal during a run cancels it first, run_in_child.)
[[noreturn]] void stop(int sig) {
  if (g_build_group > 0) kill(-g_build_group, SIGTERM);  // Ninja removes half-written files
  if (g_checker_pid > 0) kill(-g_checker_pid, SIGKILL);
  if (g_build_group > 0) {
    for (int i = 0; i < 100 && waitpid(-g_build_group, nullptr, WNOHANG) >= 0; ++i) usleep(20000);
    kill(-g_build_group, SIGKILL);
  }
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  signal(sig, SIG_DFL);
  sigprocmask(SIG_UNBLOCK, &g_handled, nullptr);
  raise(sig);
  _exit(128 + sig);
}

// Reads one of the watch's signals: the signal that stops the watch, or 0 (SIGCHLD, or none).
int stop_signal() {
  signalfd_siginfo info{};
  if (read(g_signals, &info, sizeof info) == sizeof info && info.ssi_signo != SIGCHLD)
    return int(info.ssi_signo);
  return 0;
}

// Waits until `fd` is readable (fd -1: never) or a child changed state. Returns true when fd is
// readable; a stop signal ends the watch here.
bool wait_for(int fd) {
  pollfd fds[3] = {{g_signals, POLLIN, 0}, {fd, POLLIN, 0}, {g_saved ? -1 : g_client, POLLIN, 0}};
  while (poll(fds, 3, -1) < 0) {
    if (errno != EINTR) return false;
  }
  if (fds[0].revents & POLLIN) {
    if (int sig = stop_signal()) stop(sig);
  }
  // A served --once whose client was interrupted: its build is stopped (Ninja removes
  // half-written files), and what follows is cancelled (saved_again()).
  if (fds[2].revents && saved_again() && g_build_group > 0) kill(-g_build_group, SIGTERM);
  return fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP));
}

int wait_for_child(pid_t pid) {  // the child's wait status
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) wait_for(-1);
  return status;
}

// Calls the main of the lab just built, in this process: the module's (its constructors run
// as it loads), or the one the resident compiler linked (its constructors called first).
int lab_main(std::vector<char*>& argv) {
  int (*main_of_lab)(int, char**) = g_entry.main;
  if (main_of_lab) {
    g_entry.init();
  } else {
    void* lab = dlopen(g_entry.module.c_str(), RTLD_NOW | RTLD_LOCAL);
    main_of_lab =
        lab ? reinterpret_cast<int (*)(int, char**)>(dlsym(lab, g_entry.symbol.c_str())) : nullptr;
  }
  if (!main_of_lab) {
    std::fprintf(stderr, "watch: could not load the lab: %s\n", dlerror());
    return 127;
  }
  // A lab that calls exit() (a starter's blank does) ends as if its main had returned: its
  // output flushed, then _exit, without the destructors of the LibTorch this process loaded for
  // every run, which took a fifth of a second in each run.
  on_exit([](int status, void*) { std::fflush(nullptr), _exit(status); }, nullptr);
  int status = main_of_lab(int(argv.size()) - 1, argv.data());
  std::fflush(nullptr);  // what exit() would do for the lab's output
  return status;
}

// Whether the lab was saved again since the build that runs now (reads the pending events).
bool saved_again() {
  if (g_client >= 0 && !g_saved) return g_saved = client_interrupted();
  if (g_inotify < 0 || g_saved) return g_saved;
  alignas(inotify_event) char events[8192];
  while (read(g_inotify, events, sizeof events) > 0) {
  }
  return g_saved = !same(modified(kSource), g_save);
}

// Runs `lab` (the lab's main) through the run engine, as a child process that starts from the
// state of this one: LibTorch loaded, nothing of the lab's yet. A save of the lab cancels the
// run (the new lab then runs at once, even after one that hangs); the watch's signals are
// handled meanwhile. `job` holds what the caller asks for besides (limits, captured output).
engine::Run run_in_child(engine::Job job, std::function<int()> lab) {
  std::fflush(nullptr);
  job.enter = [] {
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &g_handled, nullptr);
    take_clients_context();  // a served --once: what the client's process would have had
  };
  job.own_session = false;   // the student's session: its terminal, its Ctrl-C
  job.lab = std::move(lab);  // _exit after it: LibTorch's state is the watch's, kept for every run
  job.wake_on = {g_signals};
  if (g_inotify >= 0) job.wake_on.push_back(g_inotify);
  if (g_client >= 0) job.wake_on.push_back(g_client);
  int stopped_by = 0;  // a signal that stops the watch: the run is cancelled, then the watch ends
  job.woken = [&stopped_by](int fd) {
    if (fd == g_signals) return (stopped_by = stop_signal()) != 0;
    return saved_again();
  };
  engine::Run r = engine::run(job);
  if (stopped_by) stop(stopped_by);
  return r;
}

// Runs the lab's main, its output as it comes; returns its wait status, or kCancelled when the
// lab was saved again meanwhile.
int run(std::vector<char*>& argv) {
  engine::Job job;
  job.capture = false;
  engine::Run r = run_in_child(job, [&argv] { return lab_main(argv); });
  if (r.stopped == engine::Stopped::kCancelled) return kCancelled;
  if (r.stopped == engine::Stopped::kStart) return -1;
  return r.status;
}

std::string how_it_ended(int status) {  // "" for exit status 0
  if (status == -1) return "the lab could not be started: " + std::string(std::strerror(errno));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "the lab crashed: " + std::string(strsignal(sig)) + " (signal " + std::to_string(sig) +
           ")";
  }
  if (WEXITSTATUS(status) != 0)
    return "the lab exited with status " + std::to_string(WEXITSTATUS(status));
  return "";
}

// The lab's arguments, from the watch's (argv): the program's path, then every argument but
// --once (the first) and --no-check, which clears `check`.
std::vector<std::string> lab_arguments(int argc, char** argv, bool& check) {
  std::vector<std::string> words = {std::string(kBuildDir) + "/lab04_attention"};
  bool once = argc > 1 && std::strcmp(argv[1], "--once") == 0;
  check = true;
  for (int i = once ? 2 : 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-check") == 0) {
      check = false;
    } else {
      words.push_back(argv[i]);
    }
  }
  return words;
}

// --once: builds the lab as a module and runs it, then the verdict, then (not served:
// `shortcut` false) rebuilds build/lab04_attention from it; returns --once's exit status: the
// lab's, 128 plus the signal that ended it, or 1 when it did not compile or start. `shortcut`: a
// served --once compiles as the watch does (resident_client.cpp), and its server rebuilds the
// program once it has answered (once_server.cpp). kCancelled when its client was interrupted.
int run_once(std::vector<char*>& lab_argv, bool check, bool shortcut) {
  std::string program = std::string(kBuildDir) + "/lab04_attention";
  if (!build({"lab04_module"}, shortcut)) return saved_again() ? kCancelled : 1;
  int status = run(lab_argv);
  if (status == kCancelled) return kCancelled;
  std::string ended = how_it_ended(status);
  if (status == -1 || WIFSIGNALED(status)) say(ended);
  if (check && WIFEXITED(status) && WEXITSTATUS(status) != 2 && !verdict(program))
    return kCancelled;
  if (!shortcut) rebuild_the_program(-1, [] { return false; });
  return status == -1 ? 1 : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// Waits for the next save of the source: an editor writes it in place (IN_CLOSE_WRITE) or
// writes a new file and renames it over the old one (IN_MOVED_TO).
void wait_for_a_save(int inotify, const char* name, timespec last) {
  alignas(inotify_event) char events[8192];
  for (;;) {
    if (!wait_for(inotify)) continue;
    ssize_t n = read(inotify, events, sizeof events);
    bool ours = false;
    for (ssize_t at = 0; at < n;) {
      auto* event = reinterpret_cast<inotify_event*>(events + at);
      if (event->len > 0 && std::strcmp(event->name, name) == 0) ours = true;
      at += ssize_t(sizeof(inotify_event) + event->len);
    }
    timespec t = modified(kSource);
    if (ours && !same(t, last)) return;
  }
}

}  // namespace watch

int main(int argc, char** argv) {
  using namespace watch;
  sigemptyset(&g_handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&g_handled, sig);
  bool once = argc > 1 && std::strcmp(argv[1], "--once") == 0, check = true;
  if (once) served_once(argc, argv);  // by a server, if one can: then this process ends there
  sigprocmask(SIG_BLOCK, &g_handled, nullptr);
  g_signals = signalfd(-1, &g_handled, SFD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);  // a checker that ended is one line, not the watch's end
  if (g_signals < 0) return 1;
  if (argc > 1 && std::strcmp(argv[1], "--serve") == 0) return serve(argc, argv);
  if (argc == 2 && std::strcmp(argv[1], "--stop") == 0) return stop_servers();

  std::vector<std::string> words = lab_arguments(argc, argv, check);
  std::vector<char*> lab_argv;
  for (std::string& w : words) lab_argv.push_back(w.data());
  lab_argv.push_back(nullptr);
  if (check) start_checker();  // Python and torch load while the lab builds
  if (once) {
    int status = run_once(lab_argv, check, /*shortcut=*/false);
    end_checker();
    return status;
  }

  std::string source = kSource, dir = source.substr(0, source.rfind('/'));
  const char* name = kSource + dir.size() + 1;
  g_inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (g_inotify < 0 ||
      inotify_add_watch(g_inotify, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
    std::fprintf(stderr, "lab04_watch: cannot watch %s: %s\n", kSource, std::strerror(errno));
    return 2;
  }
  const char* term = std::getenv("TERM");
  bool clear = isatty(STDOUT_FILENO) && term && *term && std::strcmp(term, "dumb") != 0;

  for (bool first = true;; first = false) {
    g_save = modified(kSource);  // when it was saved
    g_saved = false;
    if (!first && clear && write(STDOUT_FILENO, "\033[H\033[2J\033[3J", 11) < 0) return 3;
    std::vector<const char*> targets = {"lab04_module"};
#ifdef LAB_RESIDENT  // the resident compiler and the lab's bitcode (resident_client.cpp)
    if (first && !resident_available())
      targets.insert(targets.end(), {"lab04_resident", "lab04_supply"});
#endif
    if (build(targets, /*shortcut=*/true)) {
      int status = run(lab_argv);
      if (status == kCancelled) {
        say("saved again during the run: it is stopped, and the new lab is built and run");
        continue;
      }
      if (first && WIFEXITED(status) && WEXITSTATUS(status) == 2) return 2;  // bad options
      double shown = now();
      std::string ended = how_it_ended(status);
      if (!ended.empty()) say(ended);
      bool judged = !check || verdict(words[0]);
      if (!judged) continue;  // saved meanwhile: the new lab is built and run at once
      char took[200] = "";
      if (!first) {
        double saved = double(g_save.tv_sec) + 1e-9 * double(g_save.tv_nsec);
        int n = std::snprintf(took, sizeof took, "%.2f s from the save to the end of this run (%s)",
                              shown - saved, g_compiled_by.c_str());
        if (check)
          std::snprintf(took + n, sizeof took - size_t(n), ", %.2f s to the verdict",
                        now() - saved);
        std::strncat(took, "; ", sizeof took - std::strlen(took) - 1);
      }
      rebuild_the_program(g_inotify, saved_again);  // (then the line: every command runs the save)
      say(std::string(took) + "waiting for the next save of " + source + " (Ctrl-C to stop)");
    } else {
      say("lab04_attention.cpp does not compile (the messages are above); waiting for the next "
          "save");
    }
    if (!saved_again()) resident_idle();  // its compiler reads the header while no one waits
    if (!saved_again()) wait_for_a_save(g_inotify, name, g_save);
  }
}
