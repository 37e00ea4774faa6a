// lab04_runner: the run engine's program (engine/run.h): runs students' labs, one job after
// another, for the checker (lab04/checker/sandbox.py) and the class grader, through lab04/checker/engine.py.
//
//   lab04_runner RUNTIME [per-student]   with LibTorch (RUNTIME) loaded once: a lab is a module
//                                        (M), each student served by a fresh child (per-student)
//   lab04_runner -                       without it: a lab is a program (C), executed
//   lab04_runner --kill-user UID         kills every process of that user id until none is
//                                        left (exit 0), or says it could not (exit 1)
//
// Aims. A student's lab, compiled as a module (a shared object, as the watch builds it), runs
// in a child of a process that has loaded LibTorch already (lab04_runtime), so that a run costs
// a fork and the lab's own work, not LibTorch's 0.5 s start; or a lab is a program, executed in
// the child (the checker's runs of a build, each inside bubblewrap or namespaces where the
// checker has them). The child enters the sandbox before it loads one byte of the student's
// code: as root, a user id of its own with no groups, no capabilities and no way back
// (no_new_privs), in an empty folder, with the limits and the environment it is asked for. This
// process never runs student code and keeps root's rights: a lab can neither signal it nor read
// its memory. How a run is read and stopped is the engine's (engine/run.cpp).
//
// A job is a list of NUL-terminated fields, ended by an empty field, each a letter and a value:
//   M<module> or C<word> (one per word: the program, then its arguments)  U<user id>
//   H<home folder>  T<wall-time limit, ms>  O<max stdout bytes>  R<max stderr bytes>
//   L<resource>=<limit> (as, nproc, fsize, cpu, core, stack)  E<NAME=value>
//   A<argument> (a module's, after the program's name, in order)
//   W<library> (with M) a library of the grader's loaded into the lab's process before the lab's
//     module, where the lab's user can read it: the one case of a grade whose softmax is made to
//     leak (engine/leaky_softmax.cpp). A program gets it from its command (lab04/checker/sandbox.py:
//     env LD_PRELOAD=... just before the lab, so that no program of the sandbox before it loads it)
//   K (no value: this process is alone in a PID namespace, so kill(-1) may end the leftovers)
//   With U (as root), the run's mounts are its own (own_mounts, the one place a sandbox's
//   mounts are made): each of the following fields makes a mount namespace for the run.
//   P<folder> a place any user may write (/tmp, /dev/shm, ...): the run gets an empty one of
//     its own, a size-capped tmpfs that ends with the run
//   S<bytes> the size of each of those, and of the home folder, which is then one too
//   X<path> a folder or file the lab must not see (the class's submissions, the project with
//     its lesson): an empty one is mounted over it
//   V a /proc that shows no other user's processes (the grader's command lines among them)
//   I<folder> a root of its own, made at that (empty) folder: the system's programs,
//     libraries and headers (/usr, /etc, and /bin, /sbin, /lib* as they are here), /dev's
//     null, zero, random and urandom, an empty /tmp, a /proc, the home folder, and each B
//     path; nothing else (a compile that reads the student's file: no lesson, no grader)
//   B<path> (with I) a folder or file of this system shown, read-only, at the same path
//   G<file> (root only) a cgroup's procs file: the run joins that cgroup (its CPU share)
//   N (alone in its job) a new student: with per-student, the runs that follow are served by a
//     fresh child of this process, which has loaded LibTorch and read nothing of any student's
//     (nor has it any of the grader's environment: the grader starts it with a minimal one),
//     so that no lab finds a classmate's paths, arguments or output in the memory it forks
//     from; the answer is "ready\n"
// The answer: one line "<how it ended> <stopped> <stdout bytes> <stderr bytes>\n", then the
// bytes. <how it ended>: exit:N, signal:N or none; <stopped>: - (no), time, size or start.
// After a run what the lab left behind is killed (kill_leftovers), before the answer is sent.

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "run.h"
#include "write_all.h"

