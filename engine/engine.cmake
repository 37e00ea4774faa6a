# Included by CMakeLists.txt on Linux: the run engine (engine/run.h), the one code that starts
# a student's lab. lab04_engine is the library the programs that run labs link (the watch, the
# runner); lab04_runner is its program, which the checker and the class grader ask for runs
# (lab04/checker/engine.py). Both small and plain: neither compiles a LibTorch header, so the default
# build makes them in a second or two.
add_library(lab04_engine STATIC ${CMAKE_CURRENT_LIST_DIR}/run.cpp)
lab_standard(lab04_engine)
set_target_properties(lab04_engine PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(lab04_engine PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# lab04_stand_in: a program run by a server that has loaded LibTorch, standing in for its own
# process (engine/stand_in/protocol.h): the watch's --once server and the tests' lab server.
add_library(lab04_stand_in STATIC ${CMAKE_CURRENT_LIST_DIR}/stand_in/protocol.cpp
            ${CMAKE_CURRENT_LIST_DIR}/stand_in/client.cpp ${CMAKE_CURRENT_LIST_DIR}/stand_in/server.cpp)
lab_standard(lab04_stand_in)
target_include_directories(lab04_stand_in PUBLIC ${CMAKE_CURRENT_LIST_DIR})
add_executable(lab04_runner ${CMAKE_CURRENT_LIST_DIR}/runner.cpp ${CMAKE_CURRENT_LIST_DIR}/runner_job.cpp
               ${CMAKE_CURRENT_LIST_DIR}/runner_child.cpp ${CMAKE_CURRENT_LIST_DIR}/runner_kill.cpp)
lab_standard(lab04_runner)
target_link_libraries(lab04_runner PRIVATE lab04_engine ${CMAKE_DL_LIBS})
# lab04_leaky_softmax.so, beside lab04_runner: LibTorch's softmax made to break both checks of
# STEP 7, loaded into a lab for one case of a grade (engine/leaky_softmax.cpp). The one part
# here that compiles LibTorch's headers (five seconds); whatever builds the runner builds it.
add_library(lab04_leaky_softmax MODULE ${CMAKE_CURRENT_LIST_DIR}/leaky_softmax.cpp)
lab_standard(lab04_leaky_softmax)  # (a module: no precompiled header of the lab's fits it)
target_link_libraries(lab04_leaky_softmax PRIVATE ${TORCH_LIBRARIES})
# Never sanitized: it is loaded before the lab, into stdbuf too, which has no sanitizer runtime.
target_compile_options(lab04_leaky_softmax PRIVATE -fno-sanitize=all)
target_link_options(lab04_leaky_softmax PRIVATE -fno-sanitize=all)
set_target_properties(lab04_leaky_softmax PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY
                      $<TARGET_FILE_DIR:lab04_runner>)
add_dependencies(lab04_runner lab04_leaky_softmax)
# What the class grader reads of this build (lab04/grader/whole_class.py): it builds lab04_runner and
# lab04_module (the lab as a module; lab04_runtime is LibTorch with its headers' inline code),
# then compiles each student's lab with the module's own compile command, which
# compile_commands.json holds. After cmake/watch.cmake, which makes the module.
string(APPEND lab_paths "module_object $<TARGET_OBJECTS:${module_objects}>\n"
       "module $<TARGET_FILE:lab04_module>\nruntime $<TARGET_FILE:lab04_runtime>\n"
       "runner $<TARGET_FILE:lab04_runner>\n"
       "module_link ${CMAKE_CXX_COMPILER} ${LAB_LINK_FLAG} -Wl,-Bsymbolic -shared\n")
