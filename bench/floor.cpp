// The floor: a program that does nothing but load LibTorch (libtorch_cpu and everything it
// pulls in, with its static initialisers). No lab can start faster than this.
#include <ATen/Parallel.h>

int main() { return at::get_num_threads() > 0 ? 0 : 1; }
