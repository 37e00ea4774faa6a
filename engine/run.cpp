// engine/run.cpp: the run engine (engine/run.h says what it is for and how it is asked).

#include "run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>

namespace engine {
namespace {

constexpr int kRefused = 126;  // the child's status when it could not enter its sandbox
constexpr const char* kRefusal = "lab04 engine: could not ";
constexpr double kAfterTheEnd = 2.0;  // seconds the pipes may still bring output once it ended

double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// A descriptor that is readable once the child has ended (Linux 5.3), or -1: the loop then
// looks every 20 ms.
int exit_descriptor(pid_t child) {
#ifdef SYS_pidfd_open
  return int(syscall(SYS_pidfd_open, child, 0));
#else
  (void)child;
  return -1;
#endif
}

void close_from_3() {  // nothing of this process's is left open in the lab: no pipe, no lock
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3, ~0U, 0) == 0) return;
#endif
  for (int fd = 3; fd < 65536; ++fd) close(fd);
}

// In the child: its descriptors, the caller's sandbox, its limits, then the lab. Never returns.
[[noreturn]] void in_child(const Job& job, int out, int err) {
  // A process group of its own, what it starts is killed with it; in a session of its own, it
  // has no terminal to reach either.
  if (job.own_session)
    setsid();
  else
    setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives its caller
  int null = open("/dev/null", O_RDONLY);
  if (null < 0 || dup2(null, 0) < 0) _exit(kRefused);
  if (job.capture && (dup2(out, 1) < 0 || dup2(err, 2) < 0)) _exit(kRefused);
  for (int fd = 0; fd < 3; ++fd) {
    if (job.given[fd] >= 0 && dup2(job.given[fd], fd) < 0) _exit(kRefused);
    if (job.given[fd] == kClosed) close(fd);
  }
  close_from_3();
  if (job.enter) job.enter();
  for (auto [resource, limit] : job.limits) {
    rlimit now{};
    getrlimit(resource, &now);  // a user's process may lower its limits, never raise them
    // CPU time: SIGXCPU at the limit, SIGKILL a second later.
    rlim_t hard = resource == RLIMIT_CPU ? limit + 1 : limit;
    rlimit wanted{std::min(limit, now.rlim_max), std::min(hard, now.rlim_max)};
    if (setrlimit(resource, &wanted) != 0) refuse("set a limit");
  }
  _exit(job.lab ? job.lab() : 0);
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

bool over(const Job& job, const Run& r) {
  return r.out.size() > job.max_out || r.err.size() > job.max_err;
}

}  // namespace

[[noreturn]] void refuse(const char* what) {
  std::fprintf(stderr, "%s%s: %s\n", kRefusal, what, std::strerror(errno));
  std::fflush(stderr);
  _exit(kRefused);
}

Run run(const Job& job) {
  Run r;
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (job.capture && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) {
    r.err = std::string("could not make a pipe: ") + std::strerror(errno);
    for (int fd : {out[0], out[1]}) close(fd);
    r.stopped = Stopped::kStart;
    return r;
  }
  std::fflush(nullptr);  // nothing of this process's buffers is written twice
  pid_t child = fork();
  if (child == 0) in_child(job, out[1], err[1]);
  if (job.capture) close(out[1]), close(err[1]);
  if (child < 0) {
    r.err = std::string("could not fork: ") + std::strerror(errno);
    if (job.capture) close(out[0]), close(err[0]);
    r.stopped = Stopped::kStart;
    return r;
  }
  if (!job.own_session) setpgid(child, child);  // (its group exists before any kill(-child))
  if (job.started) job.started(child);
  auto kill_leftovers = [&] {
    if (job.kill_leftovers)
      job.kill_leftovers(child);
    else
      kill(-child, SIGKILL);
  };
  const double forever = std::numeric_limits<double>::infinity();
  double deadline = job.wall_ms > 0 ? now() + 1e-3 * double(job.wall_ms) : forever;
  int pipes[2] = {out[0], err[0]};
  std::string* into[2] = {&r.out, &r.err};
  int ended = exit_descriptor(child);
  bool exited = false;
  int status = 0;
  while (r.stopped == Stopped::kNo && !(exited && pipes[0] < 0 && pipes[1] < 0)) {
    double left = deadline - now();
    if (left <= 0) {  // the limit judges the lab, not this loop, which may wake late
      if (!exited && waitpid(child, &status, WNOHANG) == child) exited = true;
      if (!exited) r.stopped = Stopped::kTime;
      break;
    }
    std::vector<pollfd> fds = {
        {pipes[0], POLLIN, 0}, {pipes[1], POLLIN, 0}, {exited ? -1 : ended, POLLIN, 0}};
    for (int fd : job.wake_on) fds.push_back({fd, POLLIN, 0});
    int ms = left == forever ? -1 : int(std::min(left, 3600.0) * 1000) + 1;
    if (ended < 0 && !exited) ms = ms < 0 ? 20 : std::min(ms, 20);
    if (poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (pipes[i] < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char chunk[65536];
      ssize_t n = read(pipes[i], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(pipes[i]);
        pipes[i] = -1;
        continue;
      }
      into[i]->append(chunk, size_t(n));
      if (over(job, r)) r.stopped = Stopped::kSize;
    }
    for (size_t i = 3; i < fds.size(); ++i)
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && job.woken && job.woken(fds[i].fd))
        r.stopped = Stopped::kCancelled;
    if (!exited && waitpid(child, &status, WNOHANG) == child) {
      exited = true;  // what it left behind must not hold the pipes: gone at once
      kill_leftovers();
      deadline = std::min(deadline, now() + kAfterTheEnd);
    }
  }
  if (!exited) {
    kill(-child, SIGKILL);
    kill(child, SIGKILL);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  kill_leftovers();
  if (r.stopped == Stopped::kNo || r.stopped == Stopped::kTime) {  // all it wrote counts
    read_what_is_left(pipes[0], r.out, job.max_out);
    read_what_is_left(pipes[1], r.err, job.max_err);
    if (r.stopped == Stopped::kNo && over(job, r)) r.stopped = Stopped::kSize;
  }
  for (int fd : {pipes[0], pipes[1], ended})
    if (fd >= 0) close(fd);
  r.status = status;
  // The child could not enter its sandbox: the caller's failure, not the lab's (none of its
  // code ran).
  if (r.stopped == Stopped::kNo && WIFEXITED(status) && WEXITSTATUS(status) == kRefused &&
      r.err.rfind(kRefusal, 0) == 0)
    r.stopped = Stopped::kStart;
  return r;
}

int resource_named(const std::string& name) {
  return name == "as"      ? RLIMIT_AS
         : name == "nproc" ? RLIMIT_NPROC
         : name == "fsize" ? RLIMIT_FSIZE
         : name == "cpu"   ? RLIMIT_CPU
         : name == "core"  ? RLIMIT_CORE
         : name == "stack" ? RLIMIT_STACK
                           : -1;
}

const char* stopped_name(Stopped stopped) {
  switch (stopped) {
    case Stopped::kNo: return "-";
    case Stopped::kTime: return "time";
    case Stopped::kSize: return "size";
    case Stopped::kStart: return "start";
    case Stopped::kCancelled: return "cancelled";
  }
  return "-";
}

}  // namespace engine
