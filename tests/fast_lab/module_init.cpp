// module_init.cpp: linked into each module the tests' lab server loads once (fast_lab.cmake).
// The module's own constructors are in lab04_init_array (defer_constructors.sh), where the
// loader does not run them; lab04_module_init() runs them, in order, in the child that becomes
// the client's program, after it has taken on the client's environment and folder: where and
// when a program's constructors run, before main.
extern "C" {
using Constructor = void (*)();
extern const Constructor __start_lab04_init_array[] __attribute__((weak, visibility("hidden")));
extern const Constructor __stop_lab04_init_array[] __attribute__((weak, visibility("hidden")));

void lab04_module_init() {
  for (const Constructor* c = __start_lab04_init_array; c < __stop_lab04_init_array; ++c) (*c)();
}
}
