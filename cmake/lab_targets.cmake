# How every program and library of the lab is built: the helpers CMakeLists.txt, cmake/watch.cmake
# and tests/CMakeLists.txt use, and the precompiled header they share.
#
#   lab_standard(<target>)                the C++ standard (cmake/cxx_standard.cmake), warnings on
#   lab_settings(<target> [<pch target>]) that, LibTorch with its own compile flags (the torch
#                                         target carries the ABI define), and the precompiled
#                                         header of <pch target> (default lab04_pch)
#   lab_pch(<target> [EXCLUDE_FROM_ALL])  an object library holding a precompiled header
#   lab_program(<target> <source> [EXCLUDE_FROM_ALL])  a program built like the lab
#   lab_pch_dir(<target> <variable>)      the folder where CMake puts <target>'s precompiled header
#   lab_python_habits(<target>)           a compile that fails on a habit of Python's says the C++ way
#
# Parsing LibTorch's headers is most of a compile. With LAB_PCH (on by default) they are parsed
# once into a precompiled header, cmake/lab_pch.h, shared by the lab, its tests, the mutants and
# the watch. It also holds what every compile of the lab would otherwise redo: the lab's other
# headers, the vtables LibTorch's module headers make (compiled once, in
# cmake/lab_pch_instances.cpp) and the templates the lesson's calls instantiate. With g++ too the
# header stays on: a student rebuilds after every edit, and the header makes that several times
# faster; the first build and the disk pay for it once (docs/performance.md has the figures).
# -DLAB_PCH=OFF turns it off.
option(LAB_PCH "Precompile the LibTorch headers, for fast rebuilds after an edit" ON)

function(lab_standard target)
  set_target_properties(${target} PROPERTIES CXX_STANDARD ${LAB_CXX_STANDARD} CXX_STANDARD_REQUIRED ON
                                             CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

function(lab_settings target)
  set(pch ${ARGN})
  if(NOT pch)
    set(pch lab04_pch)
  endif()
  target_link_libraries(${target} PRIVATE ${TORCH_LIBRARIES})
  lab_standard(${target})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")  # g++'s default objects cannot go into the watch's
    target_compile_options(${target} PRIVATE -fPIC)  # module (copy relocations); clang's can
  endif()
  if(LAB_PCH AND NOT target STREQUAL pch)
    target_precompile_headers(${target} REUSE_FROM ${pch})
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL OBJECT_LIBRARY)
      target_sources(${target} PRIVATE $<TARGET_OBJECTS:${pch}>)
    endif()
  endif()
endfunction()

# CMake names no variable or expression for it; this is the one place that spells it out.
function(lab_pch_dir target variable)
  set(${variable} ${CMAKE_BINARY_DIR}/CMakeFiles/${target}.dir PARENT_SCOPE)
endfunction()

# A system update (a security fix of linux-libc-dev, a new libtorch-dev) can replace a header a
# precompiled header was made from, with an older date than the precompiled header's: Ninja and
# make see nothing to redo, and clang then refuses every compile ("has been modified since the
# precompiled header was built"), while g++ would go on with the old contents. So the compiler
# launcher of each precompiled header records the headers it was made from (their inode, size,
# date and checksum), and before every build the guard (cmake/pch_guard.sh) compares them; on a
# difference it rewrites lab_pch_inputs_changed.h, which that precompiled header includes, and
# it is rebuilt. New inodes alone (each container made from an image: its overlay file system)
# are no difference when the checksums agree, or every Gradescope and PrairieLearn job would
# rebuild the precompiled header (50 s of a job's 60).
set(pch_guard sh ${CMAKE_CURRENT_LIST_DIR}/pch_guard.sh)
function(lab_pch target)
  add_library(${target} OBJECT ${ARGN} ${PROJECT_SOURCE_DIR}/cmake/lab_pch_instances.cpp)
  lab_settings(${target} ${target})
  lab_pch_dir(${target} dir)
  set(trigger ${dir}/lab_pch_inputs_changed.h)
  add_custom_target(${target}_guard COMMAND ${pch_guard} ${trigger} BYPRODUCTS ${trigger} VERBATIM)
  add_dependencies(${target} ${target}_guard)
  set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "${pch_guard};--record")
  target_precompile_headers(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/lab_pch.h ${trigger})
endfunction()
if(LAB_PCH)
  lab_pch(lab04_pch)
endif()

# The compiles of lab04_attention.cpp itself (the program's, the watch's module's): after one
# that fails on a habit of Python's (a keyword argument, @, .T, ...), a line that says the C++
# way. A launcher, left out of compile_commands.json, which the class grader's compiles read.
function(lab_python_habits target)
  set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/python_habits.sh")
endfunction()

function(lab_program target source)
  add_executable(${target} ${ARGN} ${source})
  lab_settings(${target})
endfunction()
