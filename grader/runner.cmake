# Included by CMakeLists.txt on Linux, after cmake/watch.cmake: the class grader's runner
# (grader/runner.cpp). grader/grade_class.py builds it with lab04_module (the lab as a module,
# and lab04_runtime, LibTorch with its headers' inline code), then compiles each student's lab
# with the module's own compile command, which compile_commands.json holds. Not built by the
# default build: the first class graded builds it.
add_executable(lab04_class_runner EXCLUDE_FROM_ALL grader/runner.cpp)  # small: it loads LibTorch itself
lab_standard(lab04_class_runner)
target_link_libraries(lab04_class_runner PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(lab04_class_runner lab04_module)
string(APPEND lab_paths "module_object $<TARGET_OBJECTS:${module_objects}>\n"
       "module $<TARGET_FILE:lab04_module>\nruntime $<TARGET_FILE:lab04_runtime>\n"
       "class_runner $<TARGET_FILE:lab04_class_runner>\n"
       "module_link ${CMAKE_CXX_COMPILER} ${LAB_LINK_FLAG} -Wl,-Bsymbolic -shared\n")
