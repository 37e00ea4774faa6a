// The compile-time yardstick: a file that includes only <torch/torch.h>, as a LibTorch
// program usually starts.
#include <torch/torch.h>

int main() { return 0; }
