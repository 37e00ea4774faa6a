// watch/verdict.cpp: the watch's verdict, the lines starting with "check:" after each run
// (watch/lab_watch.cpp says what they are). The checker, checker/watch_verdict.py, judges; the
// watch runs the checker's cases itself, each through the run engine within the checker's
// limits, and hands it what they printed.

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "../engine/write_all.h"
#include "watch.h"

namespace watch {

constexpr const char* kBuildDir = LAB_BUILD_DIR;  // the build folder
constexpr const char* kChecker = LAB_CHECKER;     // checker/, whose watch_verdict.py judges

// --- the verdict ----------------------------------------------------------------------------
// The checker (checker/watch_verdict.py, started through checker/find_torch_python, which finds
// a Python that can import torch) speaks on a pair of pipes. It first says "none" (no such
// Python), or its cases and limits:
//   cases <count> <time limit, ms> <max stdout bytes> <max stderr bytes>
//   limits <name>=<value> ...        (as, nproc, fsize, cpu, core: each run's resource limits)
//   case <text> <lab option> ...     (one per case)
// then loads torch and the reference (a verdict it keeps, on runs that print what they printed
// before, needs neither). For each verdict the watch sends
//   job <id> <count>, then for each case run: ran <text> <status> <stopped> <out bytes> <err
//   bytes> and those bytes (<status>: exit status, or minus the signal; <stopped>: - time size)
// and the checker answers with lines "check: ...", then "end <id>" (and before it "final" when
// it cannot judge here at all, torch failing to load: the watch then asks no more).

namespace {

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

}  // namespace

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
        "exec \"${p%% *}\" \"$1/watch_verdict.py\" --memo \"$3\" \"$2\"";
    // As the report names the program in a case's command: this one builds what is saved now
    // and runs it as the verdict's runs ran (build/lab04_attention is rebuilt by cmake --build,
    // not by the watch, and may be older).
    std::string program = std::string(kBuildDir) + "/lab04_watch --once --no-check";
    std::string memo = std::string(kBuildDir) + "/checker_memo";  // the verdicts it keeps
    execl("/bin/sh", "sh", "-c", script, "sh", kChecker, program.c_str(), memo.c_str(),
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

namespace {

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
    int ready = wait_any({g_checker.from, g_client >= 0 ? g_client : g_inotify}, -1);
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
        int resource = engine::resource_named(name);
        if (resource >= 0) g_checker.limits.push_back({resource, value});
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

// Runs the lab on one of the checker's cases, within the checker's limits; its run, which a
// save may have cancelled.
engine::Run run_case(const std::string& program, const Case& c) {
  engine::Job job;
  job.wall_ms = g_checker.timeout_ms;
  job.max_out = g_checker.max_out;
  job.max_err = g_checker.max_err;
  job.limits = g_checker.limits;
  return run_in_child(job, [&program, &c] {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // as the checker's stdbuf -oL: a crash loses no line
    std::vector<std::string> words = {program};
    words.insert(words.end(), c.args.begin(), c.args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    return lab_main(argv);
  });
}

void say_check(const std::string& line) {
  std::string text = "check: " + line + "\n";
  if (write(STDERR_FILENO, text.data(), text.size()) < 0) return;
}

}  // namespace

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
    engine::Run r = run_case(program, c);
    if (r.stopped == engine::Stopped::kCancelled) return false;
    int status = r.stopped == engine::Stopped::kNo ? r.code() : 0;
    job += "ran " + c.text + " " + std::to_string(status) + " " + engine::stopped_name(r.stopped) +
           " " + std::to_string(r.out.size()) + " " + std::to_string(r.err.size()) + "\n" + r.out +
           r.err;
    ++count;
    // The others would wait as long: the checker says so.
    if (r.stopped == engine::Stopped::kTime) break;
  }
  int id = ++g_checker.job;
  const std::string message =
      "job " + std::to_string(id) + " " + std::to_string(count) + "\n" + job;
  if (!write_all(g_checker.to, message.data(), message.size())) {
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

}  // namespace watch
