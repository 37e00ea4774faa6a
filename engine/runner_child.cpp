// runner_child.cpp: a run's child enters its sandbox and becomes the lab (runner_child.h). The one
// place a sandbox's mounts are made, its cgroups joined and root's rights given up.
#include "runner_child.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "run.h"

namespace runner {
namespace {

// Calls the main of the lab's module in this process, and returns its status.
int run_main(const std::string& module, const std::vector<std::string>& args,
             const std::string& library) {
  std::vector<std::string> words = {"lab04_attention"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // as stdbuf -oL: a crash loses no finished line
  if (!library.empty() && !dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL))
    engine::refuse("load the grader's library");  // the grader's failure, not the lab's
  void* lab = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto lab_main = lab ? reinterpret_cast<int (*)(int, char**)>(dlsym(lab, "main")) : nullptr;
  if (!lab_main) {
    std::fprintf(stderr, "lab04 engine: could not load the lab: %s\n", dlerror());
    return 127;
  }
  // A lab that calls exit() (a starter's blank does) ends as if its main had returned, without
  // the destructors of the LibTorch loaded for every run (a fifth of a second each).
  on_exit([](int status, void*) { std::fflush(nullptr), _exit(status); }, nullptr);
  int status = lab_main(int(words.size()), argv.data());
  std::fflush(nullptr);
  return status;
}

// Mounts `from` (a folder or a file) at the same path under `root`, read-only unless
// `writable`, making the folders above it (and an empty file to mount a file on).
void show(const std::string& root, const std::string& from, bool writable) {
  struct stat st {};
  if (stat(from.c_str(), &st) != 0) return;  // nothing there: nothing to show
  const std::string at = root + from;
  for (size_t slash = at.find('/', root.size() + 1); slash != std::string::npos;
       slash = at.find('/', slash + 1))
    mkdir(at.substr(0, slash).c_str(), 0755);
  if (S_ISDIR(st.st_mode)) {
    mkdir(at.c_str(), 0755);
  } else {
    int made = open(at.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (made >= 0) close(made);
  }
  if (mount(from.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
      (!writable && mount(nullptr, at.c_str(), nullptr,
                          MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, nullptr) != 0))
    engine::refuse("show the run a folder it needs");
}

// A /proc: with V, one that shows only its own user's processes.
void mount_proc(const Job& job) {
  const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (job.own_proc ? mount("proc", "/proc", "proc", flags, "hidepid=invisible") != 0 &&
                         mount("proc", "/proc", "proc", flags, "hidepid=2") != 0
                   : mount("proc", "/proc", "proc", flags, nullptr) != 0)
    engine::refuse("hide the other processes");
}

// The root of its own (I): a tmpfs at job.root with only what the allowlist holds
// (lab04/checker/sandbox.py: the system, the job's B paths, its home), then chroot, and its /proc
// (which what follows needs: a place may cover the sandbox's folder, which is bound back in
// through /proc/self/fd).
void new_root(const Job& job) {
  const std::string& r = job.root;
  if (mount("lab04", r.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=755") != 0)
    engine::refuse("make the run's root");
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    char target[4096];
    ssize_t n = readlink(top, target, sizeof target - 1);
    if (n > 0) {  // a merged /usr: the same link
      target[n] = '\0';
      if (symlink(target, (r + top).c_str()) != 0) engine::refuse("make the run's root");
    } else {
      show(r, top, false);
    }
  }
  show(r, "/usr", false);
  show(r, "/etc", false);
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"})
    show(r, device, true);
  if (mkdir((r + "/tmp").c_str(), 01777) != 0 || chmod((r + "/tmp").c_str(), 01777) != 0 ||
      mkdir((r + "/proc").c_str(), 0555) != 0)
    engine::refuse("make the run's root");
  for (const std::string& path : job.shown) show(r, path, false);
  show(r, job.home, true);
  if (chroot(r.c_str()) != 0 || chdir("/") != 0) engine::refuse("enter the run's root");
  mount_proc(job);
}

// In the child, as root, before the lab's user is taken: a mount namespace and an IPC
// namespace of the run's own (the one place a sandbox's mounts are made). With P, each place
// any user may write gets an empty tmpfs of its own, capped in size, and so does the home
// folder: whatever the lab writes, anywhere it may, is seen by no one else and ends with the
// run, as do its System V and POSIX IPC objects; the sandbox's folder (the home's parent,
// which holds the module) is kept in view. With X, empty folders over what it must not see;
// with I, a root of its own; with V, a /proc that shows only its own user's processes.
void own_mounts(const Job& job) {
  std::string folder = job.home.substr(0, job.home.rfind('/'));
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0) engine::refuse("make a mount and IPC namespace");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    engine::refuse("make the mounts private");  // nothing below reaches the grader's own view
  if (!job.root.empty()) new_root(job);
  int kept = open(folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);  // in the new namespace
  if (kept < 0) engine::refuse("open the sandbox's folder");
  std::string size = "size=" + job.scratch_size;
  for (const std::string& place : job.places)
    if (mount("lab04", place.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              (size + ",mode=1777").c_str()) != 0)
      engine::refuse("give the run a private folder");
  // Where a place held the sandbox's folder, the folder is made again and bound back in, with
  // what is mounted in it (in a root of its own: its bin and home).
  if (access(folder.c_str(), F_OK) != 0) {
    for (size_t at = folder.find('/', 1); at != std::string::npos; at = folder.find('/', at + 1))
      mkdir(folder.substr(0, at).c_str(), 0755);  // the folders above it, as a tmpfs now has none
    std::string from = "/proc/self/fd/" + std::to_string(kept);
    if (mkdir(folder.c_str(), 0711) != 0 ||
        mount(from.c_str(), folder.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      engine::refuse("keep the sandbox's folder in view");
  }
  close(kept);
  for (const std::string& path :
       job.hidden) {  // what is not there (under a place) is hidden already
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    int done = S_ISDIR(st.st_mode) ? mount("lab04", path.c_str(), "tmpfs",
                                           MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
                                   : mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr);
    if (done != 0) engine::refuse("hide the grader's files");
  }
  if (job.own_proc && job.root.empty()) mount_proc(job);  // (a root of its own has its /proc)
  if (job.places.empty()) return;
  std::string home =
      size + ",mode=700,uid=" + std::to_string(job.uid) + ",gid=" + std::to_string(job.uid);
  if (mount("lab04", job.home.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, home.c_str()) != 0)
    engine::refuse("give the run a home folder");
}

// In the child: joins the cgroups the job names (its share of the CPU, its processes).
void join_cgroups(const Job& job) {
  std::string pid = std::to_string(getpid());
  for (const std::string& procs : job.cgroups) {
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid.data(), pid.size()) != ssize_t(pid.size()))
      engine::refuse("join its cgroup");
    close(fd);
  }
}

}  // namespace

// In the child, before its limits are set (the engine sets them): the cgroups, the private
// places and the folder of the run.
void enter_sandbox(const Job& job) {
  if (job.uid >= 0) join_cgroups(job);
  if (job.uid >= 0 &&
      (!job.places.empty() || !job.hidden.empty() || job.own_proc || !job.root.empty()))
    own_mounts(job);
  if (chdir(job.home.c_str()) != 0) engine::refuse("enter its folder");
}

// In the child, within its limits: a user of its own (as root) with nothing of root's left,
// the job's environment, then the lab. Returns the lab's status.
int become_the_lab(const Job& job) {
  if (job.uid >= 0) {
    for (int cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; ++cap) {
    }
    gid_t id = gid_t(job.uid);
    if (setgroups(0, nullptr) != 0 || setresgid(id, id, id) != 0 ||
        setresuid(uid_t(id), uid_t(id), uid_t(id)) != 0)
      engine::refuse("become the sandbox's user");
    if (getuid() != uid_t(id) || geteuid() != uid_t(id) || setuid(0) == 0)
      engine::refuse("drop root's rights");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) engine::refuse("set no_new_privs");
  clearenv();
  for (const std::string& e : job.env) putenv(const_cast<char*>(e.c_str()));
  if (job.command.empty()) return run_main(job.module, job.args, job.library);
  std::vector<char*> argv;
  for (const std::string& w : job.command) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  signal(SIGPIPE, SIG_DFL);  // ignored here (this process writes to its grader), not in the lab
  execv(argv[0], argv.data());
  engine::refuse("start the lab");
}

}  // namespace runner
