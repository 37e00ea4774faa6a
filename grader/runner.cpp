// lab04_class_runner: runs students' labs for the class grader, with LibTorch loaded once.
//
//   lab04_class_runner RUNTIME           serve: read jobs on stdin, answer on stdout (below)
//   lab04_class_runner RUNTIME per-student   the same, each student served by a fresh child
//
// Aims. A student's lab, compiled as a module (a shared object, as the watch builds it), runs
// in a child of a process that has loaded LibTorch already (lab04_runtime), so that a run costs
// a fork and the lab's own work, not LibTorch's 0.5 s start. The child enters the sandbox
// before it loads one byte of the student's code: as root, a user id of its own with no
// groups, no capabilities and no way back (no_new_privs), in an empty folder, with the limits
// and the environment grader/grade_class.py asks for. This process never runs student code
// and keeps root's rights: a lab can neither signal it nor read its memory.
//
// A job is a list of NUL-terminated fields, ended by an empty field, each a letter and a value:
//   M<module>  U<user id>  H<home folder>  T<wall-time limit, ms>  O<max stdout bytes>
//   R<max stderr bytes>  L<resource>=<limit> (as, nproc, fsize, cpu, core)  E<NAME=value>
//   A<argument> (after the program's name, in order)
//   K (no value: this process is alone in a PID namespace, so kill(-1) may end the leftovers)
//   P<folder> (root only) a place any user may write (/tmp, /dev/shm, ...): the run gets an
//     empty one of its own, a size-capped tmpfs that ends with the run (see private_places)
//   S<bytes> the size of each of those, and of the home folder, which is then one too
//   G<file> (root only) a cgroup's procs file: the run joins that cgroup (its CPU share)
//   X<path> (root only, with P) a folder or file the lab must not see (the class's
//     submissions, the project with its lesson): an empty one is mounted over it
//   V (root only, with P) a /proc of the run's own that shows no other user's processes
//     (the grader's command lines among them)
//   N (alone in its job) a new student: with per-student, the runs that follow are served by a
//     fresh child of this process, which has loaded LibTorch and read nothing of any student's
//     (nor has it any of the grader's environment: the grader starts it with a minimal one),
//     so that no lab finds a classmate's paths, arguments or output in the memory it forks
//     from; the answer is "ready\n"
// The answer: one line "<how it ended> <stopped> <stdout bytes> <stderr bytes>\n", then the
// bytes. <how it ended>: exit:N, signal:N or none; <stopped>: - (no), time, size or start.
// After a run what the lab left behind is killed (kill_leftovers), before the answer is sent.

#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
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

namespace {

struct Job {
  std::string module, home;
  long uid = -1;       // -1: run as this process's user (not root: no user of its own)
  bool alone = false;  // K: this process has a PID namespace of its own (bubblewrap, unshare)
  std::vector<std::string> places, cgroups, hidden;  // P, G and X
  bool own_proc = false;                             // V
  bool new_student = false;                          // N
  std::string scratch_size = "64m";                  // S
  long wall_ms = 60000;
  size_t max_out = 4 << 20, max_err = 256 << 10;
  std::vector<std::pair<int, rlim_t>> limits;
  std::vector<std::string> env, args;
};

double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

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
      case 'H': job.home = value; break;
      case 'U': job.uid = std::atol(value.c_str()); break;
      case 'K': job.alone = true; break;
      case 'P': job.places.push_back(value); break;
      case 'S': job.scratch_size = value; break;
      case 'G': job.cgroups.push_back(value); break;
      case 'X': job.hidden.push_back(value); break;
      case 'V': job.own_proc = true; break;
      case 'N': job.new_student = true; break;
      case 'T': job.wall_ms = std::atol(value.c_str()); break;
      case 'O': job.max_out = size_t(std::atoll(value.c_str())); break;
      case 'R': job.max_err = size_t(std::atoll(value.c_str())); break;
      case 'E': job.env.push_back(value); break;
      case 'A': job.args.push_back(value); break;
      case 'L': {
        size_t eq = value.find('=');
        std::string name = value.substr(0, eq);
        rlim_t limit = rlim_t(std::atoll(value.c_str() + eq + 1));
        int resource = name == "as"      ? RLIMIT_AS
                       : name == "nproc" ? RLIMIT_NPROC
                       : name == "fsize" ? RLIMIT_FSIZE
                       : name == "cpu"   ? RLIMIT_CPU
                                         : RLIMIT_CORE;
        job.limits.push_back({resource, limit});
        break;
      }
      default: break;
    }
    field.clear();
  }
  return false;
}

constexpr int kRefused = 126;  // the child's status when it could not enter the sandbox
constexpr const char* kRefusal = "class runner: could not ";

[[noreturn]] void refuse(const char* what) {  // in the child, before any student code ran
  std::fprintf(stderr, "%s%s: %s\n", kRefusal, what, std::strerror(errno));
  std::fflush(stderr);
  _exit(kRefused);
}

