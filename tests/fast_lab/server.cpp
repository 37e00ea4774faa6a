// lab04_fast_server: LibTorch loaded once, for the tests' runs of the lab (tests/fast_lab/).
//
//   lab04_fast_server start [--minimal]   make sure a fresh server runs for this environment
//                             (--minimal: for the checker's, fast_lab.h says why): start one
//                             unless one answers, and return at once (it loads LibTorch
//                             meanwhile; its first clients wait for it)
//   lab04_fast_server stop    ask this build's servers to stop, and wait until they have
//   lab04_fast_server serve [FD]   be the server (start runs this, as a daemon; FD: the start
//                             lock to release once it listens)
//
// Aims. Each run of build/lab04_attention spends ~0.65 s in LibTorch's start. This process
// loads LibTorch once (lab04_test_runtime, a shared library linked to it, RTLD_GLOBAL); for
// each client (build/tests/lab04_fast) it forks a handler, which runs the lab through the run
// engine (engine/run.h), as every lab is run: the engine's child takes on the client's
// descriptors 0, 1 and 2, environment, working folder, umask, signal mask and ignored signals
// and resource limits, loads the lab as a module (lab04_test_module, built from the program's
// own object, loaded anew in each child: a rebuilt lab is always the one run) and calls its
// main. The option parser's test (build/tests/parse_options_test, a client too) runs the same
// way, from its own module. The lab's wait status goes back to the client, which ends the same
// way. The lab writes to the client's own descriptors, so a terminal, a pipe or /dev/full is
// what it writes to.
//
// It serves only clients it can give exactly what the real lab would have had: its own user,
// namespaces and root (a sandboxed client runs the real lab in its sandbox), and the same
// environment for what LibTorch reads as it loads (OMP_*, LD_*, ...), CPU affinity and stack
// limit. Any other client is refused and runs the real lab. A client whose limits are higher
// than this server's hard limits (it was started under prlimit) gets "stale": this server
// stops, and the client starts one with its own limits.
//
// It stops: after kIdleSeconds (5 minutes) without a run, so that the next test run finds
// LibTorch loaded; when asked (stop); on SIGTERM, SIGINT or SIGHUP
// (killing the runs); and, once its runs end, when lab04_test_runtime or this program changed
// since it started (a rebuild: the next client starts a fresh server), or when it used up its
// CPU time (SIGXCPU). No lab outlives it (PR_SET_PDEATHSIG), and a client that goes away
// (killed) has its lab killed.

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "fast_lab.h"
#include "run.h"

namespace {

using namespace fast_lab;

constexpr const char* kRuntime = FAST_LAB_RUNTIME;  // LibTorch
// The programs it runs, as modules, by their number in a request (Fixed::program): the lab,
// the option parser's test (tests/parse_options_test.cpp, the lab included in it), and the
// server's own test's probe, two ways (probe.cpp).
constexpr const char* kModules[] = {FAST_LAB_MODULE, FAST_LAB_PARSER_MODULE,
                                    FAST_LAB_PROBE_MODULES};
constexpr uint32_t kPrograms = sizeof kModules / sizeof kModules[0];
constexpr int kIdleSeconds = 300;  // a test run, an edit, and the next test run

// What this process was started with, that a child cannot change: compared with each client's;
// and what a rebuild changes.
Start g_start;
FileId g_runtime, g_program, g_socket;
Place g_place;  // this server's socket and start lock

// --- the programs' modules, loaded once each is built -----------------------------------
// Loading a module in each child cost it about 8 ms of CPU (the search through LibTorch's ~300
// libraries, their pages copied on write), most of a short run's own. Where the build moved a
// module's constructors out of the loader's sight (FAST_LAB_DEFERRED: defer_constructors.sh),
// this process loads it once, and again when it is rebuilt, without running any of its code;
// each child calls its constructors (lab04_module_init) and then its main. A module whose
// constructors the build had to leave to the loader (it has no lab04_init_array section) is
// loaded in each child, as before.

struct Loaded {
  FileId id;
  void* handle = nullptr;
  void (*init)() = nullptr;
  int (*main)(int, char**) = nullptr;
};
Loaded g_loaded[kPrograms];

// Whether an ELF file has a section of that name; read from its section headers, unloaded.
// False when it cannot be read.
bool has_section(const char* path, const char* name) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr e{};
  std::vector<Elf64_Shdr> sections;
  std::vector<char> names;
  bool read = pread(fd, &e, sizeof e, 0) == ssize_t(sizeof e) &&
              e.e_shentsize == sizeof(Elf64_Shdr) && e.e_shstrndx < e.e_shnum;
  if (read) {
    sections.resize(e.e_shnum);
    size_t size = sections.size() * sizeof(Elf64_Shdr);
    read = pread(fd, sections.data(), size, off_t(e.e_shoff)) == ssize_t(size);
  }
  if (read) {
    const Elf64_Shdr& table = sections[e.e_shstrndx];
    names.assign(table.sh_size + 1, '\0');
    read = pread(fd, names.data(), table.sh_size, off_t(table.sh_offset)) == ssize_t(table.sh_size);
  }
  close(fd);
  for (const Elf64_Shdr& section : read ? sections : std::vector<Elf64_Shdr>())
    if (section.sh_name < names.size() && std::strcmp(names.data() + section.sh_name, name) == 0)
      return true;
  return false;
}

