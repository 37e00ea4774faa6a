// lab04_test_runtime: LibTorch, as one shared library for lab04_fast_server to load
// (RTLD_GLOBAL) before any run; lab04_test_module, the lab linked without any library, then
// finds LibTorch's symbols (and the precompiled header's instances, linked in here by
// lab_settings) in it. Nothing of its own: the link is all.
