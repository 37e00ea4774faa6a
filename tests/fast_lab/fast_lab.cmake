# The tests' fast path (included by tests/CMakeLists.txt): build/tests/lab04_fast stands in for
# build/lab04_attention in the default preset's tests, and runs the lab in a child of
# build/tests/lab04_fast_server, which has loaded LibTorch once (client.cpp and server.cpp say
# how). A test run then pays LibTorch's 0.65 s start once, not at each of its ~30 runs.
#
# Built by the default build, cheaply: after an edit only lab04_test_module is relinked (the
# lab's own object, its constructors moved aside, no library). Its pieces are those of the
# watch's else() branch (cmake/watch.cmake), but of their own: the watch's lab04_runtime needs, with clang, a long
# one-off compile. Only on Linux (SCM_RIGHTS, signalfd, PR_SET_PDEATHSIG), and not in a
# sanitizer build (an ASan module cannot be loaded into a plain process): there the tests run
# the lab itself. Sets fast_lab to the program the tests run.
set(fast_lab ${lab})
if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR LAB_SANITIZE)
  return()
endif()
add_library(lab04_test_runtime SHARED ${CMAKE_CURRENT_LIST_DIR}/runtime.cpp)
lab_settings(lab04_test_runtime)
# An empty file needs no precompiled header, whose position-independence (clang's PIE) is not a
# shared library's -fPIC; the runtime holds the precompiled header's instances all the same.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/runtime.cpp PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
# The module links no library (it is only ever loaded after the runtime); both bind their own
# symbols to themselves (-Bsymbolic): program objects then serve a module (g++'s are built
# -fPIC by lab_settings).
# The modules the server runs. Where binutils' objcopy and readelf are found (g++ brings them),
# each module's object has its constructors moved out of the loader's sight
# (defer_constructors.sh), and module_init.cpp runs them: the server then loads a module once,
# not in each child (server.cpp says why).
find_program(LAB_READELF readelf)
set(fast_lab_dir ${CMAKE_CURRENT_LIST_DIR})
if(LAB_OBJCOPY AND LAB_READELF)
  add_library(fast_lab_module_init OBJECT ${fast_lab_dir}/module_init.cpp)
  lab_standard(fast_lab_module_init)
  set_target_properties(fast_lab_module_init PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()
# server_module(<target> <object library> [EXCLUDE_FROM_ALL])
function(server_module target object_library)
  if(LAB_OBJCOPY AND LAB_READELF)
    set(moved ${CMAKE_CURRENT_BINARY_DIR}/${target}_object.o)
    add_custom_command(OUTPUT ${moved}
      COMMAND sh ${fast_lab_dir}/defer_constructors.sh ${LAB_OBJCOPY} ${LAB_READELF}
              $<TARGET_OBJECTS:${object_library}> ${moved}
      DEPENDS ${object_library} $<TARGET_OBJECTS:${object_library}> ${fast_lab_dir}/defer_constructors.sh
      VERBATIM)
    add_library(${target} MODULE ${ARGN} ${moved} $<TARGET_OBJECTS:fast_lab_module_init>)
  else()
    add_library(${target} MODULE ${ARGN} $<TARGET_OBJECTS:${object_library}>)
  endif()
  target_link_options(${target} PRIVATE -Wl,-Bsymbolic)
endfunction()
server_module(lab04_test_module lab04_lesson)
# The option parser's test (tests/parse_options_test.cpp) is the server's second program: a
# module of its own, and build/tests/parse_options_test a client of it, which without a server
# loads LibTorch and the module itself. Its 0.5 s of LibTorch's start was the longest part of a
# failing test run, and the executable's link with LibTorch the longest of a rebuild.
add_library(parse_options_object OBJECT ${CMAKE_CURRENT_LIST_DIR}/../parse_options_test.cpp)
lab_settings(parse_options_object)
server_module(parse_options_module parse_options_object)
# The server test's probe (probe.cpp): its constructors deferred, and with one left to the
# loader. Built by that test's setup (tests/CMakeLists.txt), not by the default build.
add_library(fast_probe_object OBJECT EXCLUDE_FROM_ALL ${fast_lab_dir}/probe.cpp)
add_library(fast_probe_at_load_object OBJECT EXCLUDE_FROM_ALL ${fast_lab_dir}/probe.cpp)
target_compile_definitions(fast_probe_at_load_object PRIVATE PROBE_PRIORITY)
foreach(probe fast_probe fast_probe_at_load)
  lab_standard(${probe}_object)
  set_target_properties(${probe}_object PROPERTIES POSITION_INDEPENDENT_CODE ON)
  server_module(${probe}_module ${probe}_object EXCLUDE_FROM_ALL)
endforeach()
target_link_options(lab04_test_runtime PRIVATE -Wl,-Bsymbolic)
set(fast_dir ${CMAKE_CURRENT_BINARY_DIR})
set(fast_paths FAST_LAB_FOLDER="${fast_dir}" FAST_LAB_SERVER="$<TARGET_FILE:lab04_fast_server>"
               FAST_LAB_RUNTIME="$<TARGET_FILE:lab04_test_runtime>")
add_executable(lab04_fast_server ${CMAKE_CURRENT_LIST_DIR}/server.cpp)
target_link_libraries(lab04_fast_server PRIVATE lab04_engine)  # each run is the engine's
add_executable(lab04_fast ${CMAKE_CURRENT_LIST_DIR}/client.cpp)
add_executable(parse_options_test ${CMAKE_CURRENT_LIST_DIR}/client.cpp)
add_executable(fast_probe EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/client.cpp)
add_executable(fast_probe_at_load EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/client.cpp)
foreach(target lab04_fast_server lab04_fast parse_options_test fast_probe fast_probe_at_load)  # small and plain: no LibTorch
  lab_standard(${target})
  target_compile_definitions(${target} PRIVATE ${fast_paths})
  target_link_libraries(${target} PRIVATE lab04_stand_in ${CMAKE_DL_LIBS})  # engine/stand_in/
endforeach()
if(LAB_OBJCOPY AND LAB_READELF)
  target_compile_definitions(lab04_fast_server PRIVATE FAST_LAB_DEFERRED)
endif()
target_compile_definitions(lab04_fast_server PRIVATE FAST_LAB_MODULE="$<TARGET_FILE:lab04_test_module>"
                                                     FAST_LAB_PARSER_MODULE="$<TARGET_FILE:parse_options_module>"
                                                     FAST_LAB_PROBE_MODULES="$<TARGET_FILE:fast_probe_module>","$<TARGET_FILE:fast_probe_at_load_module>")
target_compile_definitions(lab04_fast PRIVATE FAST_LAB_PROGRAM=0 FAST_LAB_REAL_LAB="$<TARGET_FILE:lab04_attention>")
target_compile_definitions(parse_options_test PRIVATE FAST_LAB_PROGRAM=1
                                                      FAST_LAB_MODULE="$<TARGET_FILE:parse_options_module>")
add_dependencies(lab04_fast lab04_fast_server lab04_test_module lab04_test_runtime lab04_attention)
add_dependencies(parse_options_test lab04_fast_server parse_options_module lab04_test_runtime)
target_compile_definitions(fast_probe PRIVATE FAST_LAB_PROGRAM=2 FAST_LAB_MODULE="$<TARGET_FILE:fast_probe_module>")
target_compile_definitions(fast_probe_at_load PRIVATE FAST_LAB_PROGRAM=3
                                                      FAST_LAB_MODULE="$<TARGET_FILE:fast_probe_at_load_module>")
add_dependencies(fast_probe lab04_fast_server fast_probe_module lab04_test_runtime)
add_dependencies(fast_probe_at_load lab04_fast_server fast_probe_at_load_module lab04_test_runtime)
set(fast_lab $<TARGET_FILE:lab04_fast>)

# Every test that runs the client requires the fixture fast_lab: the checker's server (the
# checker runs labs in a minimal environment, fast_lab.h) starts first, loading LibTorch while
# the checker's Python starts; the server for ctest's environment, if another, is started by
# its first client. They stay after the test run, idle, for 5 minutes (server.cpp), so that
# the next run after an edit loads no LibTorch again; `build/tests/lab04_fast_server stop`
# ends them at once, and a rebuilt runtime or a removed build folder within a second.
# Without a server each client runs the lab itself: the test cannot fail a student's run.
add_test(NAME the_lab_server_starts_before_the_tests_that_run_the_lab
         COMMAND lab04_fast_server start --minimal)
set_tests_properties(the_lab_server_starts_before_the_tests_that_run_the_lab PROPERTIES FIXTURES_SETUP fast_lab)