// The program's module, loaded here if it can be (see above); else one without a handle.
const Loaded& loaded(uint32_t program) {
  Loaded& l = g_loaded[program];
  FileId now = file_id(kModules[program]);
  if (l.handle && now == l.id) return l;
  if (l.handle) dlclose(l.handle);  // none of its code ran here: nothing to undo
  l = Loaded{};
#ifdef FAST_LAB_DEFERRED
  if (has_section(kModules[program], "lab04_init_array")) {
    void* handle = dlopen(kModules[program], RTLD_NOW | RTLD_LOCAL);
    auto init = handle ? reinterpret_cast<void (*)()>(dlsym(handle, "lab04_module_init")) : nullptr;
    auto main = handle ? reinterpret_cast<int (*)(int, char**)>(dlsym(handle, "main")) : nullptr;
    if (init && main) {
      l = Loaded{now, handle, init, main};
    } else if (handle) {
      dlclose(handle);
    }
  }
#endif
  return l;
}

// --- a run: a process of its own for each client -------------------------------------------
// This process serves many clients at once; the engine (engine/run.h) runs one lab and waits for
// it. So each client gets a handler, a child of this process that asks the engine to run the
// program's main, passes the client's signals on and sends back how the lab ended; the engine
// makes the lab's process, sets it up and kills what it leaves, as for every other run of a lab.

struct Handled {
  int client;  // the connection
  int stop;    // a signalfd: SIGTERM (the server's stop, or its end: PR_SET_PDEATHSIG)
  pid_t lab = -1;
};

// A message from the client during its run: a signal, passed on to the lab (false); or its
// end, when it went away (killed), or nonsense: true, the engine then cancels the run.
bool client_went_away(Handled& h) {
  Record m;
  ssize_t n = recv(h.client, &m, sizeof m, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n == ssize_t(sizeof m) && m.kind == kSignal && m.value > 0 && m.value < NSIG) {
    if (h.lab > 0) kill(h.lab, m.value);
    return false;
  }
  return true;
}

// The program's main, in the engine's child: the module's constructors (as a program's, run
// before main) when this process loaded it, else the module loaded here.
int run_main(uint32_t program, const Loaded& module, std::vector<char*>& argv) {
  int (*lab_main)(int, char**) = module.main;
  if (lab_main) {
    module.init();
  } else {
    void* lab = dlopen(kModules[program], RTLD_NOW | RTLD_LOCAL);
    lab_main = lab ? reinterpret_cast<int (*)(int, char**)>(dlsym(lab, "main")) : nullptr;
  }
  if (!lab_main) {
    std::fprintf(stderr, "lab04_fast: could not load the lab: %s\n", dlerror());
    return 127;
  }
  int status = lab_main(int(argv.size()) - 1, argv.data());
  std::fflush(nullptr);  // what exit() would do for the lab's output; then the engine's _exit,
  return status;         // not exit(): LibTorch's state is the server's copy
}

