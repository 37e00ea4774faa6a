# Included by run_lab.cmake and rejects_bad_input.cmake: the environment a test runs the lab in,
# the checker's (lab04/checker/sandbox.py's _env): PATH, HOME, LANG=C.UTF-8, OMP_NUM_THREADS=2 (the
# lab's own number of threads, lab04/checker/engine.py's LAB_THREADS), the loader's and
# sanitizers' variables and the run engine the tests name (LAB_RUNNER: a lab outside the build,
# tests/fixtures/fake_lab.sh, has no build folder beside it to find lab04_runner in, and a build
# folder not named build/ is not the project's), nothing else. So a variable of the user's
# shell (NO_COLOR, a BLAS's settings) changes no test's outcome, and the tests' runs share the
# lab server of the checker's runs (tests/fast_lab: one server for each environment LibTorch
# may start in).
#   lab_environment(<variable> [NAME=value ...])  sets <variable> to the command's prefix
function(lab_environment variable)
  set(prefix env -i "PATH=$ENV{PATH}" "HOME=$ENV{HOME}" LANG=C.UTF-8 OMP_NUM_THREADS=2)
  foreach(name LD_LIBRARY_PATH ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS LAB_RUNNER)
    if(DEFINED ENV{${name}})
      list(APPEND prefix "${name}=$ENV{${name}}")
    endif()
  endforeach()
  set(${variable} ${prefix} ${ARGN} PARENT_SCOPE)
endfunction()
