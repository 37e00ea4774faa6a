// lab04_runner: the run engine's program (engine/run.h): runs students' labs, one job after
// another, for the checker (lab04/checker/sandbox.py) and the class grader, through
// lab04/checker/engine.py.
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
//     leak (engine/leaky_softmax.cpp). A program gets it from its command
//     (lab04/checker/sandbox.py: env LD_PRELOAD=... just before the lab, so that no program of the
//     sandbox before it loads it)
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
//
// Its parts: runner_job.cpp reads a job (the one reader of these letters), runner_child.cpp is
// the run's child (its sandbox's mounts, cgroups and user, then the lab), runner_kill.cpp kills
// what labs left; this file serves the jobs, one run at a time, or a child for each student.

#include <dlfcn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "run.h"
#include "runner_child.h"
#include "runner_job.h"
#include "runner_kill.h"
#include "write_all.h"

namespace runner {
namespace {

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
}  // namespace runner

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--kill-user") == 0) {
    char* end = nullptr;
    long uid = std::strtol(argv[2], &end, 10);
    if (*end != '\0' || uid <= 0) {
      std::fprintf(stderr, "lab04_runner: --kill-user takes a user id other than root's, not %s\n",
                   argv[2]);
      return 2;
    }
    return runner::kill_user(uid_t(uid), 60.0) ? 0 : 1;
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
  return per_student ? runner::serve_each_student() : runner::serve_jobs(false);
}
