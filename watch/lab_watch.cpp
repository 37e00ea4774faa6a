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
// what they printed. A save during a verdict cancels it. --no-check leaves it out; without a
// Python that can import torch the watch says so once and goes on without it.
//
// Why it is fast: LibTorch is loaded into this process once (lab04_runtime, a shared library
// linked to it), while the first build runs, not at every run. Each run is a child process
// (fork) that loads the lab just built, as a module (lab04_module), and calls its main. The
// child starts from the state of a process that has not run anything yet, as
// build/lab04_attention does, so it prints the same bytes; and a crash of the lab ends the
// child, never the watch. The lab itself, lab04_attention.cpp, knows nothing of this.

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
#include <string>
#include <vector>

// Set by CMakeLists.txt for this build folder.
constexpr const char* kSource = LAB_SOURCE;         // the file to watch
constexpr const char* kBuildDir = LAB_BUILD_DIR;    // the build folder
constexpr const char* kModule = LAB_MODULE;         // the lab as a module
constexpr const char* kRuntime = LAB_RUNTIME;       // LibTorch, and its headers' inline code
constexpr const char* kObject = LAB_OBJECT;         // the lab's object, linked into the module
constexpr const char* kBuildTool = LAB_BUILD_TOOL;  // ninja, or else cmake (--build)
constexpr const char* kChecker = LAB_CHECKER;       // checker/, whose watch_verdict.py judges

namespace {

sigset_t g_handled;        // SIGINT, SIGTERM, SIGHUP and SIGCHLD: read from g_signals only
int g_signals = -1;        // a signalfd for them
pid_t g_build_group = -1;  // the build's process group while it runs
pid_t g_run = -1;          // the lab's process while it runs
int g_inotify = -1;        // the lab's folder, watched for saves (not with --once)
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

// Ends everything this process started, then ends it as the signal would have.
[[noreturn]] void stop(int sig) {
  if (g_build_group > 0) kill(-g_build_group, SIGTERM);  // Ninja removes half-written files
  if (g_run > 0) kill(-g_run, SIGKILL), kill(g_run, SIGKILL);
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

// Waits until `fd` is readable (fd -1: never) or a child changed state. Returns true when fd is
// readable; a stop signal ends the watch here.
bool wait_for(int fd) {
  pollfd fds[2] = {{g_signals, POLLIN, 0}, {fd, POLLIN, 0}};
  while (poll(fds, fd >= 0 ? 2 : 1, -1) < 0) {
    if (errno != EINTR) return false;
  }
  if (fds[0].revents & POLLIN) {
    signalfd_siginfo info{};
    if (read(g_signals, &info, sizeof info) == sizeof info && info.ssi_signo != SIGCHLD) {
      stop(int(info.ssi_signo));
    }
  }
  return fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP));
}

int wait_for_child(pid_t pid) {  // the child's wait status
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) wait_for(-1);
  return status;
}

// Ninja's own lines (progress, the failed command, its summary) are left out; the compiler's
// and the linker's messages are kept as they were printed.
std::string compiler_messages(const std::string& output) {
  std::string kept, line;
  bool after_failed = false;
  for (size_t start = 0; start < output.size();) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size() - 1;
    line = output.substr(start, end + 1 - start);
    start = end + 1;
    bool ninja = (line[0] == '[' && line.find("] ") != std::string::npos) ||
                 line.rfind("FAILED: ", 0) == 0 || line.rfind("ninja: ", 0) == 0 || after_failed;
    after_failed = line.rfind("FAILED: ", 0) == 0;  // the next line is the command
    if (!ninja) kept += line;
  }
  return kept;
}

bool exists(const char* path) { return access(path, F_OK) == 0; }

timespec modified(const std::string& path) {  // 0 if it cannot be read
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mtim : timespec{};
}

// A command run in the build folder, in a process group of its own; finish_build() collects
// it. `live`: its output goes straight to standard error (the first build), else to a pipe.
struct Build {
  pid_t pid = -1;
  int output = -1;
};

