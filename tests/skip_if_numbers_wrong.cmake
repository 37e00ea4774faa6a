# Included first by run_lab.cmake and same_output_across_threads.cmake, for the tests that can
# only pass when the lab's numbers are right. REPORT is the checker's report
# (check_lab.py --report), whose first line is OK or NOT OK. When it says NOT OK about this
# very build of the lab (the report is newer than the lab), the test prints SKIPPED with the
# reason and stops: tests/CMakeLists.txt marks it skipped (SKIP_REGULAR_EXPRESSION), so that one
# mistake is one failed test, the checker's. Without a report, or after a rebuild, it runs.
# The including script must then stop itself (a return() here ends only this file):
#   include(skip_if_numbers_wrong.cmake)
#   if(numbers_known_wrong)
#     return()
#   endif()
# BUILT: the lab's program, when LAB is a stand-in for it (build/tests/lab04_fast, which an
# edit of the lab does not rebuild).
set(numbers_known_wrong NO)
if(NOT BUILT)
  set(BUILT "${LAB}")
endif()
if(REPORT AND EXISTS "${REPORT}" AND "${REPORT}" IS_NEWER_THAN "${BUILT}")
  file(STRINGS "${REPORT}" verdict LIMIT_COUNT 1)
  if(verdict STREQUAL "NOT OK")
    message("SKIPPED: needs right numbers, and the checker found this lab's wrong: see the test "
            "every_step_of_the_lab_matches_the_reference_in_every_case, or ${REPORT}")
    set(numbers_known_wrong YES)
  endif()
endif()
