// engine/write_all.h: every byte of a buffer written to a descriptor, whatever it is (a socket,
// a pipe, a file): the one copy of that loop, for the engine, the stand-in's server and client,
// and the watch. A socket is written with MSG_NOSIGNAL (a peer gone is a false return, never a
// SIGPIPE); any other descriptor with write(), as before it (a pipe's reader gone is SIGPIPE).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

// false when a write fails (the reader gone, a full disk); interrupted writes are resumed.
inline bool write_all(int fd, const void* data, size_t size) {
  auto* p = static_cast<const char*>(data);
  bool socket = true;  // until the descriptor says it is none
  while (size > 0) {
    ssize_t n = socket ? send(fd, p, size, MSG_NOSIGNAL) : write(fd, p, size);
    if (n < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}
