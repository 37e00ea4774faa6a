// fast_lab.h: what the test client (client.cpp, build/tests/lab04_fast) and the lab server
// (server.cpp, build/tests/lab04_fast_server) share: where the server listens and how it is
// started. The messages, and how a program's process is stood in for, are engine/stand_in/'s.
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

#include "stand_in/client.h"
#include "stand_in/server.h"

namespace fast_lab {

using namespace stand_in;

constexpr const char* kFolder = FAST_LAB_FOLDER;  // where the servers listen (build/tests)
constexpr const char* kServer = FAST_LAB_SERVER;  // build/tests/lab04_fast_server

// The server for an environment: build/tests/lab04_fast-<hash>.sock.
inline Place place_for(char** env) { return stand_in::place_for(env, kFolder, "lab04_fast"); }

// Makes sure a fresh server runs or starts (under the lock: two starters never start two).
// wait: also wait until it listens (the client); else return once it is started (the tests'
// setup, so that LibTorch loads while the first tests start). False if none could be.
inline bool ensure_server(const Place& place, bool wait, double seconds = 30) {
  return stand_in::ensure_server(place, kServer, {"lab04_fast_server", "serve", "3"}, wait,
                                 seconds);
}

}  // namespace fast_lab
