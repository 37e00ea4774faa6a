// watch/once_server.cpp: --once, served. The README's rebuild-run, build/lab04_watch --once,
// used to load LibTorch, start the checker and compile the lab with clang++ at every call. Its
// first call now starts a server, `build/lab04_watch --serve`, which keeps between calls what
// the watch keeps between saves: LibTorch loaded, the checker with torch and its reference,
// the resident compiler that has read LibTorch's header (resident_client.cpp). Each --once is
// then a client: it hands the server its arguments, environment, working folder, descriptors
// 0, 1 and 2, umask, signal mask and limits (engine/stand_in/) and ends as the lab ended; the
// server builds, runs and judges the lab exactly as --once in its own process does, its lines
// on the client's terminal, each run taking on the client's environment, folder and limits.
//
// A signal to the client (Ctrl-C) stops the build, the run or the verdict, and the client then
// dies of it; a client killed outright stops them too. One server per environment LibTorch
// starts in (engine/stand_in/), listening in the build folder; a client it cannot serve as its
// own process would run (another user, a sandbox, another CPU affinity or stack limit) does
// --once itself. A server stops after 5 minutes without a client, on `build/lab04_watch
// --stop`, and once the watch or its runtime is rebuilt or the build folder removed.

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "stand_in/client.h"
#include "stand_in/server.h"
#include "watch.h"

namespace watch {

namespace {

using namespace stand_in;

constexpr const char* kBuildDir = LAB_BUILD_DIR;  // where the servers listen
constexpr const char* kRuntime = LAB_RUNTIME;     // LibTorch, with its headers' inline code
constexpr const char* kPrefix = "lab04_watch";    // the sockets: lab04_watch-<hash>.sock
constexpr int kIdleSeconds = 300;                 // an edit, and the next --once

std::string own_program() {  // this program's path (build/lab04_watch)
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, size_t(n)) : std::string();
}

// The request served now: what a run's child takes on (take_clients_context).
struct Served {
  Request* request = nullptr;
  std::vector<char*>* argv = nullptr;
  std::vector<char*>* env = nullptr;
  int signal = 0;  // the signal the client passed on (SIGKILL: it went away), once interrupted
};
Served g_served;

}  // namespace

// --- the client ---------------------------------------------------------------------------

void served_once(int argc, char** argv) {
  for (char** e = environ; e && *e; ++e)  // stdbuf(1)'s buffering is for the lab: run it here
    if (std::strncmp(*e, "_STDBUF_", 8) == 0) return;
  std::string self = own_program();
  if (self.empty()) return;
  Snapshot s = snapshot();
  std::vector<int> fds;
  std::vector<char> payload = run_request(argc, argv, s, 0, fds);
  Place place = place_for(environ, kBuildDir, kPrefix);
  std::vector<std::string> serve = {"lab04_watch", "--serve", "3"};
  for (int attempt = 0; attempt < 2; ++attempt) {
    int sock = connect_server(place.socket);
    if (sock < 0) {  // none listens: start one, and try again
      if (attempt == 0 && ensure_server(place, self.c_str(), serve, /*wait=*/true)) continue;
      return;
    }
    Record r;
    if (!send_request(sock, payload, fds) || !read_all(sock, &r, sizeof r)) {
      close(sock);  // a server stopping as this client came: start a fresh one
      if (attempt == 0 && ensure_server(place, self.c_str(), serve, /*wait=*/true)) continue;
      return;
    }
    if (r.kind == kGo)
      follow(sock, s,
             "watch: the --once server ended before the verdict; run build/lab04_watch --once "
             "again");
    close(sock);
    if (r.kind != kStale || attempt > 0 || !ensure_server(place, self.c_str(), serve, true)) return;
  }
}

// --- the server ---------------------------------------------------------------------------