// Calls the main of the lab's module in this process, and returns its status.
int run_main(const std::string& module, const std::vector<std::string>& args) {
  std::vector<std::string> words = {"lab04_attention"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // as stdbuf -oL: a crash loses no finished line
  void* lab = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto lab_main = lab ? reinterpret_cast<int (*)(int, char**)>(dlsym(lab, "main")) : nullptr;
  if (!lab_main) {
    std::fprintf(stderr, "class runner: could not load the lab: %s\n", dlerror());
    return 127;
  }
  // A lab that calls exit() (a starter's blank does) ends as if its main had returned, without
  // the destructors of the LibTorch loaded for every run (a fifth of a second each).
  on_exit([](int status, void*) { std::fflush(nullptr), _exit(status); }, nullptr);
  int status = lab_main(int(words.size()), argv.data());
  std::fflush(nullptr);
  return status;
}

// In the child, as root, before the lab's user is taken: a mount namespace and an IPC
// namespace of the run's own. Each place any user may write gets an empty tmpfs of its own,
// capped in size, and so does the home folder: whatever the lab writes, anywhere it may, is
// seen by no one else and ends with the run, as do its System V and POSIX IPC objects.
// The sandbox's folder (the home's parent, which holds the module) is kept in view.
void private_places(const Job& job) {
  std::string folder = job.home.substr(0, job.home.rfind('/'));
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0) refuse("make a mount and IPC namespace");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    refuse("make the mounts private");  // nothing below reaches the grader's own view
  int kept = open(folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);  // in the new namespace
  if (kept < 0) refuse("open the sandbox's folder");
  std::string size = "size=" + job.scratch_size;
  for (const std::string& place : job.places)
    if (mount("lab04", place.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              (size + ",mode=1777").c_str()) != 0)
      refuse("give the run a private folder");
  // Where a place held the sandbox's folder, the folder is made again and bound back in.
  if (access(folder.c_str(), F_OK) != 0) {
    for (size_t at = folder.find('/', 1); at != std::string::npos; at = folder.find('/', at + 1))
      mkdir(folder.substr(0, at).c_str(), 0755);  // the folders above it, as a tmpfs now has none
    std::string from = "/proc/self/fd/" + std::to_string(kept);
    if (mkdir(folder.c_str(), 0711) != 0 ||
        mount(from.c_str(), folder.c_str(), nullptr, MS_BIND, nullptr) != 0)
      refuse("keep the sandbox's folder in view");
  }
  close(kept);
  for (const std::string& path :
       job.hidden) {  // what is not there (under a place) is hidden already
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    int done = S_ISDIR(st.st_mode) ? mount("lab04", path.c_str(), "tmpfs",
                                           MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
                                   : mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr);
    if (done != 0) refuse("hide the grader's files");
  }
  if (job.own_proc &&
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") != 0 &&
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") != 0)
    refuse("hide the other processes");
  std::string home =
      size + ",mode=700,uid=" + std::to_string(job.uid) + ",gid=" + std::to_string(job.uid);
  if (mount("lab04", job.home.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, home.c_str()) != 0)
    refuse("give the run a home folder");
}

// In the child: joins the cgroups the job names (its share of the CPU, its processes).
void join_cgroups(const Job& job) {
  std::string pid = std::to_string(getpid());
  for (const std::string& procs : job.cgroups) {
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid.data(), pid.size()) != ssize_t(pid.size()))
      refuse("join its cgroup");
    close(fd);
  }
}

// In the child: the sandbox, then the lab. Never returns.
[[noreturn]] void enter_sandbox_and_run(const Job& job, int out, int err) {
  setsid();
  int null = open("/dev/null", O_RDONLY);
  if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
  for (int fd = 3; fd < 4096; ++fd) close(fd);  // nothing of the grader's: no job pipe, no lock
  if (job.uid >= 0) join_cgroups(job);
  if (job.uid >= 0 && !job.places.empty()) private_places(job);
  if (chdir(job.home.c_str()) != 0) refuse("enter its folder");
  for (auto [resource, limit] : job.limits) {
    rlimit now{};
    getrlimit(resource, &now);  // a user's process may lower its limits, never raise them
    rlimit r{std::min(limit, now.rlim_max),
             std::min(resource == RLIMIT_CPU ? limit + 1 : limit, now.rlim_max)};
    if (setrlimit(resource, &r) != 0) refuse("set a limit");
  }
  if (job.uid >= 0) {  // root: a user of its own, with nothing of root's left
    for (int cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; ++cap) {
    }
    gid_t id = gid_t(job.uid);
    if (setgroups(0, nullptr) != 0 || setresgid(id, id, id) != 0 ||
        setresuid(uid_t(id), uid_t(id), uid_t(id)) != 0)
      refuse("become the sandbox's user");
    if (getuid() != uid_t(id) || geteuid() != uid_t(id) || setuid(0) == 0)
      refuse("drop root's rights");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) refuse("set no_new_privs");
  clearenv();
  for (const std::string& e : job.env) putenv(const_cast<char*>(e.c_str()));
  _exit(run_main(job.module, job.args));
}

