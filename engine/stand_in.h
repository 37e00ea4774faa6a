// engine/stand_in.h: a program run by a server that stands in for its own process. The server
// has loaded LibTorch once; a client hands it, over a Unix socket, all that the program's
// process would have had (its arguments, environment, working folder, descriptors 0, 1 and 2,
// umask, signal mask and ignored signals, resource limits), and the server's child takes that
// on, runs the program, and the client ends as it ended. Shared by the tests' lab server
// (tests/fast_lab/) and the watch's --once server (watch/lab_watch.cpp).
//
// Aims. A program run this way cannot be told from one started as a process but by the time
// it takes; whenever the server cannot give it exactly what it would have had (another user, a
// sandbox's namespaces or root, another environment for LibTorch's start, CPU affinity or
// stack limit), the server refuses, and the client runs the program itself: slower, never
// wrong.
//
// One server for each environment LibTorch may start in: the variables it, OpenMP, BLAS and
// the loader read as a process starts (read_at_load) were read when the server started, so a
// client reaches only the server started with the same ones, named by their hash.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "write_all.h"

extern char** environ;

namespace stand_in {

// --- the messages ---------------------------------------------------------------------

// A request starts with a Header, sent with the client's descriptors (SCM_RIGHTS); a run's
// payload follows. Every answer and every later message is a Record.
constexpr uint32_t kMagic = 0x4c344633;  // "L4F3": a server of another version answers nothing
enum Kind : uint32_t {
  kRun = 'R',      // client: run the lab (payload: Fixed, then argv and environ)
  kPing = 'P',     // client: are you fresh? (answer kOk or kStale)
  kQuit = 'Q',     // client: stop once the runs in progress end (answer: the connection closes)
  kSignal = 'K',   // client, during a run: send the lab this signal
  kGo = 'G',       // server: the lab runs (value: its pid)
  kStale = 'S',    // server: I am out of date and stop; start a fresh one
  kRefused = 'N',  // server: I cannot run this lab as it would run; run the real one
  kEnded = 'W',    // server: the lab ended (value: its wait status)
  kOk = 'O',
};
struct Header {
  uint32_t magic = kMagic;
  uint32_t kind = 0;
  uint32_t length = 0;  // of the payload
};
struct Record {
  uint32_t kind = 0;
  int32_t value = 0;
};
constexpr uint32_t kMaxPayload = 64u << 20;

// The limits a child takes from the client (set with setrlimit), in this order; and the
// stack's, which it cannot take (glibc sizes threads' stacks from it when a process starts):
// it must be the server's.
constexpr int kLimits[] = {RLIMIT_AS,    RLIMIT_CPU,  RLIMIT_FSIZE,
                           RLIMIT_NPROC, RLIMIT_CORE, RLIMIT_NOFILE};
constexpr int kLimitCount = int(sizeof kLimits / sizeof kLimits[0]);
struct Fixed {                        // a run's payload, before argc + envc NUL-terminated strings
  uint32_t fds = 0;                   // bit n: the client's descriptor n (0, 1, 2) is open and sent
  uint32_t umask = 0;                 // the client's file mode creation mask
  uint64_t blocked = 0, ignored = 0;  // bit n-1: signal n blocked, ignored (SIG_IGN)
  uint64_t limits[kLimitCount][2] = {};
  uint64_t stack[2] = {};
  cpu_set_t cpus{};      // OpenMP counts them when LibTorch loads: must be the server's
  uint32_t program = 0;  // which of the server's programs (the server's own numbering)
  uint32_t argc = 0, envc = 0;
};

inline bool read_all(int fd, void* data, size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

inline bool send_record(int fd, uint32_t kind, int32_t value = 0) {
  Record r{kind, value};
  return write_all(fd, &r, sizeof r);
}

// The server's socket address. A path longer than sun_path holds is reached through its
// folder's descriptor (/proc/self/fd/N/name); `folder` then holds that descriptor, to close.
inline sockaddr_un address(const std::string& socket_path, int& folder) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  folder = -1;
  std::string path = socket_path;
  if (path.size() >= sizeof a.sun_path) {
    std::string dir = path.substr(0, path.rfind('/'));
    folder = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    path = "/proc/self/fd/" + std::to_string(folder) + path.substr(dir.size());
  }
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  return a;
}

// A connection to the server, or -1 when none listens.
inline int connect_server(const std::string& socket_path) {
  int folder;
  sockaddr_un a = address(socket_path, folder);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    fd = -1;
  }
  if (folder >= 0) close(folder);
  return fd;
}

