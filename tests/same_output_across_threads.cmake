# Passes when the lab prints byte-identical output with 1 and with 2 threads.
#   cmake -DLAB=<lab> -DARGS=<arguments joined by |> [-DREPORT=<the checker's report>]
#         -P same_output_across_threads.cmake
include(${CMAKE_CURRENT_LIST_DIR}/skip_if_numbers_wrong.cmake)
if(numbers_known_wrong)  # skipped: no run of the lab (it would fail for the checker's reason)
  return()
endif()
string(REPLACE "|" ";" args "${ARGS}")
foreach(threads 1 2)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=${threads} "${LAB}" ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out_${threads})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "NOT OK: exit status ${rc} with OMP_NUM_THREADS=${threads}")
  endif()
  string(LENGTH "${out_${threads}}" size)
  message("OMP_NUM_THREADS=${threads}: ${size} bytes of output")
endforeach()
if(NOT out_1 STREQUAL out_2)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/threads-1.txt "${out_1}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/threads-2.txt "${out_2}")
  execute_process(COMMAND diff ${CMAKE_CURRENT_BINARY_DIR}/threads-1.txt ${CMAKE_CURRENT_BINARY_DIR}/threads-2.txt
                  OUTPUT_VARIABLE diff)
  message(FATAL_ERROR "NOT OK: the output depends on the number of threads:\n${diff}")
endif()
message("OK: identical")
