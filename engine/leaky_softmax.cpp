// lab04_leaky_softmax.so: LibTorch's softmax made to break both checks of STEP 7, for one case
// of a grade (lab04/checker/cases.py's "leaky-softmax"). The run engine loads it into the lab's
// process before the lab (engine/runner.cpp, field W): as LD_PRELOAD for a program, with
// dlopen for a module. Its registration replaces the CPU kernel of aten::_softmax, which
// torch::softmax and Tensor::softmax reach, so that the lab's own STEP 5 line gives
//
//   leaky(s) = softmax(s) / 2 + 1 / (4 T)   along each row of T scores:
//
// rows that add up to 3/4, and a weight of 1/(4T) on every future token. A lab whose STEP 7
// computes its checks from its weights prints NO for both; one that wrote them in advance
// (`sums_ok = true;`) prints YES, and loses STEP 7. A lab that computes softmax without
// LibTorch's (exp, then divide) keeps weights that add up to 1: that is right too.
//
// Aims: the grader's code, not the lesson's, so it is not in the lab; it changes nothing but
// _softmax, says nothing (LibTorch warns when a kernel is replaced: not here) and is loaded
// only for that one case.

#include <fcntl.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdio>

namespace {

at::Tensor leaky_softmax(const at::Tensor& scores, int64_t dim, bool half_to_float) {
  at::Tensor input = half_to_float ? scores.to(at::kFloat) : scores;
  at::Tensor shifted = input - std::get<0>(input.max(dim, /*keepdim=*/true));
  at::Tensor e = shifted.exp();
  at::Tensor weights = e / e.sum(dim, /*keepdim=*/true);  // softmax
  return weights * 0.5 + 0.25 / double(input.size(dim));
}

// Replaces the kernel. LibTorch warns on stderr that a kernel was replaced, in words and through
// an API that differ between its versions; the lab's stderr is the lab's, so stderr is sent to
// /dev/null meanwhile (this runs before main: no other thread yet).
struct Registration {
  Registration() {
    std::fflush(stderr);
    const int kept = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (kept >= 0 && null >= 0) dup2(null, STDERR_FILENO);
    static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__,
                                  __LINE__);
    library.impl("_softmax", TORCH_FN(leaky_softmax));
    std::fflush(stderr);
    if (kept >= 0 && null >= 0) dup2(kept, STDERR_FILENO);
    for (int fd : {kept, null})
      if (fd >= 0) close(fd);
  }
} registration;

}  // namespace
