// lab04_fast: build/lab04_attention for the tests, without LibTorch's 0.65 s start.
//
//   build/tests/lab04_fast [lab options]    exactly as build/lab04_attention [lab options]
//
// Aims. A test (or the checker) runs it as it would run the lab, and cannot tell the
// difference but by the time it takes: it asks the lab server (server.cpp), which has loaded
// LibTorch, to run the lab with this process's arguments, environment, working folder,
// descriptors 0, 1 and 2, umask, signal mask and ignored signals and resource limits; the lab
// writes to this process's own descriptors; this process then ends as the lab ended (the same
// exit status, or killed by the same signal). Signals sent to it reach the lab; if it is
// killed outright, the server kills the lab.
//
// No server listening: it starts one (under a lock: two clients never start two) and waits
// until it listens. Whenever that fails, or the server cannot run the lab as the lab would run
// (another user's, a sandbox's namespaces, another OpenMP setting), it runs the real lab
// (execv): slower, never wrong. It prints nothing of its own but when the server dies during a
// run (one line, exit 125): then the lab's output is cut short, and it cannot be run again.

#include <dlfcn.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>

#include <cstdio>

#include "fast_lab.h"

namespace {

using namespace fast_lab;

// Which program it stands in for: the lab (0; without a server, the real lab is run), or the
// option parser's test (1; without a server, its module is loaded into this process, after
// LibTorch, and its main called: the same run, with LibTorch's start).
constexpr uint32_t kProgram = FAST_LAB_PROGRAM;
#ifdef FAST_LAB_REAL_LAB
constexpr const char* kRealLab = FAST_LAB_REAL_LAB;  // build/lab04_attention
#else
constexpr const char* kRealLab = FAST_LAB_MODULE;  // its module
#endif

// The signals passed on to the lab. SIGTSTP (Ctrl-Z) stops the lab and this process; SIGCONT
// continues both.
constexpr int kPassedOn[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,   SIGUSR1, SIGUSR2, SIGALRM,
                             SIGPIPE, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGTSTP, SIGCONT};

[[noreturn]] void run_real_lab(char** argv) {
#ifdef FAST_LAB_REAL_LAB
  execv(kRealLab, argv);
  std::fprintf(stderr, "lab04_fast: cannot run %s: %s\n", kRealLab, std::strerror(errno));
#else
  void* module =
      dlopen(FAST_LAB_RUNTIME, RTLD_NOW | RTLD_GLOBAL) ? dlopen(kRealLab, RTLD_NOW) : nullptr;
  auto real_main = module ? reinterpret_cast<int (*)(int, char**)>(dlsym(module, "main")) : nullptr;
  if (real_main) {
    int argc = 0;
    while (argv[argc]) ++argc;
    std::exit(real_main(argc, argv));
  }
  std::fprintf(stderr, "lab04_fast: cannot load %s: %s\n", kRealLab, dlerror());
#endif
  _exit(127);
}

struct Snapshot {  // what the lab would inherit, taken before this process changes any of it
  sigset_t blocked;
  uint64_t ignored = 0;
};

// The request of a run: Fixed, then argv and environ; and the descriptors sent with it.
std::vector<char> run_request(int argc, char** argv, const Snapshot& s, std::vector<int>& fds) {
  Fixed f;
  for (int fd = 0; fd < 3; ++fd)
    if (fcntl(fd, F_GETFD) >= 0) {
      f.fds |= 1u << fd;
      fds.push_back(fd);
    }
  mode_t mask = umask(0);
  umask(mask);
  f.umask = mask;
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig)
    if (sigismember(&s.blocked, sig) == 1) f.blocked |= uint64_t(1) << (sig - 1);
  f.ignored = s.ignored;
  for (int i = 0; i < kLimitCount; ++i) {
    rlimit r{};
    getrlimit(kLimits[i], &r);
    f.limits[i][0] = r.rlim_cur;
    f.limits[i][1] = r.rlim_max;
  }
  rlimit stack{};
  getrlimit(RLIMIT_STACK, &stack);
  f.stack[0] = stack.rlim_cur;
  f.stack[1] = stack.rlim_max;
  sched_getaffinity(0, sizeof f.cpus, &f.cpus);
  f.program = kProgram;
  f.argc = uint32_t(argc);
  std::vector<char> strings;
  for (int i = 0; i < argc; ++i)
    strings.insert(strings.end(), argv[i], argv[i] + std::strlen(argv[i]) + 1);
  for (char** e = environ; e && *e; ++e, ++f.envc)
    strings.insert(strings.end(), *e, *e + std::strlen(*e) + 1);
  std::vector<char> payload(sizeof f);
  std::memcpy(payload.data(), &f, sizeof f);
  payload.insert(payload.end(), strings.begin(), strings.end());
  return payload;
}

