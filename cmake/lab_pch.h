// The precompiled header of the lab, its tests and the watch: everything they include, parsed
// once (cmake/lab_targets.cmake, LAB_PCH). Nothing in it changes what a program does; it only moves
// work out of every compile of lab04_attention.cpp, which is what a student waits for.
// Measured with clang -ftime-trace on the lab's compile; docs/performance.md has the compile's
// times.
#pragma once

// 1. The headers the lab includes, LibTorch's and the C library's alike.
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

// 2. Classes whose virtual functions every file using LibTorch's module headers would compile
// again, even a file that never names them: the headers make their vtables, and a vtable needs
// each virtual function. About 0.3 s of each compile. Declared here as instantiated elsewhere,
// they are compiled once, in lab_pch_instances.cpp, which every program links.
#define LAB_PCH_INSTANCES(X)                                            \
  X(torch::nn::Cloneable<torch::nn::LinearImpl>)                        \
  X(torch::nn::Cloneable<torch::nn::BilinearImpl>)                      \
  X(torch::nn::Cloneable<torch::nn::UnflattenImpl>)                     \
  X(c10::SingleElementType<c10::TypeKind::ListType, c10::ListType>)     \
  X(c10::SingleElementType<c10::TypeKind::FutureType, c10::FutureType>) \
  X(c10::SingleElementType<c10::TypeKind::RRefType, c10::RRefType>)
#ifdef LAB_PCH_CODEGEN  // the watch's header (-fpch-codegen): instantiated and compiled with it
#define LAB_PCH_EXTERN(...) template class __VA_ARGS__;
#else
#define LAB_PCH_EXTERN(...) extern template class __VA_ARGS__;
#endif
LAB_PCH_INSTANCES(LAB_PCH_EXTERN)
#undef LAB_PCH_EXTERN

// 3. The templates the lesson's calls instantiate (a Linear layer, the tensor operations and
// conversions of STEP 1 to 7), instantiated once here; a compile of the lab finds them done.
// Never called: it only has to compile.
inline void lab_pch_instantiate_what_the_lesson_uses(int64_t n, const char* text, long* out) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(n);
  torch::Tensor x = torch::randn({n, n});
  torch::nn::Linear layer(torch::nn::LinearOptions(n, n).bias(false));
  torch::Tensor scores = layer(x).matmul(x.transpose(-2, -1));
  scores.mul_(1.0 / std::sqrt(double(n)));
  const torch::Tensor tril = torch::ones({n, n}, torch::kBool).tril_();
  scores.masked_fill_(tril.logical_not(), -INFINITY);
  torch::Tensor weights = torch::softmax(scores, -1);
  bool ok = torch::allclose(weights.sum(-1), torch::ones({n}), 1e-5, 1e-6);
  ok = ok && weights.triu(1).abs().max().item<double>() < 1.0;
  std::string line = std::string(ok ? "a" : "b") + text;
  line = "abcd", line += "abc";
  std::from_chars(line.data(), line.data() + line.size(), *out);
  (void)weights.size(0), (void)weights.select(0, 0).item<float>(),
      (void)weights.accessor<float, 2>();
}