Build start_in_build_folder(const std::vector<std::string>& command, bool live) {
  Build b;
  int out[2];
  if (!live && pipe2(out, O_CLOEXEC) != 0) return b;
  b.pid = fork();
  if (b.pid == 0) {
    setpgid(0, 0);
    sigprocmask(SIG_UNBLOCK, &g_handled, nullptr);
    dup2(live ? STDERR_FILENO : out[1], STDOUT_FILENO);
    if (!live) dup2(out[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    if (chdir(kBuildDir) == 0) execvp(argv[0], argv.data());
    _exit(127);
  }
  if (!live) {
    close(out[1]);
    b.output = out[0];
  }
  if (b.pid > 0) {
    setpgid(b.pid, b.pid);  // also here: no race with a Ctrl-C before the child ran
    g_build_group = b.pid;
  }
  return b;
}

bool with_ninja() {
  std::string tool = kBuildTool;
  return tool.size() >= 5 && tool.compare(tool.size() - 5, 5, "ninja") == 0;
}

Build start_build(const std::vector<const char*>& targets, bool live) {
  std::vector<std::string> command = {kBuildTool};  // ninja straight away saves cmake's 20 ms
  if (!with_ninja()) command.insert(command.end(), {"--build", ".", "--target"});
  command.insert(command.end(), targets.begin(), targets.end());
  return start_in_build_folder(command, live);
}

// The compiler's messages in a build's output: all of them after a failure, else any warnings.
void show_messages(const std::string& output, bool built) {
  std::string messages = compiler_messages(output);
  if (!built || messages.find("warning") != std::string::npos) {
    if (write(STDERR_FILENO, messages.data(), messages.size()) < 0) return;
  }
}

// True when the build succeeded; the compiler's messages, if any, are shown either way
// (`show`), or kept in `kept`.
bool finish_build(Build& b, bool show = true, std::string* kept = nullptr) {
  if (b.pid < 0) return false;
  std::string output;
  char chunk[4096];
  while (b.output >= 0) {
    if (!wait_for(b.output)) continue;
    ssize_t n = read(b.output, chunk, sizeof chunk);
    if (n > 0) output.append(chunk, size_t(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  if (b.output >= 0) close(b.output);
  int status = wait_for_child(b.pid);
  g_build_group = -1;
  bool built = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (kept) *kept = output;
  if (show) show_messages(output, built);
  return built;
}

// Loads LibTorch into this process, for every run to come (RTLD_GLOBAL: the module finds it).
bool load_runtime(bool quiet) {
  static bool loaded = false;
  if (!loaded && !dlopen(kRuntime, RTLD_NOW | RTLD_GLOBAL)) {
    if (!quiet) std::fprintf(stderr, "watch: could not load LibTorch: %s\n", dlerror());
    return false;
  }
  return loaded = true;
}

// The watch's shortcut: once the module has been built, an edit of the lab only changes the
// lab's object and the module, so the watch runs Ninja's own two commands for them (from
// `ninja -t commands`), skipping Ninja's look at the 4,500 headers and the precompiled
// header's guard (40 ms of every save). Whenever they fail, or the build files changed, the
// full build runs instead: it shows the compiler's messages, and rebuilds what is stale.
struct Shortcut {
  std::string commands;  // "compile && link", run by sh in the build folder
  timespec build_files{};
};
Shortcut g_shortcut;

bool same(timespec a, timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

std::string ninja_command(const char* output) {  // the last line of `ninja -t commands -s`
  std::string relative = output, text;
  std::string prefix = std::string(kBuildDir) + "/";
  if (relative.rfind(prefix, 0) == 0) relative = relative.substr(prefix.size());
  Build b = start_in_build_folder({kBuildTool, "-t", "commands", "-s", relative}, false);
  if (!finish_build(b, false, &text)) return "";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

void learn_shortcut() {
  g_shortcut = {};
  if (!with_ninja()) return;
  std::string compile = ninja_command(kObject), link = ninja_command(kModule);
  if (!compile.empty() && !link.empty()) {
    g_shortcut = {compile + " && " + link, modified(std::string(kBuildDir) + "/build.ninja")};
  }
}

bool take_shortcut() {
  if (g_shortcut.commands.empty() ||
      !same(g_shortcut.build_files, modified(std::string(kBuildDir) + "/build.ninja"))) {
    return false;
  }
  std::string output;
  Build b = start_in_build_folder({"/bin/sh", "-c", g_shortcut.commands}, false);
  if (!finish_build(b, false, &output)) return false;  // the full build shows why
  show_messages(output, true);
  return true;
}

// Builds `targets`, loading LibTorch meanwhile when it was built before.
bool build(const std::vector<const char*>& targets, bool shortcut = false) {
  if (shortcut && take_shortcut()) return true;
  bool first = !exists(kModule) || !exists(kRuntime);
  if (first)
    say("building the lab as a module; the first time also LibTorch's inline code, once, which "
        "takes a while");
  Build b = start_build(targets, first);
  bool loaded = !first && load_runtime(/*quiet=*/true);  // may fail if being relinked: retried
  bool built = finish_build(b) && (loaded || load_runtime(/*quiet=*/false));
  if (built && shortcut) learn_shortcut();
  return built;
}

// Calls the main of the module just built, in this process.
int lab_main(std::vector<char*>& argv) {
  void* lab = dlopen(kModule, RTLD_NOW | RTLD_LOCAL);
  auto main_of_lab = lab ? reinterpret_cast<int (*)(int, char**)>(dlsym(lab, "main")) : nullptr;
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

bool saved_again();
int wait_any(std::initializer_list<int> fds, int ms);
constexpr int kCancelled = -2;  // run()'s status when a save stopped the run

// Runs the lab's main in a child process; returns its wait status, or kCancelled when the lab
// was saved again meanwhile (a run that hangs then gives way to the new lab at once).
int run(std::vector<char*>& argv) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the watch
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &g_handled, nullptr);
    _exit(lab_main(argv));  // not exit(): LibTorch's state is the watch's, kept for every run
  }
  if (pid < 0) return -1;
  g_run = pid;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (wait_any({g_inotify}, -1) == 0 && saved_again()) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      status = kCancelled;
      break;
    }
  }
  g_run = -1;
  return status;
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

// --- the verdict ----------------------------------------------------------------------------
// The checker (checker/watch_verdict.py, started through checker/find_torch_python, which finds
// a Python that can import torch) speaks on a pair of pipes. It first says "none" (no such
// Python), or its cases and limits:
//   cases <count> <time limit, ms> <max stdout bytes> <max stderr bytes>
//   limits <name>=<value> ...        (as, nproc, fsize, cpu, core: each run's resource limits)
//   case <text> <lab option> ...     (one per case)
// then loads torch and the reference. For each verdict the watch sends
//   job <id> <count>, then for each case run: ran <text> <status> <stopped> <out bytes> <err
//   bytes> and those bytes (<status>: exit status, or minus the signal; <stopped>: - time size)
// and the checker answers with lines "check: ...", then "end <id>" (and before it "final" when
// it cannot judge here at all, torch failing to load: the watch then asks no more).

struct Case {
  std::string text;
  std::vector<std::string> args;
};

struct Checker {
  int to = -1, from = -1;
  std::string pending;  // read from the checker, not yet a whole line
  bool greeted = false, none = false, told = false;
  std::vector<Case> cases;
  long timeout_ms = 5000;
  size_t max_out = 4 << 20, max_err = 256 << 10;
  std::vector<std::pair<int, rlim_t>> limits;
  int job = 0;
};
Checker g_checker;

void start_checker() {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // a Ctrl-C is the watch's: it ends the checker itself
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigprocmask(SIG_UNBLOCK, &g_handled, nullptr);
    int null = open("/dev/null", O_WRONLY);
    dup2(in[0], STDIN_FILENO), dup2(out[1], STDOUT_FILENO), dup2(null, STDERR_FILENO);
    const char* script =
        "p=$(sh \"$1/find_torch_python\" 2>/dev/null) || { echo none; exit 0; }; "
        "exec \"${p%% *}\" \"$1/watch_verdict.py\" \"$2\"";
    std::string program = std::string(kBuildDir) + "/lab04_attention";  // as the report names it
    execl("/bin/sh", "sh", "-c", script, "sh", kChecker, program.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]), close(out[1]);
  if (pid < 0) {
    close(in[1]), close(out[0]);
    return;
  }
  setpgid(pid, pid);
  g_checker = Checker{};
  g_checker.to = in[1], g_checker.from = out[0];
  g_checker_pid = pid;
}

void end_checker() {
  if (g_checker_pid > 0) {
    kill(-g_checker_pid, SIGKILL);
    waitpid(g_checker_pid, nullptr, 0);
  }
  if (g_checker.to >= 0) close(g_checker.to), close(g_checker.from);
  g_checker.to = g_checker.from = -1;
  g_checker_pid = -1;
}

// Waits up to `ms` (-1: no limit) for one of `fds` (-1: none) to be readable, and handles the
// watch's signals meanwhile. Returns the index of a readable one, or -1.
int wait_any(std::initializer_list<int> fds, int ms) {
  std::vector<pollfd> polled = {{g_signals, POLLIN, 0}};
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  if (poll(polled.data(), polled.size(), ms) <= 0) return -1;
  if (polled[0].revents & POLLIN) wait_for(-1);  // a stop signal ends the watch there
  for (size_t i = 1; i < polled.size(); ++i) {
    if (polled[i].fd >= 0 && (polled[i].revents & (POLLIN | POLLHUP | POLLERR))) return int(i) - 1;
  }
  return -1;
}

// Whether the lab was saved again since the build that runs now (reads the pending events).
bool saved_again() {
  if (g_inotify < 0 || g_saved) return g_saved;
  alignas(inotify_event) char events[8192];
  while (read(g_inotify, events, sizeof events) > 0) {
  }
  return g_saved = !same(modified(kSource), g_save);
}

bool write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

enum class Got { kLine, kSaved, kGone };

// The checker's next line (without its newline); a save of the lab cancels the wait.
Got checker_line(std::string& line) {
  for (;;) {
    size_t end = g_checker.pending.find('\n');
    if (end != std::string::npos) {
      line = g_checker.pending.substr(0, end);
      g_checker.pending.erase(0, end + 1);
      return Got::kLine;
    }
    int ready = wait_any({g_checker.from, g_inotify}, -1);
    if (ready == 1 && saved_again()) return Got::kSaved;
    if (ready != 0) continue;
    char chunk[65536];
    ssize_t n = read(g_checker.from, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Got::kGone;
    g_checker.pending.append(chunk, size_t(n));
  }
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  for (size_t at = 0; at < line.size();) {
    size_t end = line.find(' ', at);
    if (end == std::string::npos) end = line.size();
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// Reads the checker's greeting: its cases and limits. Got::kGone for "none" too.
Got greeting() {
  std::string line;
  Got got = checker_line(line);
  if (got != Got::kLine) return got;
  std::vector<std::string> head = words_of(line);
  if (head.size() != 5 || head[0] != "cases") {
    g_checker.none = line == "none";
    return Got::kGone;
  }
  g_checker.timeout_ms = std::atol(head[2].c_str());
  g_checker.max_out = size_t(std::atoll(head[3].c_str()));
  g_checker.max_err = size_t(std::atoll(head[4].c_str()));
  for (int n = std::atoi(head[1].c_str()), i = -1; i < n; ++i) {
    if ((got = checker_line(line)) != Got::kLine) return got;
    std::vector<std::string> words = words_of(line);
    if (words.empty()) return Got::kGone;
    if (i < 0 && words[0] == "limits") {
      for (size_t w = 1; w < words.size(); ++w) {
        std::string name = words[w].substr(0, words[w].find('='));
        rlim_t value = rlim_t(std::atoll(words[w].c_str() + name.size() + 1));
        int resource = name == "as"      ? RLIMIT_AS
                       : name == "nproc" ? RLIMIT_NPROC
                       : name == "fsize" ? RLIMIT_FSIZE
                       : name == "cpu"   ? RLIMIT_CPU
                                         : RLIMIT_CORE;
        g_checker.limits.push_back({resource, value});
      }
    } else if (i >= 0 && words[0] == "case" && words.size() >= 2) {
      g_checker.cases.push_back(
          {words[1], std::vector<std::string>(words.begin() + 2, words.end())});
    } else {
      return Got::kGone;
    }
  }
  g_checker.greeted = true;
  return Got::kLine;
}

// Reads, without waiting, what a pipe still holds once the lab and what it started are killed:
// all it wrote before it was stopped, up to one byte past `most`.
void read_what_is_left(int fd, std::string& to, size_t most) {
  char chunk[65536];
  pollfd p{fd, POLLIN, 0};
  while (fd >= 0 && to.size() <= most && poll(&p, 1, 0) > 0) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    to.append(chunk, size_t(n));
  }
}

struct CaseRun {
  int status = 0;             // exit status, or minus the signal
  std::string stopped = "-";  // or "time", "size"
  std::string out, err;
};

// Runs the lab on one of the checker's cases, as a forked child within the checker's limits;
// false when a save cancelled it.
bool run_case(const std::string& program, const Case& c, CaseRun& r) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return false;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return false;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &g_handled, nullptr);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, STDIN_FILENO), dup2(out[1], STDOUT_FILENO), dup2(err[1], STDERR_FILENO);
    for (const auto& [resource, value] : g_checker.limits) {
      rlimit limit{value, value};
      setrlimit(resource, &limit);
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // as the checker's stdbuf -oL: a crash loses no line
    std::vector<std::string> words = {program};
    words.insert(words.end(), c.args.begin(), c.args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    _exit(lab_main(argv));
  }
  close(out[1]), close(err[1]);
  if (pid < 0) {
    close(out[0]), close(err[0]);
    return false;
  }
  setpgid(pid, pid);
  g_run = pid;
  double deadline = now() + 1e-3 * double(g_checker.timeout_ms);
  int pipes[2] = {out[0], err[0]};
  std::string* into[2] = {&r.out, &r.err};
  bool cancelled = false;
  int status = 0;
  bool ended = false;  // reaped already
  while (!cancelled && r.stopped == "-") {
    int ms = int(1000 * (deadline - now()));
    if (ms <= 0) {  // the limit judges the lab, not this loop, which may wake late
      if (!ended) ended = waitpid(pid, &status, WNOHANG) == pid;
      if (!ended) r.stopped = "time";
      break;
    }
    if (!ended && pipes[0] < 0 && pipes[1] < 0) {  // its output closed: it ends, or lingers
      ended = waitpid(pid, &status, WNOHANG) == pid;
      if (ended) break;
    }
    int ready = wait_any({pipes[0], pipes[1], g_inotify},
                         pipes[0] < 0 && pipes[1] < 0 ? std::min(ms, 20) : ms);
    if (ready == 2) {
      cancelled = saved_again();
      continue;
    }
    if (ready < 0) continue;
    char chunk[65536];
    ssize_t n = read(pipes[ready], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(pipes[ready]);
      pipes[ready] = -1;
      continue;
    }
    into[ready]->append(chunk, size_t(n));
    if (r.out.size() > g_checker.max_out || r.err.size() > g_checker.max_err) r.stopped = "size";
  }
  kill(-pid, SIGKILL);  // whatever of it is left: after a limit, or what it started
  if (!ended) waitpid(pid, &status, 0);
  if (!cancelled && r.stopped != "size") {  // all it wrote before it was stopped counts
    read_what_is_left(pipes[0], r.out, g_checker.max_out);
    read_what_is_left(pipes[1], r.err, g_checker.max_err);
    if (r.stopped == "-" && (r.out.size() > g_checker.max_out || r.err.size() > g_checker.max_err))
      r.stopped = "size";
  }
  for (int fd : pipes) {
    if (fd >= 0) close(fd);
  }
  g_run = -1;
  r.status = WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
  return !cancelled;
}

void say_check(const std::string& line) {
  std::string text = "check: " + line + "\n";
  if (write(STDERR_FILENO, text.data(), text.size()) < 0) return;
}

// Runs the checker's cases on the lab just built and prints the checker's verdict. False when
// a save cancelled it.
bool verdict(const std::string& program) {
  if (g_checker_pid < 0 && !g_checker.none) start_checker();  // after a failure: again
  if (g_checker_pid < 0) return true;
  Got got = g_checker.greeted ? Got::kLine : greeting();
  if (got == Got::kSaved) return false;
  if (got == Got::kGone) {
    if (g_checker.none) {
      if (!g_checker.told)
        say_check(
            "no verdict: no Python here can import torch (Debian: sudo apt-get install "
            "python3-torch, or name one in LAB_PYTHON); the watch goes on without it");
      g_checker.told = true;
      return true;
    }
    say_check(
        "no verdict: the checker (checker/watch_verdict.py) ended; the next save tries again");
    end_checker();
    return true;
  }
  std::string job;
  int count = 0;
  for (const Case& c : g_checker.cases) {
    CaseRun r;
    if (!run_case(program, c, r)) return false;
    job += "ran " + c.text + " " + std::to_string(r.status) + " " + r.stopped + " " +
           std::to_string(r.out.size()) + " " + std::to_string(r.err.size()) + "\n" + r.out + r.err;
    ++count;
    if (r.stopped == "time") break;  // the others would wait as long: the checker says so
  }
  int id = ++g_checker.job;
  if (!write_all(g_checker.to,
                 "job " + std::to_string(id) + " " + std::to_string(count) + "\n" + job)) {
    say_check(
        "no verdict: the checker (checker/watch_verdict.py) ended; the next save tries again");
    end_checker();
    return true;
  }
  std::vector<std::string> lines;
  for (std::string line;;) {
    got = checker_line(line);
    if (got == Got::kSaved) return false;  // its answer, when it comes, is for an old lab
    if (got == Got::kGone) {
      say_check(
          "no verdict: the checker (checker/watch_verdict.py) ended; the next save tries again");
      end_checker();
      return true;
    }
    if (line.rfind("end ", 0) == 0) {
      if (line == "end " + std::to_string(id)) break;
      lines.clear();  // the end of a cancelled job's answer
      continue;
    }
    if (line == "final") {  // it cannot judge here at all (no torch): said once, never asked again
      g_checker.none = g_checker.told = true;
      continue;
    }
    lines.push_back(line);
  }
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  if (g_checker.none) end_checker();
  if (write(STDERR_FILENO, text.data(), text.size()) < 0) return true;
  return true;
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

}  // namespace

int main(int argc, char** argv) {
  sigemptyset(&g_handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&g_handled, sig);
  sigprocmask(SIG_BLOCK, &g_handled, nullptr);
  g_signals = signalfd(-1, &g_handled, SFD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);  // a checker that ended is one line, not the watch's end

  bool once = argc > 1 && std::strcmp(argv[1], "--once") == 0, check = true;
  std::string program = std::string(kBuildDir) + "/lab04_attention";
  std::vector<char*> lab_argv = {program.data()};
  for (int i = once ? 2 : 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-check") == 0) {
      check = false;
    } else {
      lab_argv.push_back(argv[i]);
    }
  }
  lab_argv.push_back(nullptr);
  if (g_signals < 0) return 1;
  if (check) start_checker();  // Python and torch load while the lab builds

  if (once) {  // only the module: build/lab04_attention is rebuilt by `cmake --build`
    if (!build({"lab04_module"})) return 1;
    int status = run(lab_argv);
    std::string ended = how_it_ended(status);
    if (status == -1 || WIFSIGNALED(status)) say(ended);
    if (check && WIFEXITED(status) && WEXITSTATUS(status) != 2) verdict(program);
    end_checker();
    return status == -1 ? 1 : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
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
    if (build({"lab04_module"}, /*shortcut=*/true)) {
      int status = run(lab_argv);
      if (status == kCancelled) {
        say("saved again during the run: it is stopped, and the new lab is built and run");
        continue;
      }
      if (first && WIFEXITED(status) && WEXITSTATUS(status) == 2) return 2;  // bad options
      double shown = now();
      std::string ended = how_it_ended(status);
      if (!ended.empty()) say(ended);
      bool judged = !check || verdict(program);
      if (!judged) continue;  // saved meanwhile: the new lab is built and run at once
      char took[120] = "";
      if (!first) {
        double saved = double(g_save.tv_sec) + 1e-9 * double(g_save.tv_nsec);
        int n = std::snprintf(took, sizeof took, "%.2f s from the save to the end of this run",
                              shown - saved);
        if (check)
          std::snprintf(took + n, sizeof took - size_t(n), ", %.2f s to the verdict",
                        now() - saved);
        std::strncat(took, "; ", sizeof took - std::strlen(took) - 1);
      }
      say(std::string(took) + "waiting for the next save of " + source + " (Ctrl-C to stop)");
    } else {
      say("lab04_attention.cpp does not compile (the messages are above); waiting for the next "
          "save");
    }
    if (!saved_again()) wait_for_a_save(g_inotify, name, g_save);
  }
}
