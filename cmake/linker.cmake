# The linker: lld where it is found, for it links against LibTorch's large libraries several
# times faster than GNU ld (each rebuild after an edit links); otherwise the system's own, which
# builds the same lab. -DLAB_LLD=OFF keeps the system's linker (the gcc preset does).
option(LAB_LLD "Link with lld where it is found" ON)
if(LAB_LLD)
  find_program(LAB_LLD_PATH NAMES ld.lld NO_CMAKE_SYSTEM_PATH)  # on PATH, where the compiler looks
  if(LAB_LLD_PATH)
    set(LAB_LINK_FLAG -fuse-ld=lld)  # the class grader links students' labs with it too
    add_link_options(${LAB_LINK_FLAG})
    message(STATUS "Linker: lld (${LAB_LLD_PATH})")
  else()
    message(STATUS "Linker: the system's; no ld.lld was found (install lld for faster links after each edit)")
  endif()
else()
  message(STATUS "Linker: the system's (-DLAB_LLD=OFF)")
endif()
