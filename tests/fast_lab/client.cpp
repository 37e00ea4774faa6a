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

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fast_lab.h"

namespace {

using namespace fast_lab;

// Which program it stands in for: the lab (0; without a server, the real lab is run), or
// another of the server's (server.cpp: the option parser's test, the server test's probe;
// without a server, its module is loaded into this process, after LibTorch, and its main
// called: the same run, with LibTorch's start).
constexpr uint32_t kProgram = FAST_LAB_PROGRAM;
#ifdef FAST_LAB_REAL_LAB
constexpr const char* kRealLab = FAST_LAB_REAL_LAB;  // build/lab04_attention
#else
constexpr const char* kRealLab = FAST_LAB_MODULE;  // its module
#endif

[[noreturn]] void run_real_lab(char** argv) {
#ifdef FAST_LAB_REAL_LAB
  execv(kRealLab, argv);
  std::fprintf(stderr, "lab04_fast: cannot run %s: %s\n", kRealLab, std::strerror(errno));
#else
  void* module =
      dlopen(FAST_LAB_RUNTIME, RTLD_NOW | RTLD_GLOBAL) ? dlopen(kRealLab, RTLD_NOW) : nullptr;
  auto real_main = module ? reinterpret_cast<int (*)(int, char**)>(dlsym(module, "main")) : nullptr;
  // its constructors, which the build may have moved out of the loader's sight (server.cpp)
  auto init = module ? reinterpret_cast<void (*)()>(dlsym(module, "lab04_module_init")) : nullptr;
  if (real_main) {
    if (init) init();
    int argc = 0;
    while (argv[argc]) ++argc;
    std::exit(real_main(argc, argv));
  }
  std::fprintf(stderr, "lab04_fast: cannot load %s: %s\n", kRealLab, dlerror());
#endif
  _exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 1 || !argv[0]) run_real_lab(argv);
  Snapshot s = snapshot();
  std::vector<int> fds;
  std::vector<char> payload = run_request(argc, argv, s, kProgram, fds);
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
    if (r.kind == kGo)
      follow(sock, s,
             "lab04_fast: the lab server ended during the run; run " +
                 std::string(kProgram == 0 ? kRealLab : "it again") + " to see the rest");
    close(sock);
    if (r.kind != kStale || attempt > 0 || !ensure_server(place, /*wait=*/true)) break;
  }
  run_real_lab(argv);
}
