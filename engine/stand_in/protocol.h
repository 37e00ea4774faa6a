// engine/stand_in/protocol.h: a program run by a server that stands in for its own process,
// and the messages between the two. The server has loaded LibTorch once; a client hands it,
// over a Unix socket, all that the program's process would have had (its arguments,
// environment, working folder, descriptors 0, 1 and 2, umask, signal mask and ignored signals,
// resource limits), and the server's child takes that on, runs the program, and the client ends
// as it ended. Used by the tests' lab server (tests/fast_lab/) and the watch's --once server
// (watch/once_server.cpp).
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
//
// Three parts, each of one concern: this file (the messages, reading and writing them, where a
// server listens), client.h (starting a server, asking it to run a program, following the run)
// and server.h (listening, taking a request, becoming the client's program); each compiled in
// its .cpp, into the library lab04_stand_in (engine/engine.cmake).

#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/un.h>

#include <cstdint>
#include <string>
#include <vector>

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

bool read_all(int fd, void* data, size_t size);

bool send_record(int fd, uint32_t kind, int32_t value = 0);

// The server's socket address. A path longer than sun_path holds is reached through its
// folder's descriptor (/proc/self/fd/N/name); `folder` then holds that descriptor, to close.
sockaddr_un address(const std::string& socket_path, int& folder);

// A connection to the server, or -1 when none listens.
int connect_server(const std::string& socket_path);

// Sends a request without a payload, and reads the answer's kind (0: no answer).
uint32_t ask(int fd, uint32_t kind);

// Whether a fresh server answers (a stale one, asked, stops listening and says so).
bool fresh_server_answers(const std::string& socket_path);

// Takes the start lock on a new descriptor, waiting at most `seconds`; -1 if it could not.
int take_lock(const std::string& lock_path, double seconds);

// --- environments and where a server listens ---------------------------------------------

// The environment a server starts with: the starter's, without what stdbuf(1) added for the
// lab's own process (a child honours _STDBUF_O itself; the server must keep stdout untouched).
bool from_stdbuf(const std::string& entry);
std::string without_stdbuf_preload(const std::string& value);
std::vector<std::string> server_environment(char** env);

// Variables that LibTorch, OpenMP, BLAS, the C library and the dynamic loader read when the
// lab's process starts (OPENBLAS_CORETYPE chooses BLAS's kernels, OMP_NUM_THREADS the threads):
// a server read them when it started.
bool read_at_load(const std::string& entry);

// The server for an environment: in `folder`, named `prefix`-<hash>, the hash (FNV-1a) of
// the sorted variables read at load.
struct Place {
  std::string socket, lock;
};
Place place_for(char** env, const std::string& folder, const char* prefix);

}  // namespace stand_in
