// probe.cpp: a program for the tests of the lab server (fast_lab_test.py), in two modules: its
// constructor records where and with what it ran, and main prints that and exits 3. Built
// plain, its constructor is one the server defers to the child (defer_constructors.sh); with
// PROBE_PRIORITY it has one with a priority too, which the build leaves to the loader, so that
// the server loads that module in each child. Run through the server or in its own process,
// it must print the same.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

char g_seen[16384];  // what the constructors saw, in the order they ran (no constructor of its own)
int g_constructed = 0;

void record(const char* who) {
  char folder[4096];
  const char* probe = std::getenv("PROBE");
  size_t used = std::strlen(g_seen);
  std::snprintf(g_seen + used, sizeof g_seen - used, "%s: folder %s, PROBE %s\n", who,
                getcwd(folder, sizeof folder) ? folder : "?", probe ? probe : "(unset)");
  ++g_constructed;
}

struct Recorder {
  Recorder() { record("constructor"); }
};
Recorder g_recorder;

#ifdef PROBE_PRIORITY
__attribute__((constructor(150))) void first() { record("constructor with a priority"); }
#endif

}  // namespace

int main() {
  std::printf("%s%d constructors ran before main\n", g_seen, g_constructed);
  return 3;
}