bool client_interrupted() {
  pollfd p = {g_client, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  Record m;
  ssize_t n = recv(g_client, &m, sizeof m, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  bool signal = n == ssize_t(sizeof m) && m.kind == kSignal && m.value > 0 && m.value < NSIG;
  if (signal && (m.value == SIGSTOP || m.value == SIGCONT)) return false;  // Ctrl-Z, fg: the
  g_served.signal = signal ? m.value : SIGKILL;  // client waits; what runs here goes on
  return true;
}

void take_clients_context() {
  if (g_served.request &&
      !take_context(*g_served.request, *g_served.argv, *g_served.env))  // limits checked before
    _exit(125);
}

namespace {

Start g_start;
Place g_place;
FileId g_program, g_runtime, g_socket;
int g_listen = -1;

void stop_listening() {
  if (g_listen < 0) return;
  if (file_id(g_place.socket.c_str()) == g_socket) unlink(g_place.socket.c_str());
  close(g_listen);
  g_listen = -1;
}

bool stale() {  // rebuilt (the watch or LibTorch's runtime), or the build folder removed
  return !(file_id(own_program().c_str()) == g_program) || !(file_id(kRuntime) == g_runtime) ||
         !(file_id(g_place.socket.c_str()) == g_socket);
}

// What the watch does between saves: build/lab04_attention rebuilt from the save just run (a
// client that comes meanwhile stops it: it is rebuilt after that client's run), then its
// resident compiler, built the first time, then started, and warmed on the lab.
void between_runs() {
  rebuild_the_program(g_listen, [] { return true; });
#ifdef LAB_RESIDENT
  if (!resident_available()) {
    Build b = start_build({"lab04_resident", "lab04_supply"}, false);
    finish_build(b, false);
  }
#endif
  resident_idle();
}

// One --once: the client's descriptors are this process's 0, 1 and 2 and its folder this
// process's while it is served; its status goes back (a signal it passed on: as if the lab
// died of it, so that the client does).
void serve_request(int fd, Request& r, std::vector<char*>& argv, std::vector<char*>& env) {
  int kept[3], at = 0;
  for (int i = 0; i < 3; ++i) kept[i] = fcntl(i, F_DUPFD_CLOEXEC, 3);
  for (int i = 0; i < 3; ++i) {
    int from = (r.fixed.fds >> i) & 1 ? r.fds[at++] : open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(from, i);
    if (!((r.fixed.fds >> i) & 1)) close(from);
  }
  int folder = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  mode_t mask = umask(mode_t(r.fixed.umask));  // the build's files: as the client makes files
  if (fchdir(working_folder(r)) != 0) {
    send_record(fd, kRefused);
  } else if (send_record(fd, kGo, 0)) {
    g_served = {&r, &argv, &env, 0};
    g_client = fd, g_saved = false;
    bool check = true;
    std::vector<std::string> words = lab_arguments(int(argv.size()) - 1, argv.data(), check);
    std::vector<char*> lab_argv;
    for (std::string& w : words) lab_argv.push_back(w.data());
    lab_argv.push_back(nullptr);
    int code = run_once(lab_argv, check, /*shortcut=*/true);
    int sig = g_saved && g_served.signal ? g_served.signal : 0;
    send_record(fd, kEnded, sig ? sig : code == kCancelled ? SIGKILL : (code & 0xff) << 8);
    g_client = -1, g_saved = false;
    g_served = {};
  }
  std::fflush(nullptr);
  if (fchdir(folder) != 0) (void)chdir("/");
  close(folder);
  umask(mask);
  for (int i = 0; i < 3; ++i) dup2(kept[i], i), close(kept[i]);
}

void accept_client() {
  Incoming in = accept_request(g_listen);
  auto& [fd, whole, h, r] = in;
  if (fd < 0) return;
  std::vector<char*> argv, env;
  const char* why = nullptr;
  if (!whole) {
    why = "";
  } else if (h.kind == kQuit) {
    stop_listening();  // the asker waits for this process to end (its connection closes)
    close_received(r);
    return;
  } else if (stale() || (h.kind == kRun && limits_too_high(r))) {
    stop_listening();  // the client then finds no server, and starts one
    send_record(fd, kStale);
    why = "";
  } else if (h.kind != kRun) {
    send_record(fd, h.kind == kPing ? kOk : kRefused);
    why = "";
  } else if (!split(r, argv, env)) {
    why = "a malformed request";
  } else {
    why = cannot_serve(fd, r, server_environment(env.data()), g_start, 1);
  }
  if (why) {
    if (*why) send_record(fd, kRefused);  // the client does --once itself
  } else {
    serve_request(fd, r, argv, env);
  }
  close_received(r);
  close(fd);
}

}  // namespace

int serve(int argc, char** argv) {
  char* end = nullptr;
  long lock = argc == 3 ? std::strtol(argv[2], &end, 10) : -1;
  if (argc != 3 || *end || lock < 3) {
    std::fprintf(stderr,
                 "lab04_watch: --serve takes the descriptor of the start lock, 3 or more\n");
    return 2;
  }
  prctl(PR_SET_NAME, "lab04_watch_srv");
  g_place = place_for(environ, kBuildDir, kPrefix);
  g_start = start_of_this_process();
  g_program = file_id(own_program().c_str());
  g_runtime = file_id(kRuntime);
  g_listen = listen_at(g_place, 16);
  if (g_listen < 0) return 1;
  g_socket = file_id(g_place.socket.c_str());
  close(int(lock));  // ready: the client waiting for the lock connects now
  start_checker();   // Python and torch load while the first lab builds

  timespec idle_since{};
  clock_gettime(CLOCK_MONOTONIC, &idle_since);
  bool idle_done = true;
  while (g_listen >= 0) {
    pollfd fds[2] = {{g_signals, POLLIN, 0}, {g_listen, POLLIN, 0}};
    int ready = poll(fds, 2, idle_done ? 1000 : 0);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && (fds[0].revents & POLLIN)) wait_for(-1);  // a stop signal ends it there
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      accept_client();
      clock_gettime(CLOCK_MONOTONIC, &idle_since);
      idle_done = false;
      continue;
    }
    if (!idle_done) {  // no client waits: the resident compiler is readied for the next
      between_runs();
      idle_done = true;
      continue;
    }
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - idle_since.tv_sec >= kIdleSeconds || stale()) stop_listening();
  }
  end_checker();
  return 0;
}

// Asks every server of this build folder to stop, and waits until they have.
int stop_servers() {
  stop_servers_in(kBuildDir, kPrefix);
  return 0;
}

}  // namespace watch