// The handler (in the child of this process's fork): runs the client's lab in the client's
// folder, with its descriptors 0, 1 and 2 and the rest of its context (take_context: its
// limits, checked before, its signals, umask, environment), and ends with the run.
[[noreturn]] void handle(int fd, Request& r, std::vector<char*>& argv, std::vector<char*>& env,
                         pid_t server, const Loaded& module) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);   // blocked, as in this process: read from `stop` below
  if (getppid() != server) _exit(0);  // it died before that was set
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  Handled h{fd, signalfd(-1, &term, SFD_CLOEXEC | SFD_NONBLOCK)};
  if (h.stop < 0 || fchdir(working_folder(r)) != 0) {
    send_record(fd, kRefused);  // the client runs the real lab
    _exit(0);
  }
  engine::Job job;
  job.wall_ms = 0;          // the client's own limits bound it, as the real lab's
  job.capture = false;      // it writes to the client's descriptors
  job.own_session = false;  // a process group of its own, in the server's session
  for (int i = 0, at = 0; i < 3; ++i)
    job.given[i] = (r.fixed.fds >> i) & 1 ? r.fds[at++] : engine::kClosed;
  job.enter = [&] {
    if (!take_context(r, argv, env)) _exit(125);
  };
  job.lab = [&] { return run_main(r.fixed.program, module, argv); };
  job.started = [&](pid_t lab) {
    h.lab = lab;
    send_record(fd, kGo, lab);  // (a client gone by now: the run is cancelled below)
  };
  job.wake_on = {fd, h.stop};
  job.woken = [&](int woke) { return woke == h.stop || client_went_away(h); };
  engine::Run run = engine::run(job);
  if (run.stopped == engine::Stopped::kStart) send_record(fd, kRefused);
  // Cancelled: the client went away, or the server is stopping; no answer, and the client
  // says that the server ended during the run.
  if (run.stopped == engine::Stopped::kNo) send_record(fd, kEnded, run.status);
  _exit(0);
}

// --- the server -----------------------------------------------------------------------------

std::set<pid_t> g_handlers;  // one for each run
int g_listen = -1;
int g_signals = -1;
int g_quitter = -1;  // the connection that asked to stop: closed when this process exits

void say(const char* what) { std::fprintf(stderr, "lab04_fast_server: %s\n", what); }

// Stops listening: new clients find no server and start a fresh one. The socket's name is
// removed only while it is still this server's (a fresh server may have taken it).
void stop_listening() {
  if (g_listen < 0) return;
  if (file_id(g_place.socket.c_str()) == g_socket) unlink(g_place.socket.c_str());
  close(g_listen);
  g_listen = -1;
}

bool stale() {
  return !(file_id(kRuntime) == g_runtime) || !(file_id(kServer) == g_program) ||
         !(file_id(g_place.socket.c_str()) == g_socket);
}

// A new connection: its request is read at once (a client writes it whole as it connects).
void accept_client() {
  Incoming in = accept_request(g_listen);
  auto& [fd, whole, h, r] = in;
  if (fd < 0) return;
  if (!whole) {
    close_received(r);
    close(fd);
    return;
  }
  if (h.kind == kQuit) {
    close_received(r);
    stop_listening();
    if (g_quitter >= 0) close(g_quitter);
    g_quitter = fd;  // closed as this process exits: the asker waits for that
    return;
  }
  if (stale() || (h.kind == kRun && limits_too_high(r))) {
    say(stale() ? "out of date: stopping" : "a client's limits are higher than mine: stopping");
    stop_listening();  // before the answer: the client then finds no server, and starts one
    send_record(fd, kStale);
    close_received(r);
    close(fd);
    return;
  }
  if (h.kind != kRun) {
    send_record(fd, h.kind == kPing ? kOk : kRefused);
    close_received(r);
    close(fd);
    return;
  }
  std::vector<char*> argv, env;
  bool parsed = split(r, argv, env);
  const char* why = parsed ? cannot_serve(fd, r, server_environment(env.data()), g_start, kPrograms)
                           : "a malformed request";
  if (why) {  // said where it can be read: serve run by hand (a daemon's stderr is /dev/null)
    std::fprintf(stderr, "lab04_fast_server: refused a client: %s\n", why);
    send_record(fd, kRefused);
    close_received(r);
    close(fd);
    return;
  }
  const Loaded& module = loaded(r.fixed.program);
  std::fflush(nullptr);  // nothing of this process's buffers is written twice
  pid_t server = getpid(), pid = fork();
  if (pid == 0) {
    for (int own : {g_listen, g_signals, g_quitter})
      if (own >= 0) close(own);  // the server's, not the run's
    handle(fd, r, argv, env, server, module);
  }
  if (pid < 0) send_record(fd, kRefused);
  if (pid > 0) g_handlers.insert(pid);
  close_received(r);  // the handler's now: a pipe must close when the lab ends
  close(fd);
}

