// runner_kill.cpp: every process of a user id killed, however fast it forks, and what a run
// left behind (runner_kill.h).
#include "runner_kill.h"

#include <dirent.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace runner {
namespace {

// Whether a live process (not a zombie: it holds nothing, and waits to be reaped) has `uid` as
// its real or effective user id; each one's pid goes into `pids`.
bool processes_of(uid_t uid, std::vector<pid_t>& pids) {
  pids.clear();
  DIR* proc = opendir("/proc");
  if (!proc) return false;
  for (dirent* e; (e = readdir(proc)) != nullptr;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    FILE* f = std::fopen((std::string("/proc/") + e->d_name + "/status").c_str(), "r");
    if (!f) continue;
    char line[256];
    long real = -1, effective = -1;
    char state = '?';
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "State:", 6) == 0) std::sscanf(line + 6, " %c", &state);
      if (std::strncmp(line, "Uid:", 4) == 0) std::sscanf(line + 4, "%ld %ld", &real, &effective);
    }
    std::fclose(f);
    if ((real == long(uid) || effective == long(uid)) && state != 'Z' && state != 'X')
      pids.push_back(pid_t(std::atol(e->d_name)));
  }
  closedir(proc);
  return !pids.empty();
}

}  // namespace

// Kills every process of `uid` until none is left; false when some still live after
// `patience` seconds. As root, kill(-1) as that user reaches all of them at once, however fast
// they fork (the kernel lets no fork through its sweep), and no other process; pid by pid, a
// lab that forks without end outran the killing. The patience is for the kernel: a lab that
// forked up to its limit leaves a thousand copies of a LibTorch program, and tearing them down
// took from 5 to 20 s of system time.
bool kill_user(uid_t uid, double patience) {
  timespec start{}, t{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  std::vector<pid_t> pids;
  while (processes_of(uid, pids)) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (double(t.tv_sec - start.tv_sec) + 1e-9 * double(t.tv_nsec - start.tv_nsec) > patience)
      return false;
    if (geteuid() == 0 && uid != 0) {
      pid_t killer = fork();
      if (killer == 0) {
        if (setgroups(0, nullptr) == 0 && setresgid(uid, uid, uid) == 0 &&
            setresuid(uid, uid, uid) == 0 && getuid() == uid && geteuid() == uid)
          kill(-1, SIGKILL);  // never as root
        _exit(0);
      }
      if (killer > 0) waitpid(killer, nullptr, 0);
    }
    for (pid_t pid : pids) kill(pid, SIGKILL);
    usleep(10000);
  }
  return true;
}

// Kills what the lab left behind: every process of its user id (kill(-1) as that user reaches
// each of them, and only them); in a PID namespace of this process's own, every process but
// this one (kill(-1) reaches no further than the namespace); else the lab's process group.
// Then reaps them: this process is a subreaper, the lab's orphans end up here.
void kill_leftovers(const Job& job, pid_t child) {
  if (job.uid > 0) {
    kill_user(uid_t(job.uid), 60.0);
  } else if (job.alone) {
    kill(-1, SIGKILL);
  } else {
    kill(-child, SIGKILL);
  }
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace runner
