# Writes a mutant of the lab: a copy of SOURCE with the text FROM replaced by TO, in OUT.
#   cmake -DSOURCE=<lab04_attention.cpp> -DOUT=<file> -DFROM=<text> -DTO=<text> -P make_mutant.cmake
# If FROM is no longer in the lab (its line was edited), the mutant is a file that does not
# compile and says so, and the mutation test fails until the table in CMakeLists.txt is mended.
file(READ "${SOURCE}" lab)
string(FIND "${lab}" "${FROM}" at)
if(at EQUAL -1)
  set(mutant "#error \"mutant: the text to mutate is not in lab04_attention.cpp any more: ${FROM}\"\n")
else()
  string(REPLACE "${FROM}" "${TO}" mutant "${lab}")
endif()
file(WRITE "${OUT}.new" "${mutant}")
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")