void reap() {
  int status = 0;
  for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) g_handlers.erase(pid);
}

int serve(int lock) {
  for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd < 3; fd = open("/dev/null", O_RDWR)) {
  }  // 0, 1 and 2 taken: what a client sends never lands on them
  g_place = place_for(environ);
  if (lock < 0) lock = take_lock(g_place.lock, 60);
  if (lock < 0) {
    say("cannot take the start lock");
    return 1;
  }
  g_runtime = file_id(kRuntime);
  g_program = file_id(kServer);
  g_start = start_of_this_process();
  if (!dlopen(kRuntime, RTLD_NOW | RTLD_GLOBAL)) {  // LibTorch, once, for every run to come
    std::fprintf(stderr, "lab04_fast_server: could not load LibTorch: %s\n", dlerror());
    return 1;
  }
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGXCPU}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  g_signals = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);

  g_listen = listen_at(g_place, 64);
  if (g_signals < 0 || g_listen < 0) {
    std::fprintf(stderr, "lab04_fast_server: cannot listen on %s: %s\n", g_place.socket.c_str(),
                 std::strerror(errno));
    return 1;
  }
  umask(077);  // this process's own files: this user's only (a lab takes its client's umask)
  g_socket = file_id(g_place.socket.c_str());
  close(lock);  // ready: clients waiting for the lock connect now

  timespec idle_since{};
  clock_gettime(CLOCK_MONOTONIC, &idle_since);
  for (;;) {
    if (g_handlers.empty() && g_listen < 0) break;  // stopping, and the last run has ended
    pollfd fds[2] = {{g_signals, POLLIN, 0}, {g_listen, POLLIN, 0}};
    int ready = poll(fds, 2, g_handlers.empty() ? 1000 : -1);
    if (ready < 0 && errno != EINTR) return 1;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!g_handlers.empty()) idle_since = now;
    if (g_handlers.empty() && (now.tv_sec - idle_since.tv_sec >= kIdleSeconds || stale()))
      stop_listening();  // idle, or rebuilt: gone without waiting for a client to see it
    if (ready <= 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (read(g_signals, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGCHLD) {
          reap();
        } else if (info.ssi_signo == SIGXCPU) {
          stop_listening();  // out of CPU time: the runs end, then this process
        } else {
          stop_listening();
          for (pid_t handler : g_handlers) kill(handler, SIGTERM);  // each cancels its run
        }
      }
    }
    if (g_listen >= 0 && (fds[1].revents & POLLIN)) accept_client();
    reap();  // a handler that ended while this loop ran
  }
  return 0;  // g_quitter closes with this process: `stop` returns
}

// `stop`: asks every server of this build to stop, and waits until they have.
int stop() {
  stop_servers_in(kFolder, "lab04_fast");
  return 0;
}

// `start`: a server for this environment; with --minimal, for this environment without any
// variable read at load: the checker's (it runs its labs with PATH, HOME, TMPDIR and LANG
// only), which is the first to run labs in a test run. Never fails a test run: without a
// server each client runs the real lab.
int start(bool minimal) {
  std::vector<std::string> kept;
  for (char** e = environ; *e; ++e)
    if (!minimal || !read_at_load(*e)) kept.push_back(*e);
  std::vector<char*> env;
  for (std::string& e : kept) env.push_back(e.data());
  env.push_back(nullptr);
  environ = env.data();
  if (!ensure_server(place_for(environ), /*wait=*/false))
    std::printf("lab04_fast_server: no server could be started; the tests run the lab itself\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command = argc >= 2 ? argv[1] : "";
  if (command == "start" && (argc == 2 || (argc == 3 && std::strcmp(argv[2], "--minimal") == 0)))
    return start(argc == 3);
  if (command == "stop" && argc == 2) return stop();
  if (command == "serve" && argc <= 3) {
    char* end = nullptr;
    long lock = argc == 3 ? std::strtol(argv[2], &end, 10) : -1;
    if (argc == 3 && (*end || lock < 3)) {
      say("serve takes the descriptor of the start lock, 3 or more");
      return 2;
    }
    return serve(int(lock));
  }
  std::fprintf(stderr,
               "lab04_fast_server: expected start [--minimal], stop or serve [FD], not '%s'\n",
               argc >= 2 ? argv[1] : "");
  return 2;
}
