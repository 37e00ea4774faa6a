# Included by cmake/watch.cmake where the watch's module is compiled against the -fpch-codegen
# header (clang): the watch's resident compiler (watch/resident.cpp), which loads that header
# once and compiles each save in a tenth of the time. It needs clang's own libraries and
# headers, of a version it is written for (LAB_RESIDENT_CLANGS; libclang-dev and llvm-dev);
# without them, or with another clang, the watch compiles each save with clang++, as before.
string(REGEX MATCH "^[0-9]+" clang_major "${CMAKE_CXX_COMPILER_VERSION}")
set(llvm_root /usr/lib/llvm-${clang_major})
find_path(LAB_CLANG_INCLUDE clang/Interpreter/Interpreter.h PATHS ${llvm_root}/include NO_DEFAULT_PATH)
find_path(LAB_LLVM_INCLUDE llvm/Linker/Linker.h PATHS ${llvm_root}/include NO_DEFAULT_PATH)
find_library(LAB_CLANG_CPP NAMES libclang-cpp.so.${clang_major} libclang-cpp.so.${clang_major}.1 clang-cpp PATHS ${llvm_root}/lib NO_DEFAULT_PATH)
find_library(LAB_LLVM NAMES LLVM-${clang_major} PATHS ${llvm_root}/lib NO_DEFAULT_PATH)
# The clang versions watch/resident.cpp is written for: Debian 12's, 13's and testing's.
set(LAB_RESIDENT_CLANGS 14 19 21)
if(clang_major IN_LIST LAB_RESIDENT_CLANGS AND LAB_CLANG_INCLUDE AND LAB_LLVM_INCLUDE AND LAB_CLANG_CPP
   AND LAB_LLVM)
  add_library(lab04_resident MODULE EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/watch/resident.cpp)
  target_include_directories(lab04_resident SYSTEM PRIVATE ${LAB_CLANG_INCLUDE} ${LAB_LLVM_INCLUDE})
  target_link_libraries(lab04_resident PRIVATE ${LAB_CLANG_CPP} ${LAB_LLVM})
  target_compile_features(lab04_resident PRIVATE cxx_std_17)
  target_link_options(lab04_resident PRIVATE -Wl,--no-undefined)
  # The lab compiled as clang++ compiles it for the module, but to bitcode: the functions it
  # emits are those the resident compiler may lack (the header's own, which clang 14 forgets).
  add_library(lab04_supply OBJECT EXCLUDE_FROM_ALL lab04_attention.cpp)
  lab_settings(lab04_supply lab04_fast_pch)
  target_compile_definitions(lab04_supply PRIVATE LAB_PCH_CODEGEN)
  target_compile_options(lab04_supply PRIVATE -emit-llvm)
  set_target_properties(lab04_supply PROPERTIES POSITION_INDEPENDENT_CODE ON)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-resource-dir OUTPUT_VARIABLE resource_dir
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(LAB_RESIDENT_DEFINES LAB_RESIDENT="$<TARGET_FILE:lab04_resident>"
      LAB_SUPPLY="$<TARGET_OBJECTS:lab04_supply>" LAB_RESOURCE_DIR="${resource_dir}")
  message(STATUS "The watch compiles each save with its resident compiler (clang ${clang_major}'s libraries)")
else()
  message(STATUS "The watch compiles each save with clang++: its resident compiler needs the "
                 "libraries of clang ${LAB_RESIDENT_CLANGS} (apt-get install libclang-dev llvm-dev)")
endif()
