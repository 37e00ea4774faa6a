// engine/stand_in/protocol.cpp: the messages of a stand-in's client and server, and where a
// server listens (protocol.h says what each does).

#include "stand_in/protocol.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "write_all.h"

namespace stand_in {

bool read_all(int fd, void* data, size_t size) {
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

bool send_record(int fd, uint32_t kind, int32_t value) {
  Record r{kind, value};
  return write_all(fd, &r, sizeof r);
}

sockaddr_un address(const std::string& socket_path, int& folder) {
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

int connect_server(const std::string& socket_path) {
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

uint32_t ask(int fd, uint32_t kind) {
  Header h;
  h.kind = kind;
  Record r;
  if (!write_all(fd, &h, sizeof h) || !read_all(fd, &r, sizeof r)) return 0;
  return r.kind;
}

bool fresh_server_answers(const std::string& socket_path) {
  int fd = connect_server(socket_path);
  if (fd < 0) return false;
  bool fresh = ask(fd, kPing) == kOk;
  close(fd);
  return fresh;
}

int take_lock(const std::string& lock_path, double seconds) {
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

bool from_stdbuf(const std::string& entry) { return entry.rfind("_STDBUF_", 0) == 0; }

std::string without_stdbuf_preload(const std::string& value) {  // of LD_PRELOAD
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

std::vector<std::string> server_environment(char** env) {
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

bool read_at_load(const std::string& entry) {
  static const char* prefixes[] = {"OMP_",    "GOMP_",    "KMP_",    "MKL_",           "OPENBLAS_",
                                   "TORCH_",  "PYTORCH_", "CUDA_",   "DNNL_",          "ONEDNN_",
                                   "CAFFE2_", "LD_",      "MALLOC_", "GLIBC_TUNABLES="};
  for (const char* p : prefixes)
    if (entry.rfind(p, 0) == 0) return true;
  return false;
}

Place place_for(char** env, const std::string& folder, const char* prefix) {
  std::vector<std::string> read;
  for (const std::string& e : server_environment(env))
    if (read_at_load(e)) read.push_back(e);
  std::sort(read.begin(), read.end());
  uint64_t hash = 14695981039346656037ull;
  for (const std::string& e : read)
    for (const char c : e + '\0') hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  char name[96];
  std::snprintf(name, sizeof name, "/%s-%016llx", prefix, static_cast<unsigned long long>(hash));
  return {folder + name + ".sock", folder + name + ".lock"};
}
}  // namespace stand_in