// Sends a request without a payload, and reads the answer's kind (0: no answer).
inline uint32_t ask(int fd, uint32_t kind) {
  Header h;
  h.kind = kind;
  Record r;
  if (!write_all(fd, &h, sizeof h) || !read_all(fd, &r, sizeof r)) return 0;
  return r.kind;
}

// Whether a fresh server answers (a stale one, asked, stops listening and says so).
inline bool fresh_server_answers(const std::string& socket_path) {
  int fd = connect_server(socket_path);
  if (fd < 0) return false;
  bool fresh = ask(fd, kPing) == kOk;
  close(fd);
  return fresh;
}

// Takes the start lock on a new descriptor, waiting at most `seconds`; -1 if it could not.
inline int take_lock(const std::string& lock_path, double seconds) {
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; waited += 10) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= int(seconds * 1000)) {
      close(fd);
      return -1;
    }
    usleep(10000);
  }
  return fd;
}

// --- environments and where a server listens ---------------------------------------------

// The environment a server starts with: the starter's, without what stdbuf(1) added for the
// lab's own process (a child honours _STDBUF_O itself; the server must keep stdout untouched).
inline bool from_stdbuf(const std::string& entry) { return entry.rfind("_STDBUF_", 0) == 0; }
inline std::string without_stdbuf_preload(const std::string& value) {  // of LD_PRELOAD
  std::string kept, word;
  for (size_t at = 0; at <= value.size(); ++at) {
    if (at < value.size() && value[at] != ':' && value[at] != ' ') {
      word.push_back(value[at]);
      continue;
    }
    size_t slash = word.rfind('/');
    std::string name = slash == std::string::npos ? word : word.substr(slash + 1);
    if (!word.empty() && name != "libstdbuf.so") kept += (kept.empty() ? "" : ":") + word;
    word.clear();
  }
  return kept;
}
inline std::vector<std::string> server_environment(char** env) {
  std::vector<std::string> kept;
  for (char** e = env; e && *e; ++e) {
    std::string entry = *e;
    if (from_stdbuf(entry)) continue;
    if (entry.rfind("LD_PRELOAD=", 0) == 0) {
      std::string rest = without_stdbuf_preload(entry.substr(11));
      if (rest.empty()) continue;
      entry = "LD_PRELOAD=" + rest;
    }
    kept.push_back(entry);
  }
  return kept;
}

// Variables that LibTorch, OpenMP, BLAS, the C library and the dynamic loader read when the
// lab's process starts (OPENBLAS_CORETYPE chooses BLAS's kernels, OMP_NUM_THREADS the threads):
// a server read them when it started.
inline bool read_at_load(const std::string& entry) {
  static const char* prefixes[] = {"OMP_",    "GOMP_",    "KMP_",    "MKL_",           "OPENBLAS_",
                                   "TORCH_",  "PYTORCH_", "CUDA_",   "DNNL_",          "ONEDNN_",
                                   "CAFFE2_", "LD_",      "MALLOC_", "GLIBC_TUNABLES="};
  for (const char* p : prefixes)
    if (entry.rfind(p, 0) == 0) return true;
  return false;
}

