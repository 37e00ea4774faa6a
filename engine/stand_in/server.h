// engine/stand_in/server.h: the server's side of a stand-in (protocol.h): listening, reading
// a request whole, judging whether its client can be served exactly as its own process would
// be, and, in the child that becomes the client's program, taking on the client's descriptors,
// folder, signals, umask, limits and environment.

#pragma once

#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "stand_in/protocol.h"

namespace stand_in {

// Listens on `place`'s socket, this user's only (a dead server's socket there is removed first:
// the start lock is held, so no live one's); its descriptor, or -1 with errno.
int listen_at(const Place& place, int backlog);

// --- the server ------------------------------------------------------------------------------

std::set<std::string> load_env(const std::vector<std::string>& env);

std::string ns_of(const std::string& proc, const char* name);

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
FileId file_id(const char* path);

// What a server was started with, that a child cannot change: compared with each client's.
constexpr const char* kNamespaces[] = {"mnt", "pid", "user", "net", "ipc"};
struct Start {
  std::set<std::string> load_env;  // the variables read as LibTorch loads
  cpu_set_t cpus{};
  rlimit stack{};
  std::string ns[5];
};
// This process's Start (its environment: server_environment(environ)).
Start start_of_this_process();

struct Request {
  Fixed fixed;
  std::vector<char> strings;      // argv then environ, NUL-terminated
  int fds[4] = {-1, -1, -1, -1};  // the client's 0, 1, 2 (those sent) and working folder
  int count = 0;                  // descriptors received
};

void close_received(Request& r);

// Sets a stdio stream's buffering as stdbuf's library would from _STDBUF_O or _STDBUF_E:
// L by lines, 0 unbuffered, else a buffer of that many bytes (K, M, G: times 1024, 1024^2, ...).
void buffer_as_stdbuf(FILE* stream, const char* mode);

// The client's working folder (sent after its descriptors).
int working_folder(const Request& r);

// In the child that becomes the client's program: the client's descriptors 0, 1 and 2 (those
// it sent; the others closed), its working folder, and nothing else open. False if that could
// not be done.
bool take_descriptors(Request& r);

// Then the rest of what it would have inherited: signal dispositions and mask, umask, limits,
// environment, stdio buffering as stdbuf(1) asked, and its name. False if that could not be
// done (a limit above this process's hard limit: limits_too_high() said so).
bool take_context(const Request& r, std::vector<char*>& argv, std::vector<char*>& env);
// Why this client cannot be served (nullptr: it can).
const char* cannot_serve(int fd, const Request& r, const std::vector<std::string>& env,
                         const Start& start, uint32_t programs);

bool limits_too_high(const Request& r);

bool receive(int fd, Header& h, Request& r);

// Splits the strings of a run into argv and environ; false if they do not match the counts.
bool split(Request& r, std::vector<char*>& argv, std::vector<char*>& env);

// A new connection, and its request read at once (a client writes it whole as it connects; it
// has 5 seconds): fd -1 when there was none; `whole`: the request was read.
struct Incoming {
  int fd = -1;
  bool whole = false;
  Header h;
  Request r;
};
Incoming accept_request(int listening);

}  // namespace stand_in
