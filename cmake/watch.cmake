# Included by CMakeLists.txt on Linux: the watch needs inotify, signalfd and PR_SET_PDEATHSIG.
# The student's loop (watch/lab_watch.cpp): build/lab04_watch rebuilds the lab as a module,
# lab04_module, and runs it in a process that has loaded LibTorch, through lab04_runtime, a
# shared library linked to it. Once (--once, the README's rebuild-run: LibTorch loads while the
# lab compiles) or at each save (the watch: LibTorch loads once). None of it is built by the
# default build: the watch builds what it needs.
find_program(LAB_OBJCOPY objcopy)  # GNU objcopy, from binutils (g++ brings it); see below
if(LAB_PCH AND CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND LAB_OBJCOPY)
  # With clang the module is compiled against a second precompiled header, the same
  # cmake/lab_pch.h made with -fpch-codegen: the inline functions of LibTorch's headers are
  # then compiled once, into lab04_pch_code.o, which lab04_runtime holds, and never again in a
  # compile of the lab, which is then about half as long. That object takes long to compile,
  # once, and a large part of the build folder (docs/performance.md): too much for the default
  # build, whose clean build it would double or more; the first start of the watch or of
  # --once pays it.
  lab_pch(lab04_fast_pch EXCLUDE_FROM_ALL)
  target_compile_options(lab04_fast_pch PRIVATE -fpch-codegen)
  lab_pch_dir(lab04_fast_pch fast_pch_dir)
  set(fast_pch ${fast_pch_dir}/cmake_pch.hxx.pch)
  # Its references are made weak (GNU objcopy, from binutils; llvm-objcopy keeps undefined
  # symbols strong): it holds every inline function of the headers, and a few name what
  # LibTorch does not export (torch::jit::ProfileOp's vtable); no lab calls them.
  add_custom_command(OUTPUT lab04_pch_code.o
    COMMAND ${CMAKE_CXX_COMPILER} -fPIC -c ${fast_pch} -o lab04_pch_code.o
    COMMAND ${LAB_OBJCOPY} --weaken lab04_pch_code.o
    DEPENDS ${fast_pch} lab04_fast_pch
    COMMENT "Compiling the inline code of LibTorch's headers, once (the first start of the watch waits for it)" VERBATIM)
  add_library(lab04_runtime SHARED EXCLUDE_FROM_ALL ${CMAKE_BINARY_DIR}/lab04_pch_code.o)
  lab_settings(lab04_runtime lab04_fast_pch)
  add_library(lab04_lesson_fast OBJECT EXCLUDE_FROM_ALL lab04_attention.cpp)
  lab_settings(lab04_lesson_fast lab04_fast_pch)
  lab_python_habits(lab04_lesson_fast)
  set_target_properties(lab04_fast_pch lab04_lesson_fast PROPERTIES POSITION_INDEPENDENT_CODE ON)
  foreach(target lab04_fast_pch lab04_runtime lab04_lesson_fast)  # see cmake/lab_pch.h
    target_compile_definitions(${target} PRIVATE LAB_PCH_CODEGEN)
  endforeach()
  set(module_objects lab04_lesson_fast)
  string(APPEND lab_paths "lesson_fast_object $<TARGET_OBJECTS:lab04_lesson_fast>\n")
  include(${PROJECT_SOURCE_DIR}/watch/resident.cmake)
else()
  # Otherwise the module is linked from the program's own object: position-independent
  # executables' objects serve a module too, as long as its symbols bind to itself
  # (-Bsymbolic), and g++'s are built -fPIC (above).
  file(WRITE ${CMAKE_BINARY_DIR}/lab04_runtime.cpp "// links LibTorch, for build/lab04_watch\n")
  add_library(lab04_runtime SHARED EXCLUDE_FROM_ALL ${CMAKE_BINARY_DIR}/lab04_runtime.cpp)
  lab_settings(lab04_runtime)
  set(module_objects lab04_lesson)
endif()
# The module links no library: it is only ever loaded by build/lab04_watch, after
# lab04_runtime, whose symbols (LibTorch's among them) it then finds. A link of 0.02 s, where
# linking it to lab04_runtime took 0.08 s. Both bind their own symbols to themselves
# (-Bsymbolic): fewer lookups when they are loaded.
target_link_options(lab04_runtime PRIVATE -Wl,-Bsymbolic)
add_library(lab04_module MODULE EXCLUDE_FROM_ALL $<TARGET_OBJECTS:${module_objects}>)
add_dependencies(lab04_module lab04_runtime)
target_link_options(lab04_module PRIVATE -Wl,-Bsymbolic)
add_executable(lab04_watch watch/lab_watch.cpp watch/build.cpp watch/verdict.cpp watch/resident_client.cpp
               watch/once_server.cpp)  # small and plain: it loads LibTorch itself
lab_standard(lab04_watch)
target_compile_definitions(lab04_watch PRIVATE
  LAB_SOURCE="${PROJECT_SOURCE_DIR}/lab04_attention.cpp" LAB_BUILD_DIR="${CMAKE_BINARY_DIR}"
  LAB_MODULE="$<TARGET_FILE:lab04_module>" LAB_RUNTIME="$<TARGET_FILE:lab04_runtime>"
  LAB_OBJECT="$<TARGET_OBJECTS:${module_objects}>" LAB_CHECKER="${PROJECT_SOURCE_DIR}/checker"
  LAB_BUILD_TOOL="$<IF:$<STREQUAL:${CMAKE_GENERATOR},Ninja>,${CMAKE_MAKE_PROGRAM},${CMAKE_COMMAND}>"
  ${LAB_RESIDENT_DEFINES})
target_link_libraries(lab04_watch PRIVATE lab04_engine lab04_stand_in ${CMAKE_DL_LIBS})  # engine/engine.cmake