// The server for an environment: in `folder`, named `prefix`-<hash>, the hash (FNV-1a) of
// the sorted variables read at load.
struct Place {
  std::string socket, lock;
};
inline Place place_for(char** env, const std::string& folder, const char* prefix) {
  std::vector<std::string> read;
  for (const std::string& e : server_environment(env))
    if (read_at_load(e)) read.push_back(e);
  std::sort(read.begin(), read.end());
  uint64_t hash = 14695981039346656037ull;
  for (const std::string& e : read)
    for (const char c : e + '\0') hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  char name[96];
  std::snprintf(name, sizeof name, "/%s-%016llx", prefix, static_cast<unsigned long long>(hash));
  return {folder + name + ".sock", folder + name + ".lock"};
}

// --- starting a server ---------------------------------------------------------------------

// Starts `program` `args` (args[0] its name; the lock's descriptor, 3, among them) as a daemon
// (its own session, stdio on /dev/null, in /), handing it the start lock `lock`, which it
// releases once it listens. Returns once the daemon is started,
// not once it is ready: take_lock() waits for that.
inline bool spawn_server(int lock, const char* program, std::vector<std::string> args) {
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

// Makes sure a fresh server runs or starts (under the lock: two starters never start two).
// wait: also wait until it listens (the client); else return once it is started (the tests'
// setup, so that LibTorch loads while the first tests start). False if none could be.
inline bool ensure_server(const Place& place, const char* program,
                          const std::vector<std::string>& args, bool wait, double seconds = 30) {
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

// Listens on `place`'s socket, this user's only (a dead server's socket there is removed first:
// the start lock is held, so no live one's); its descriptor, or -1 with errno.
inline int listen_at(const Place& place, int backlog) {
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

// Asks every server listening in `folder` (sockets named `prefix`-*.sock) to stop, and waits
// until they have: a server's connection closes as it exits.
inline void stop_servers_in(const std::string& folder, const std::string& prefix) {
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

// --- the client ------------------------------------------------------------------------------

// The signals passed on to the lab. SIGTSTP (Ctrl-Z) stops the lab and this process; SIGCONT
// continues both.
inline constexpr int kPassedOn[] = {SIGHUP,    SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,
                                    SIGUSR2,   SIGALRM, SIGPIPE, SIGXCPU, SIGXFSZ,
                                    SIGVTALRM, SIGPROF, SIGTSTP, SIGCONT};

struct Snapshot {  // what the lab would inherit, taken before this process changes any of it
  sigset_t blocked;
  uint64_t ignored = 0;
};
inline Snapshot snapshot() {
  Snapshot s;
  sigprocmask(SIG_SETMASK, nullptr, &s.blocked);
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig) {
    struct sigaction a {};
    if (sigaction(sig, nullptr, &a) == 0 && a.sa_handler == SIG_IGN)
      s.ignored |= uint64_t(1) << (sig - 1);
  }
  return s;
}

// The request of a run: Fixed, then argv and environ; and the descriptors sent with it.
inline std::vector<char> run_request(int argc, char** argv, const Snapshot& s, uint32_t program,
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

inline bool send_request(int sock, const std::vector<char>& payload, std::vector<int> fds) {
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
[[noreturn]] inline void end_as(int status) {
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
// Without it (the server died), `lost` is said on stderr, and the exit status is 125.
[[noreturn]] inline void follow(int sock, const Snapshot& s, const std::string& lost) {
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

// --- the server ------------------------------------------------------------------------------

inline std::set<std::string> load_env(const std::vector<std::string>& env) {
  std::set<std::string> kept;
  for (const std::string& e : env)
    if (read_at_load(e)) kept.insert(e);
  return kept;
}

inline std::string ns_of(const std::string& proc, const char* name) {
  char link[256] = "";
  ssize_t n = readlink((proc + "/ns/" + name).c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, size_t(n)) : "?";
}

// A file as stat() sees it: a rebuilt or removed file is another.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  timespec mtime{};
  off_t size = -1;
  bool operator==(const FileId& o) const {
    return dev == o.dev && ino == o.ino && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && size == o.size;
  }
};
inline FileId file_id(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_mtim, st.st_size};
}

// What a server was started with, that a child cannot change: compared with each client's.
constexpr const char* kNamespaces[] = {"mnt", "pid", "user", "net", "ipc"};
struct Start {
  std::set<std::string> load_env;  // the variables read as LibTorch loads
  cpu_set_t cpus{};
  rlimit stack{};
  std::string ns[5];
};
// This process's Start (its environment: server_environment(environ)).
inline Start start_of_this_process() {
  Start start;
  start.load_env = load_env(server_environment(environ));
  sched_getaffinity(0, sizeof start.cpus, &start.cpus);
  getrlimit(RLIMIT_STACK, &start.stack);
  for (int i = 0; i < 5; ++i) start.ns[i] = ns_of("/proc/self", kNamespaces[i]);
  return start;
}

struct Request {
  Fixed fixed;
  std::vector<char> strings;      // argv then environ, NUL-terminated
  int fds[4] = {-1, -1, -1, -1};  // the client's 0, 1, 2 (those sent) and working folder
  int count = 0;                  // descriptors received
};

inline void close_received(Request& r) {
  for (int i = 0; i < r.count; ++i) close(r.fds[i]);
  r.count = 0;
}

// Sets a stdio stream's buffering as stdbuf's library would from _STDBUF_O or _STDBUF_E:
// L by lines, 0 unbuffered, else a buffer of that many bytes (K, M, G: times 1024, 1024^2, ...).
inline void buffer_as_stdbuf(FILE* stream, const char* mode) {
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

// The client's working folder (sent after its descriptors).
inline int working_folder(const Request& r) { return r.fds[__builtin_popcount(r.fixed.fds)]; }

// In the child that becomes the client's program: the client's descriptors 0, 1 and 2 (those
// it sent; the others closed), its working folder, and nothing else open. False if that could
// not be done.
inline bool take_descriptors(Request& r) {
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

// Then the rest of what it would have inherited: signal dispositions and mask, umask, limits,
// environment, stdio buffering as stdbuf(1) asked, and its name. False if that could not be
// done (a limit above this process's hard limit: limits_too_high() said so).
inline bool take_context(const Request& r, std::vector<char*>& argv, std::vector<char*>& env) {
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
// Why this client cannot be served (nullptr: it can).
inline const char* cannot_serve(int fd, const Request& r, const std::vector<std::string>& env,
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

inline bool limits_too_high(const Request& r) {  // a child can lower its limits, never raise them
  for (int i = 0; i < kLimitCount; ++i) {
    rlimit own{};
    getrlimit(kLimits[i], &own);
    if (own.rlim_max != RLIM_INFINITY &&
        (r.fixed.limits[i][0] > own.rlim_max || r.fixed.limits[i][1] > own.rlim_max))
      return true;
  }
  return false;
}

inline bool receive(int fd, Header& h, Request& r) {
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

// Splits the strings of a run into argv and environ; false if they do not match the counts.
inline bool split(Request& r, std::vector<char*>& argv, std::vector<char*>& env) {
  if (r.strings.empty() || r.strings.back() != '\0' || r.fixed.argc == 0) return false;
  for (size_t at = 0; at < r.strings.size(); at += std::strlen(&r.strings[at]) + 1)
    (argv.size() < r.fixed.argc ? argv : env).push_back(&r.strings[at]);
  bool counts = argv.size() == r.fixed.argc && env.size() == r.fixed.envc;
  argv.push_back(nullptr);
  env.push_back(nullptr);
  return counts;
}

// A new connection, and its request read at once (a client writes it whole as it connects; it
// has 5 seconds): fd -1 when there was none; `whole`: the request was read.
struct Incoming {
  int fd = -1;
  bool whole = false;
  Header h;
  Request r;
};
inline Incoming accept_request(int listening) {
  Incoming in;
  in.fd = accept4(listening, nullptr, nullptr, SOCK_CLOEXEC);
  if (in.fd < 0) return in;
  timeval limit{5, 0};
  setsockopt(in.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  in.whole = receive(in.fd, in.h, in.r);
  return in;
}

}  // namespace stand_in
