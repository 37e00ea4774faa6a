#!/bin/sh
# python_habits.sh: after a compile of the lab fails on a habit of Python's (a keyword argument,
# @, **, True, .T, len(), a slice with ':', torch.softmax), one line that says the C++ way.
# The lesson is the C++ version of a Python lab, and its students write Python first: clang and
# g++ then say "use of undeclared identifier 'dim'", which does not say that C++ has no keyword
# arguments. The one list of those habits, for every compile of the lab and for the watch:
#
#   sh python_habits.sh COMPILER ARGUMENTS...   the compiler launcher of the lab's object (the
#                                               build: cmake/lab_targets.cmake); its messages as
#                                               it printed them, then the hints, its exit status
#   sh python_habits.sh --hints < MESSAGES      the hints for a compile's messages (the watch)
#
# A hint is matched on the compiler's message and the source line it quotes under it (clang and
# g++ both quote it), and said once however often it matches.
hints() {
  awk '
    function hint(text) { if (!(text in said)) { said[text] = 1; print "hint (a habit of Python): " text } }
    function check(message, source,    bare) {
      sub(/\/\/.*$/, "", source)  # a comment is no code (the lesson'"'"'s hold @ and **)
      bare = source
      gsub(/::/, "", bare)  # C++'"'"'s own colons
      if (message ~ /undeclared identifier [^A-Za-z_0-9 ]+(True|False)|[^A-Za-z_0-9 ]+(True|False)[^A-Za-z_0-9 ]+ was not declared/)
        hint("C++ writes true and false in lower case")
      else if (message ~ /undeclared identifier [^A-Za-z_0-9 ]+None|[^A-Za-z_0-9 ]+None[^A-Za-z_0-9 ]+ was not declared/)
        hint("C++ has no None: a tensor that holds nothing is one whose t.defined() is false, and a new dimension is t.unsqueeze(0)")
      else if (message ~ /undeclared identifier [^A-Za-z_0-9 ]+len[^A-Za-z_0-9 ]|[^A-Za-z_0-9 ]+len[^A-Za-z_0-9 ]+ was not declared/)
        hint("C++ has no len(): a tensor'"'"'s sizes are t.size(0), t.size(1), ...; T, C and HEAD hold the lesson'"'"'s")
      else if (message ~ /undeclared identifier [^A-Za-z_0-9 ]+math[^A-Za-z_0-9 ]|[^A-Za-z_0-9 ]+math[^A-Za-z_0-9 ]+ was not declared/)
        hint("C++ has no math module: write std::sqrt(x), std::exp(x), ... (from <cmath>)")
      else if (message ~ /unexpected namespace name [^A-Za-z_0-9 ]+torch|expected primary-expression before [^A-Za-z_0-9 ]*\.[^A-Za-z_0-9 ]* token/ && source ~ /torch\./)
        hint("C++ reaches torch'"'"'s functions with ::, not a dot: torch::softmax(scores, /*dim=*/-1)")
      else if (message ~ /undeclared identifier [^A-Za-z_0-9 ]+F[^A-Za-z_0-9 ]|[^A-Za-z_0-9 ]+F[^A-Za-z_0-9 ]+ was not declared/ && source ~ /F\./)
        hint("Python'"'"'s F.softmax (torch.nn.functional) is torch::softmax(scores, /*dim=*/-1) in C++")
      else if (message ~ /no member named [^A-Za-z_0-9 ]+T[^A-Za-z_0-9 ]+ in|has no member named [^A-Za-z_0-9 ]+T[^A-Za-z_0-9 ]/)
        hint("C++ has no .T: a transpose is t.t(), or t.transpose(-2, -1)")
      else if (message ~ /(undeclared identifier|was not declared)/ && keyword(message, source))
        hint("C++ has no keyword arguments: pass the value alone, in its place, as in torch::softmax(scores, /*dim=*/-1) (the comment only names it)")
      else if (source ~ /[^@"]@[^@"]/ && message ~ /(expected|stray [^A-Za-z_0-9 ]+@)/)
        hint("C++ has no @: multiply matrices with a.matmul(b), as in q.matmul(k.transpose(-2, -1))")
      else if (source ~ /\*\*/ && message ~ /(indirection requires pointer operand|invalid type argument of unary)/)
        hint("C++ has no **: write t.pow(2) for a tensor, std::pow(x, 2) or std::sqrt(x) for a number")
      else if (bare ~ /\[[^]]*:/ && message ~ /expected/)
        hint("C++ has no slices with a colon: t.index({torch::indexing::Slice(), 0}), or t.select(1, 0), t.narrow(0, 0, 2)")
    }
    function keyword(message, source,    name) {  # the undeclared name is followed by = in the code
      name = message
      sub(/^.*(identifier |error: )/, "", name)
      sub(/^[^A-Za-z_0-9]+/, "", name)  # its opening quote: one byte, or g++'"'"'s three
      sub(/[^A-Za-z_0-9].*$/, "", name)
      return name != "" && source ~ ("[(,][ ]*" name "[ ]*=[^=]")
    }
    /error/ { if (pending != "") check(pending, ""); pending = $0; next }
    { if (pending != "") { check(pending, $0); pending = "" } }
    END { if (pending != "") check(pending, "") }
  '
}

if [ "$1" = "--hints" ]; then
  hints
  exit 0
fi
messages=$(mktemp "${TMPDIR:-/tmp}/lab04-compile.XXXXXX") || exec "$@"
"$@" 2>"$messages"
status=$?
cat "$messages" >&2
[ "$status" -eq 0 ] || hints <"$messages" >&2
rm -f "$messages"
exit "$status"
