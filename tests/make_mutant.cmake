# Writes a mutant of the lab: a copy of SOURCE with edits, in OUT. Edit i replaces every
# FROM_i with TO_i, in order, for i = 1 .. EDITS.
#   cmake -DSOURCE=<lab04_attention.cpp> -DOUT=<file> -DEDITS=<n> -DFROM_1=<text> -DTO_1=<text>
#         ... -P make_mutant.cmake
# If a FROM_i is no longer in the lab (its line was edited), the mutant is a file that does
# not compile and says so, and the mutation test fails until the list in CMakeLists.txt is
# mended.
file(READ "${SOURCE}" mutant)
foreach(i RANGE 1 ${EDITS})
  string(FIND "${mutant}" "${FROM_${i}}" at)
  if(at EQUAL -1)
    set(mutant "#error \"mutant: the text to mutate is not in lab04_attention.cpp any more: ${FROM_${i}}\"\n")
    break()
  endif()
  string(REPLACE "${FROM_${i}}" "${TO_${i}}" mutant "${mutant}")
endforeach()
file(WRITE "${OUT}.new" "${mutant}")
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")
