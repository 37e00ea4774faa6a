// fast_lab.h: what the test client (client.cpp, build/tests/lab04_fast) and the lab server
// (server.cpp, build/tests/lab04_fast_server) share: where the server listens, the messages
// they exchange, and how a server is started.
//
// Aims. The tests run the lab some 30 times, and each run of build/lab04_attention spends about
// 0.65 s in LibTorch's start before the lab's first line. The server loads LibTorch once and
// runs each lab in a forked child; the client stands in for the lab, so that a test (or the
// checker) that runs it cannot tell it from the lab, only that it is faster. Whenever the
// server cannot give the lab exactly what the lab would have had, the client runs the real lab
// instead: slower, never wrong.
//
// The paths are compiled in as absolute paths (tests/fast_lab/fast_lab.cmake): a copy of the
// client (the checker copies the lab it checks) reaches the same server.
//
// One server for each environment LibTorch may start in: the variables it, OpenMP, BLAS and
// the loader read as the lab's process starts (read_at_load) were read when the server
// started, so a client reaches only the server started with the same ones, named by their
// hash: build/tests/lab04_fast-<hash>.sock. The tests' runs have ctest's environment; the
// checker runs its labs in a minimal one (no such variable), a second server.
#pragma once

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
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace fast_lab {

constexpr const char* kFolder = FAST_LAB_FOLDER;  // where the servers listen (build/tests)
constexpr const char* kServer = FAST_LAB_SERVER;  // build/tests/lab04_fast_server

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
  uint32_t program = 0;  // which of the server's programs: 0 the lab, 1 the option parser's test
  uint32_t argc = 0, envc = 0;
};

inline bool write_all(int fd, const void* data, size_t size) {
  auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

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

// The server for an environment: the sorted variables read at load, hashed (FNV-1a).
struct Place {
  std::string socket, lock;
};
inline Place place_for(char** env) {
  std::vector<std::string> read;
  for (const std::string& e : server_environment(env))
    if (read_at_load(e)) read.push_back(e);
  std::sort(read.begin(), read.end());
  uint64_t hash = 14695981039346656037ull;
  for (const std::string& e : read)
    for (const char c : e + '\0') hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof name, "/lab04_fast-%016llx", static_cast<unsigned long long>(hash));
  return {kFolder + std::string(name) + ".sock", kFolder + std::string(name) + ".lock"};
}

// Starts a server as a daemon (its own session, stdio on /dev/null, in /), handing it the
// start lock `lock`, which it releases once it listens. Returns once the daemon is started,
// not once it is ready: take_lock() waits for that.
inline bool spawn_server(int lock) {
  std::vector<std::string> env = server_environment(environ);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char serve[] = "serve", fd3[] = "3", name[] = "lab04_fast_server";
  char* argv[] = {name, serve, fd3, nullptr};
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
    if (chdir("/") == 0) execve(kServer, argv, envp.data());
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
inline bool ensure_server(const Place& place, bool wait, double seconds = 30) {
  int lock = take_lock(place.lock, seconds);
  if (lock < 0) return false;
  if (fresh_server_answers(place.socket)) {
    close(lock);
    return true;
  }
  bool spawned = spawn_server(lock);
  close(lock);  // the daemon holds it until it listens
  if (!spawned) return false;
  if (!wait) return true;
  lock = take_lock(place.lock, seconds);
  if (lock < 0) return false;
  close(lock);
  return true;
}

}  // namespace fast_lab
