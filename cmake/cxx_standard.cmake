# The C++ standard the lab is built with follows the LibTorch that find_package(Torch) found.
# LibTorch's own TorchConfig.cmake names the standard its headers are written for, as the
# CXX_STANDARD of its imported target torch: 14 for 1.13, 17 for 2.x, 20 from 2.12 on, whose
# headers use C++20's requires-clauses. The lab needs C++17 at least (structured bindings,
# std::from_chars). It does not simply take C++20 everywhere: 1.13's headers do not compile as
# C++20 with Debian 12's clang 14 and libstdc++ 12 (an incomplete c10::IValue in std::vector).
# Included after find_package(Torch); sets LAB_CXX_STANDARD and says once which and why.
# -DLAB_CXX_STANDARD=<17|20|23> overrides the choice.
set(LAB_CXX_STANDARD "" CACHE STRING "C++ standard of every target (empty: the one LibTorch asks for, at least 17)")
if(LAB_CXX_STANDARD)
  set(lab_cxx_why "chosen with -DLAB_CXX_STANDARD")
else()
  get_target_property(torch_standard torch CXX_STANDARD)
  if(torch_standard AND torch_standard GREATER 17)
    set(LAB_CXX_STANDARD ${torch_standard})
    set(lab_cxx_why "LibTorch ${Torch_VERSION} is written for C++${torch_standard} (its TorchConfig.cmake says so)")
  elseif(NOT torch_standard AND Torch_VERSION VERSION_GREATER_EQUAL 2.12)
    set(LAB_CXX_STANDARD 20)  # a TorchConfig.cmake that names no standard: LibTorch 2.12's need
    set(lab_cxx_why "LibTorch ${Torch_VERSION}'s headers need C++20 from 2.12 on")
  else()
    set(LAB_CXX_STANDARD 17)
    set(lab_cxx_why "LibTorch ${Torch_VERSION} builds as C++17, the lab's own minimum")
  endif()
endif()
message(STATUS "C++ standard: C++${LAB_CXX_STANDARD}: ${lab_cxx_why}")