// Kills what the lab left behind: every process of its user id (kill(-1) as that user reaches
// each of them, and only them); in a PID namespace of this process's own, every process but
// this one (kill(-1) reaches no further than the namespace); else the lab's process group.
void kill_leftovers(const Job& job, pid_t child) {
  if (job.uid >= 0) {
    pid_t killer = fork();
    if (killer == 0) {
      if (setresuid(uid_t(job.uid), uid_t(job.uid), uid_t(job.uid)) == 0) kill(-1, SIGKILL);
      _exit(0);
    }
    if (killer > 0) waitpid(killer, nullptr, 0);
  } else if (job.alone) {
    kill(-1, SIGKILL);
  } else {
    kill(-child, SIGKILL);
  }
}

void reap_orphans() {  // this process is a subreaper: the lab's orphans end up here
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

// Reads, without waiting, what a pipe still holds once the lab and what it started are killed:
// all it wrote before it was stopped, up to one byte past `most`.
void read_what_is_left(int fd, std::string& to, size_t most) {
  char chunk[65536];
  pollfd p{fd, POLLIN, 0};
  while (fd >= 0 && to.size() <= most && poll(&p, 1, 0) > 0) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    to.append(chunk, size_t(n));
  }
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

// Runs one job and writes its answer on stdout.
bool serve(const Job& job) {
  int out[2], err[2];
  std::string ended = "none", stopped = "-", output, errors;
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    stopped = "start";
    errors = std::string("could not make a pipe: ") + std::strerror(errno);
  }
  pid_t child = stopped == "-" ? fork() : -1;
  if (child == 0) enter_sandbox_and_run(job, out[1], err[1]);
  if (stopped == "-" && child < 0) {
    stopped = "start";
    errors = std::string("could not fork: ") + std::strerror(errno);
  }
  if (child > 0) {
    close(out[1]);
    close(err[1]);
    double deadline = now() + double(job.wall_ms) / 1000.0;
    bool exited = false;
    int status = 0;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    while ((fds[0].fd >= 0 || fds[1].fd >= 0) && stopped == "-") {
      double left = deadline - now();
      if (left <= 0) {  // the limit judges the lab, not this loop, which may wake late
        if (!exited && waitpid(child, &status, WNOHANG) == child) exited = true;
        if (!exited) stopped = "time";
        break;
      }
      int ready = poll(fds, 2, int(std::min(left, 0.05) * 1000) + 1);
      for (int i = 0; ready > 0 && i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char chunk[65536];
        ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          close(fds[i].fd);
          fds[i].fd = -1;
          continue;
        }
        std::string& to = i == 0 ? output : errors;
        to.append(chunk, size_t(n));
        if (output.size() > job.max_out || errors.size() > job.max_err) stopped = "size";
      }
      if (!exited && waitpid(child, &status, WNOHANG) == child) {
        exited = true;  // what it left behind must not hold the pipes: gone at once
        kill_leftovers(job, child);
        deadline = std::min(deadline, now() + 2.0);
      }
    }
    if (!exited) {
      kill(-child, SIGKILL);
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
    }
    kill_leftovers(job, child);
    reap_orphans();
    if (stopped != "size") {  // all it wrote before it was stopped counts
      read_what_is_left(fds[0].fd, output, job.max_out);
      read_what_is_left(fds[1].fd, errors, job.max_err);
      if (stopped == "-" && (output.size() > job.max_out || errors.size() > job.max_err))
        stopped = "size";
    }
    for (pollfd& p : fds)
      if (p.fd >= 0) close(p.fd);
    if (stopped == "-") {
      ended = WIFEXITED(status) ? "exit:" + std::to_string(WEXITSTATUS(status))
                                : "signal:" + std::to_string(WTERMSIG(status));
    }
    // The sandbox could not be entered: the grader's failure, not the lab's (none of its code ran).
    if (WIFEXITED(status) && WEXITSTATUS(status) == kRefused && errors.rfind(kRefusal, 0) == 0)
      stopped = "start";
  }
  output.resize(std::min(output.size(), job.max_out + 1));
  errors.resize(std::min(errors.size(), job.max_err + 1));
  std::string head = ended + " " + stopped + " " + std::to_string(output.size()) + " " +
                     std::to_string(errors.size()) + "\n";
  return write_all(1, head.data(), head.size()) && write_all(1, output.data(), output.size()) &&
         write_all(1, errors.data(), errors.size());
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
  const bool per_student = argc == 3 && std::strcmp(argv[2], "per-student") == 0;
  if (argc != 2 && !per_student) {
    std::fprintf(stderr,
                 "lab04_class_runner: usage: lab04_class_runner RUNTIME [per-student] "
                 "(grader/grade_class.py starts it)\n");
    return 2;
  }
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {  // LibTorch, once, for every run to come
    std::fprintf(stderr, "lab04_class_runner: could not load LibTorch: %s\n", dlerror());
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
