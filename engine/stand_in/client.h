// engine/stand_in/client.h: the client's side of a stand-in (protocol.h): starting a server
// when none listens, sending it the request of a run with what this process would hand its
// program, passing signals on while it runs, and ending as the program ended.

#pragma once

#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stand_in/protocol.h"

namespace stand_in {

// --- starting a server ---------------------------------------------------------------------

// Starts `program` `args` (args[0] its name; the lock's descriptor, 3, among them) as a daemon
// (its own session, stdio on /dev/null, in /), handing it the start lock `lock`, which it
// releases once it listens. Returns once the daemon is started,
// not once it is ready: take_lock() waits for that.
bool spawn_server(int lock, const char* program, std::vector<std::string> args);

// Makes sure a fresh server runs or starts (under the lock: two starters never start two).
// wait: also wait until it listens (the client); else return once it is started (the tests'
// setup, so that LibTorch loads while the first tests start). False if none could be.
bool ensure_server(const Place& place, const char* program, const std::vector<std::string>& args,
                   bool wait, double seconds = 30);
// Asks every server listening in `folder` (sockets named `prefix`-*.sock) to stop, and waits
// until they have: a server's connection closes as it exits.
void stop_servers_in(const std::string& folder, const std::string& prefix);

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
Snapshot snapshot();

// The request of a run: Fixed, then argv and environ; and the descriptors sent with it.
std::vector<char> run_request(int argc, char** argv, const Snapshot& s, uint32_t program,
                              std::vector<int>& fds);

bool send_request(int sock, const std::vector<char>& payload, std::vector<int> fds);

// Ends this process as the lab ended.
[[noreturn]] void end_as(int status);

// While the lab runs: signals received go to the lab; the server's last word is its status.
// Without it (the server died), `lost` is said on stderr, and the exit status is 125.
[[noreturn]] void follow(int sock, const Snapshot& s, const std::string& lost);

}  // namespace stand_in
