// engine/stand_in/server.cpp: the server's side of a stand-in (server.h says what each does).

#include "stand_in/server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace stand_in {

int listen_at(const Place& place, int backlog) {
  int folder;
  sockaddr_un a = address(place.socket, folder);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  unlink(a.sun_path);
  mode_t mask = umask(077);
  if (fd >= 0 &&
      (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, backlog) != 0)) {
    int why = errno;
    close(fd);
    fd = -1;
    errno = why;
  }
  umask(mask);
  if (folder >= 0) close(folder);
  return fd;
}

std::set<std::string> load_env(const std::vector<std::string>& env) {
  std::set<std::string> kept;
  for (const std::string& e : env)
    if (read_at_load(e)) kept.insert(e);
  return kept;
}

std::string ns_of(const std::string& proc, const char* name) {
  char link[256] = "";
  ssize_t n = readlink((proc + "/ns/" + name).c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, size_t(n)) : "?";
}

FileId file_id(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_mtim, st.st_size};
}

Start start_of_this_process() {
  Start start;
  start.load_env = load_env(server_environment(environ));
  sched_getaffinity(0, sizeof start.cpus, &start.cpus);
  getrlimit(RLIMIT_STACK, &start.stack);
  for (int i = 0; i < 5; ++i) start.ns[i] = ns_of("/proc/self", kNamespaces[i]);
  return start;
}

void close_received(Request& r) {
  for (int i = 0; i < r.count; ++i) close(r.fds[i]);
  r.count = 0;
}

void buffer_as_stdbuf(FILE* stream, const char* mode) {
  if (!mode || !*mode) return;
  if (std::strcmp(mode, "L") == 0) {
    std::setvbuf(stream, nullptr, _IOLBF, 0);
  } else if (std::strcmp(mode, "0") == 0) {
    std::setvbuf(stream, nullptr, _IONBF, 0);
  } else {
    char* end = nullptr;
    unsigned long long size = std::strtoull(mode, &end, 10);
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    size <<= shift;
    if (size > 0 && size < (1ull << 31))
      std::setvbuf(stream, static_cast<char*>(std::malloc(size)), _IOFBF, size);
  }
}

int working_folder(const Request& r) { return r.fds[__builtin_popcount(r.fixed.fds)]; }

bool take_descriptors(Request& r) {
  int at = 0;
  for (int fd = 0; fd < 3; ++fd) {
    if ((r.fixed.fds >> fd) & 1) {
      if (dup2(r.fds[at++], fd) < 0) return false;
    } else {
      close(fd);
    }
  }
  if (fchdir(working_folder(r)) != 0) return false;
  if (close_range(3, ~0u, 0) != 0)
    for (int fd = 3; fd < 65536; ++fd) close(fd);
  return true;
}

bool take_context(const Request& r, std::vector<char*>& argv, std::vector<char*>& env) {
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal(sig, (r.fixed.ignored >> (sig - 1)) & 1 ? SIG_IGN : SIG_DFL);
  umask(mode_t(r.fixed.umask));
  for (int i = 0; i < kLimitCount; ++i) {
    rlimit limit{rlim_t(r.fixed.limits[i][0]), rlim_t(r.fixed.limits[i][1])};
    if (setrlimit(kLimits[i], &limit) != 0) return false;
  }
  environ = env.data();
  buffer_as_stdbuf(stdout, getenv("_STDBUF_O"));
  buffer_as_stdbuf(stderr, getenv("_STDBUF_E"));
  program_invocation_name = argv[0];
  const char* slash = std::strrchr(argv[0], '/');
  program_invocation_short_name = slash ? const_cast<char*>(slash + 1) : argv[0];
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig)
    if ((r.fixed.blocked >> (sig - 1)) & 1) sigaddset(&mask, sig);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  return true;
}

const char* cannot_serve(int fd, const Request& r, const std::vector<std::string>& env,
                         const Start& start, uint32_t programs) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.pid <= 0) return "no peer";
  if (peer.uid != geteuid()) return "another user";
  std::string proc = "/proc/" + std::to_string(peer.pid);
  for (int i = 0; i < 5; ++i)
    if (ns_of(proc, kNamespaces[i]) != start.ns[i]) return "another namespace";
  struct stat root {
  }, own{};
  if (stat((proc + "/root").c_str(), &root) != 0 || stat("/", &own) != 0 ||
      root.st_dev != own.st_dev || root.st_ino != own.st_ino)
    return "another root";
  if (load_env(env) != start.load_env) return "another environment for LibTorch's start";
  if (!CPU_EQUAL(&r.fixed.cpus, &start.cpus)) return "another CPU affinity";
  if (r.fixed.stack[0] != uint64_t(start.stack.rlim_cur) ||
      r.fixed.stack[1] != uint64_t(start.stack.rlim_max))
    return "another stack limit";
  if (r.fixed.fds >= 8 || r.count != __builtin_popcount(r.fixed.fds) + 1) return "descriptors";
  if (r.fixed.program >= programs) return "an unknown program";
  return nullptr;
}

bool limits_too_high(const Request& r) {  // a child can lower its limits, never raise them
  for (int i = 0; i < kLimitCount; ++i) {
    rlimit own{};
    getrlimit(kLimits[i], &own);
    if (own.rlim_max != RLIM_INFINITY &&
        (r.fixed.limits[i][0] > own.rlim_max || r.fixed.limits[i][1] > own.rlim_max))
      return true;
  }
  return false;
}

bool receive(int fd, Header& h, Request& r) {
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
  iovec io{&h, sizeof h};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&m) : nullptr; c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int count = int((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count; ++i) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
      if (r.count < 4) {
        r.fds[r.count++] = got;
      } else {
        close(got);
      }
    }
  }
  if (n <= 0 || (m.msg_flags & MSG_CTRUNC)) return false;
  if (size_t(n) < sizeof h && !read_all(fd, reinterpret_cast<char*>(&h) + n, sizeof h - size_t(n)))
    return false;
  if (h.magic != kMagic || h.length > kMaxPayload) return false;
  if (h.kind != kRun) return h.length == 0;
  if (h.length < sizeof r.fixed || !read_all(fd, &r.fixed, sizeof r.fixed)) return false;
  r.strings.resize(h.length - sizeof r.fixed);
  return read_all(fd, r.strings.data(), r.strings.size());
}

bool split(Request& r, std::vector<char*>& argv, std::vector<char*>& env) {
  if (r.strings.empty() || r.strings.back() != '\0' || r.fixed.argc == 0) return false;
  for (size_t at = 0; at < r.strings.size(); at += std::strlen(&r.strings[at]) + 1)
    (argv.size() < r.fixed.argc ? argv : env).push_back(&r.strings[at]);
  bool counts = argv.size() == r.fixed.argc && env.size() == r.fixed.envc;
  argv.push_back(nullptr);
  env.push_back(nullptr);
  return counts;
}

Incoming accept_request(int listening) {
  Incoming in;
  in.fd = accept4(listening, nullptr, nullptr, SOCK_CLOEXEC);
  if (in.fd < 0) return in;
  timeval limit{5, 0};
  setsockopt(in.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  in.whole = receive(in.fd, in.h, in.r);
  return in;
}
}  // namespace stand_in