namespace {

struct Job {
  std::string module, home;
  std::vector<std::string> command;  // C: a program instead of a module
  long uid = -1;       // -1: run as this process's user (not root: no user of its own)
  bool alone = false;  // K: this process has a PID namespace of its own (bubblewrap, unshare)
  std::vector<std::string> places, cgroups, hidden, shown;  // P, G, X and B
  std::string root;                                         // I
  bool own_proc = false;                                    // V
  bool new_student = false;                                 // N
  std::string scratch_size = "64m";                         // S
  std::string library;                                      // W
  long wall_ms = 60000;
  size_t max_out = 4 << 20, max_err = 256 << 10;
  std::vector<std::pair<int, rlim_t>> limits;
  std::vector<std::string> env, args;
};

// Reads one job from stdin; false at the end of the input.
bool read_job(Job& job) {
  job = Job{};
  std::string field;
  char byte;
  bool any = false;
  // One byte at a time, unbuffered: a child of the per-student runner must not read ahead into
  // what the next student's child will read.
  while (read(STDIN_FILENO, &byte, 1) == 1) {
    const int c = static_cast<unsigned char>(byte);
    if (c != '\0') {
      field.push_back(char(c));
      continue;
    }
    if (field.empty()) return any;  // the empty field ends the job
    any = true;
    std::string value = field.substr(1);
    switch (field[0]) {
      case 'M': job.module = value; break;
      case 'C': job.command.push_back(value); break;
      case 'H': job.home = value; break;
      case 'U': job.uid = std::atol(value.c_str()); break;
      case 'K': job.alone = true; break;
      case 'P': job.places.push_back(value); break;
      case 'S': job.scratch_size = value; break;
      case 'G': job.cgroups.push_back(value); break;
      case 'X': job.hidden.push_back(value); break;
      case 'V': job.own_proc = true; break;
      case 'I': job.root = value; break;
      case 'B': job.shown.push_back(value); break;
      case 'N': job.new_student = true; break;
      case 'T': job.wall_ms = std::atol(value.c_str()); break;
      case 'O': job.max_out = size_t(std::atoll(value.c_str())); break;
      case 'R': job.max_err = size_t(std::atoll(value.c_str())); break;
      case 'E': job.env.push_back(value); break;
      case 'A': job.args.push_back(value); break;
      case 'W': job.library = value; break;
      case 'L': {
        size_t eq = value.find('=');
        int resource = engine::resource_named(value.substr(0, eq));
        rlim_t limit = rlim_t(std::atoll(value.c_str() + eq + 1));
        if (resource < 0 || eq == std::string::npos) break;  // not one the engine sets
        job.limits.push_back({resource, limit});
        break;
      }
      default: break;
    }
    field.clear();
  }
  return false;
}

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

// Runs one job through the engine and writes its answer on stdout.
bool serve(const Job& job) {
  engine::Job run;
  run.wall_ms = job.wall_ms;
  run.max_out = job.max_out;
  run.max_err = job.max_err;
  run.limits = job.limits;
  run.enter = [&job] { enter_sandbox(job); };
  run.lab = [&job] { return become_the_lab(job); };
  run.kill_leftovers = [&job](pid_t child) { kill_leftovers(job, child); };
  engine::Run r = engine::run(run);
  std::string ended = "none";
  if (r.stopped == engine::Stopped::kNo)
    ended = WIFEXITED(r.status) ? "exit:" + std::to_string(WEXITSTATUS(r.status))
                                : "signal:" + std::to_string(WTERMSIG(r.status));
  r.out.resize(std::min(r.out.size(), job.max_out + 1));
  r.err.resize(std::min(r.err.size(), job.max_err + 1));
  std::string head = ended + " " + engine::stopped_name(r.stopped) + " " +
                     std::to_string(r.out.size()) + " " + std::to_string(r.err.size()) + "\n";
  return write_all(1, head.data(), head.size()) && write_all(1, r.out.data(), r.out.size()) &&
         write_all(1, r.err.data(), r.err.size());
}

constexpr int kNextStudent = 10;  // a per-student child's status: a new student is waiting

// Serves jobs until the input ends (status 0) or, per student, until a new student comes after
// this child has served runs (kNextStudent); a new student before any run is answered at once.
int serve_jobs(bool per_student) {
  Job job;
  bool served = false;
  while (read_job(job)) {
    if (job.new_student) {
      if (per_student && served) return kNextStudent;
      if (!write_all(1, "ready\n", 6)) return 1;
      continue;
    }
    served = true;
    if (!serve(job)) return 1;
  }
  return 0;
}

// The per-student runner: this process forks a child for each student and waits; the child
// serves that student's runs (and is the subreaper of its labs), then ends. This process reads
// no job.
int serve_each_student() {
  for (bool first = true;; first = false) {
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      prctl(PR_SET_CHILD_SUBREAPER, 1);
      if (!first && !write_all(1, "ready\n", 6)) _exit(1);  // the new student's "N", answered
      _exit(serve_jobs(true));
    }
    int status = 0;
    for (pid_t ended; (ended = waitpid(-1, &status, 0)) != child;)  // (a lab's orphan, reaped)
      if (ended < 0 && errno != EINTR) return 1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != kNextStudent)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--kill-user") == 0) {
    char* end = nullptr;
    long uid = std::strtol(argv[2], &end, 10);
    if (*end != '\0' || uid <= 0) {
      std::fprintf(stderr, "lab04_runner: --kill-user takes a user id other than root's, not %s\n",
                   argv[2]);
      return 2;
    }
    return kill_user(uid_t(uid), 60.0) ? 0 : 1;
  }
  const bool per_student = argc == 3 && std::strcmp(argv[2], "per-student") == 0;
  if (argc != 2 && !per_student) {
    std::fprintf(stderr,
                 "lab04_runner: usage: lab04_runner RUNTIME [per-student], lab04_runner - or "
                 "lab04_runner --kill-user UID (lab04/checker/engine.py starts it)\n");
    return 2;
  }
  // LibTorch, once, for every run to come.
  if (std::strcmp(argv[1], "-") != 0 && !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    std::fprintf(stderr, "lab04_runner: could not load LibTorch: %s\n", dlerror());
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives its grader
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // the lab's orphans are reaped here
  prctl(PR_SET_DUMPABLE, 0);         // no lab may read or trace this process
  signal(SIGPIPE, SIG_IGN);
  // Not through stdio: stdout's buffer must stay unused until a child sets it line by line
  // (glibc 2.41 ignores setvbuf on a stream that has been written to).
  if (!write_all(STDOUT_FILENO, "ready\n", 6)) return 1;
  return per_student ? serve_each_student() : serve_jobs(false);
}