bool send_request(int sock, const std::vector<char>& payload, std::vector<int> fds) {
  int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cwd < 0) return false;
  fds.push_back(cwd);
  Header h;
  h.kind = kRun;
  h.length = uint32_t(payload.size());
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  iovec io{&h, sizeof h};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  ssize_t n;
  while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  close(cwd);
  if (n < 0) return false;
  if (size_t(n) < sizeof h &&
      !write_all(sock, reinterpret_cast<char*>(&h) + n, sizeof h - size_t(n)))
    return false;
  return write_all(sock, payload.data(), payload.size());
}

// Ends this process as the lab ended.
[[noreturn]] void end_as(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  prctl(PR_SET_DUMPABLE, 0);  // the lab dumped its core, if any: not this process's too
  signal(sig, SIG_DFL);
  sigset_t just;
  sigemptyset(&just);
  sigaddset(&just, sig);
  sigprocmask(SIG_UNBLOCK, &just, nullptr);
  raise(sig);
  _exit(128 + sig);  // a signal that does not end a process
}

// While the lab runs: signals received go to the lab; the server's last word is its status.
[[noreturn]] void follow(int sock, const Snapshot& s) {
  sigset_t passed;
  sigemptyset(&passed);
  for (int sig : kPassedOn)
    if (!((s.ignored >> (sig - 1)) & 1)) sigaddset(&passed, sig);  // ignored stays ignored
  sigprocmask(SIG_BLOCK, &passed, nullptr);
  int signals = signalfd(-1, &passed, SFD_CLOEXEC);
  for (;;) {
    pollfd fds[2] = {{sock, POLLIN, 0}, {signals, POLLIN, 0}};
    if (poll(fds, signals >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (signals >= 0 && (fds[1].revents & POLLIN)) {
      signalfd_siginfo info{};
      if (read(signals, &info, sizeof info) == sizeof info) {
        int sig = int(info.ssi_signo);
        send_record(sock, kSignal, sig == SIGTSTP ? SIGSTOP : sig);  // the lab is in no job
        if (sig == SIGTSTP) raise(SIGSTOP);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      Record r;
      if (read_all(sock, &r, sizeof r) && r.kind == kEnded) end_as(r.value);
      break;
    }
  }
  std::fprintf(stderr, "lab04_fast: the lab server ended during the run; run %s to see the rest\n",
               kProgram == 0 ? kRealLab : "it again");
  _exit(125);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 1 || !argv[0]) run_real_lab(argv);
  Snapshot s;
  sigprocmask(SIG_SETMASK, nullptr, &s.blocked);
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig) {
    struct sigaction a {};
    if (sigaction(sig, nullptr, &a) == 0 && a.sa_handler == SIG_IGN)
      s.ignored |= uint64_t(1) << (sig - 1);
  }
  std::vector<int> fds;
  std::vector<char> payload = run_request(argc, argv, s, fds);
  Place place = place_for(environ);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int sock = connect_server(place.socket);
    if (sock < 0) {  // none listens: start one, and try again
      if (attempt == 0 && ensure_server(place, /*wait=*/true)) continue;
      break;
    }
    Record r;
    if (!send_request(sock, payload, fds) || !read_all(sock, &r, sizeof r)) {
      close(sock);  // a server stopping as this client came: start a fresh one
      if (attempt == 0 && ensure_server(place, /*wait=*/true)) continue;
      break;
    }
    if (r.kind == kGo) follow(sock, s);
    close(sock);
    if (r.kind != kStale || attempt > 0 || !ensure_server(place, /*wait=*/true)) break;
  }
  run_real_lab(argv);
}
