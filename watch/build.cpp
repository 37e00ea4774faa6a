// watch/build.cpp: the watch's builds (watch.h says what the files share): the build folder's
// commands in a process group of their own, the compiler's messages kept apart from Ninja's
// lines, LibTorch loaded while the first build runs, the shortcut of Ninja's own two commands
// for a save, the resident compiler's way first (resident_client.cpp), and the rebuild of
// build/lab04_attention after a run. lab_watch.cpp is the loop that asks for them.

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "watch.h"

// Set by CMakeLists.txt for this build folder.
constexpr const char* kBuildDir = LAB_BUILD_DIR;    // the build folder
constexpr const char* kModule = LAB_MODULE;         // the lab as a module
constexpr const char* kRuntime = LAB_RUNTIME;       // LibTorch, and its headers' inline code
constexpr const char* kObject = LAB_OBJECT;         // the lab's object, linked into the module
constexpr const char* kBuildTool = LAB_BUILD_TOOL;  // ninja, or else cmake (--build)

namespace watch {

pid_t g_build_group = -1;  // the build's process group while it runs

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

// A command run in the build folder (watch.h). `live`: its output goes straight to standard
// error (the first build), else to a pipe.
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
bool finish_build(Build& b, bool show, std::string* kept) {
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
    resident_learn(compile);
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

Entry g_entry = {kModule, "main"};  // what a run calls: the build's module and main, or else
                                    // the resident compiler's module and entry point
std::string g_compiled_by;          // by whom, and how long it took (the watch's line)

// Builds `targets`, loading LibTorch meanwhile when it was built before. The watch's saves
// (`shortcut`) are compiled by its resident compiler where it can, else by clang++.
bool build(const std::vector<const char*>& targets, bool shortcut) {
  g_entry = {kModule, "main"};
  double start = now();
  auto compiled_by = [start](const char* who) {
    char line[80];
    std::snprintf(line, sizeof line, "compiled by %s in %.2f s", who, now() - start);
    g_compiled_by = line;
    return true;
  };
  std::string why;
  if (shortcut && resident_build(g_entry, why)) return compiled_by("the watch");
  if (!why.empty()) say("compiled by clang++, not in the watch: " + why);
  if (shortcut && take_shortcut()) return compiled_by("clang++");
  bool first = !exists(kModule) || !exists(kRuntime);
  if (first)
    say("building the lab as a module; the first time also LibTorch's inline code, once, which "
        "takes a while");
  Build b = start_build(targets, first);
  bool loaded = !first && load_runtime(/*quiet=*/true);  // may fail if being relinked: retried
  bool built = finish_build(b) && (loaded || load_runtime(/*quiet=*/false));
  if (built && shortcut) learn_shortcut();
  return built && compiled_by("clang++");
}

// After a run and its verdict: build/lab04_attention, the program every other command runs (the
// README's experiments, the checker, the tests), is rebuilt from the lab just run, so that it
// never runs an older save. Quietly (the run above showed any error); stopped when `waiting`
// is readable and `wanted()` says so (the watch: a save, the next build redoes it; --once's
// server: its next client, for whom it rebuilds after).
void rebuild_the_program(int waiting, const std::function<bool()>& wanted) {
  Build b = start_build({"lab04_attention"}, false);
  if (b.pid < 0) return;
  char chunk[4096];
  bool stopped = false;
  while (b.output >= 0) {
    pollfd fds[3] = {
        {g_signals, POLLIN, 0}, {b.output, POLLIN, 0}, {stopped ? -1 : waiting, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if ((fds[0].revents & POLLIN))
      if (int sig = stop_signal()) stop(sig);
    if (!stopped && (fds[2].revents & POLLIN) && wanted()) {
      kill(-b.pid, SIGTERM);  // Ninja removes what it half wrote
      stopped = true;
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(b.output, chunk, sizeof chunk);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
  }
  close(b.output);
  wait_for_child(b.pid);
  g_build_group = -1;
}

}  // namespace watch
