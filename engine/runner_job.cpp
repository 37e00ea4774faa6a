// runner_job.cpp: a job read from stdin, field by field, as lab04/checker/engine.py's Job.fields()
// writes it (runner_job.h; the letters: engine/runner.cpp's comment).
#include "runner_job.h"

#include <unistd.h>

#include <cstdlib>

#include "run.h"

namespace runner {

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

}  // namespace runner
