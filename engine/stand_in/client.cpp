// engine/stand_in/client.cpp: the client's side of a stand-in (client.h says what each does).

#include "stand_in/client.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "write_all.h"

extern char** environ;

namespace stand_in {

bool spawn_server(int lock, const char* program, std::vector<std::string> args) {
  std::vector<std::string> env = server_environment(environ);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (fork() != 0) _exit(0);  // the daemon is no child of the starter's
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(127);
    if (lock == 3) {
      fcntl(3, F_SETFD, 0);
    } else if (dup2(lock, 3) < 0) {
      _exit(127);
    }
    if (close_range(4, ~0u, 0) != 0)
      for (int fd = 4; fd < 1024; ++fd) close(fd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    umask(022);
    if (chdir("/") == 0) execve(program, argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool ensure_server(const Place& place, const char* program, const std::vector<std::string>& args,
                   bool wait, double seconds) {
  int lock = take_lock(place.lock, seconds);
  if (lock < 0) return false;
  if (fresh_server_answers(place.socket)) {
    close(lock);
    return true;
  }
  bool spawned = spawn_server(lock, program, args);
  close(lock);  // the daemon holds it until it listens
  if (!spawned) return false;
  if (!wait) return true;
  lock = take_lock(place.lock, seconds);
  if (lock < 0) return false;
  close(lock);
  return true;
}

void stop_servers_in(const std::string& folder, const std::string& prefix) {
  DIR* dir = opendir(folder.c_str());
  std::vector<int> asked;
  for (dirent* e = dir ? readdir(dir) : nullptr; e; e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind(prefix + "-", 0) != 0 || name.size() < 5 ||
        name.compare(name.size() - 5, 5, ".sock") != 0)
      continue;
    int fd = connect_server(folder + "/" + name);
    Header h;
    h.kind = kQuit;
    if (fd >= 0 && write_all(fd, &h, sizeof h)) asked.push_back(fd);
  }
  if (dir) closedir(dir);
  for (int fd : asked) {
    char byte;
    while (read(fd, &byte, 1) < 0 && errno == EINTR) {
    }
    close(fd);
  }
}

Snapshot snapshot() {
  Snapshot s;
  sigprocmask(SIG_SETMASK, nullptr, &s.blocked);
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig) {
    struct sigaction a {};
    if (sigaction(sig, nullptr, &a) == 0 && a.sa_handler == SIG_IGN)
      s.ignored |= uint64_t(1) << (sig - 1);
  }
  return s;
}

std::vector<char> run_request(int argc, char** argv, const Snapshot& s, uint32_t program,
                              std::vector<int>& fds) {
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
  f.program = program;
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

void end_as(int status) {
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

void follow(int sock, const Snapshot& s, const std::string& lost) {
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
  std::fprintf(stderr, "%s\n", lost.c_str());
  _exit(125);
}
}  // namespace stand_in
