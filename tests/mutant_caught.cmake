# Passes when the parity test catches a mutant of the lab, that is, when it fails against it.
#   cmake -DMUTANT=<binary> -DPYTHON=<python> -DPARITY=<parity_test.py> -DCASES=<a|b|...>
#         -DGOLDEN=<file> -P mutant_caught.cmake
#         [-DSTEP7=<text>]
# Also says whether the golden-output test would have caught it, for the record. With STEP7,
# the mutant's own checks must catch it too: its default run exits 1 and prints that text.
string(REPLACE "|" ";" cases "${CASES}")
execute_process(COMMAND "${PYTHON}" "${PARITY}" "${MUTANT}" ${cases} RESULT_VARIABLE parity_rc
                OUTPUT_VARIABLE parity_out ERROR_VARIABLE parity_out)
execute_process(COMMAND "${MUTANT}" RESULT_VARIABLE golden_rc OUTPUT_VARIABLE out ERROR_QUIET)
file(READ "${GOLDEN}" golden)
if(golden_rc EQUAL 0 AND out STREQUAL golden)
  set(golden_verdict "not caught (prints the seed's output)")
else()
  set(golden_verdict "caught")
endif()
message("${parity_out}")
message("golden-output test: ${golden_verdict}")
if(STEP7)
  string(FIND "${out}" "${STEP7}" at)
  if(at EQUAL -1 OR NOT golden_rc EQUAL 1)
    message(FATAL_ERROR "NOT OK: the lab's own STEP 7 missed this mutant (exit ${golden_rc}):\n${out}")
  endif()
  message("OK: the lab's own STEP 7 says '${STEP7}' and exits 1")
endif()
if(parity_rc EQUAL 0)
  message(FATAL_ERROR "NOT OK: the parity test passed against this mutant; it should have failed")
endif()
message("OK: the parity test caught this mutant")
