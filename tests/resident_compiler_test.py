"""The watch's resident compiler (watch/resident.cpp) on a copy of the project: a save it
compiles runs as the lab compiled by clang++ runs, byte for byte, and a save that could mean
something else in it than alone is compiled by clang++ instead. Each edit is saved while the
README's watch runs (without the verdict); what the watch printed for it is compared with what
build/lab04_attention, built by clang++ from the same file, prints.

Compiled in the watch, and printing what the program prints: a comment; a changed line of the
output; an exception thrown and caught by the lab; a global object whose constructor prints
before main; main() without parameters; a fix after a compile error; a header the precompiled
header holds; the lesson after every refusal below. Compiled by clang++ (the watch's line says
so, and why where clang++ does not): a compile error and a warning (clang++'s own messages); a
macro removed while still used (the error clang++ gives); a header no compile had read (clang
19 crashes parsing <regex> in a namespace: refused before the part is parsed), after a comment
or spelled %:include, or named by a macro; a #pragma; an #undef of a header's macro; a function
of the lab named as a C library function, which the call would miss in the watch (labs(5L): 5
alone, 0 in a namespace); a using-directive's name defined again. A function of LibTorch's that
no save had used: by clang++, the reason naming it as C++ does, where the watch's compiler
lacks it (clang 14 on Debian 12), or by the watch.

usage: resident_compiler_test.py PROJECT_DIR WORK_DIR
Prints SKIPPED where the build has no resident compiler (a clang other than 14, 19 and 21, or
no libclang-dev and llvm-dev), OK or NOT OK for each promise otherwise, and exits 1 if one did
not hold.
"""
import os
import re
import subprocess
import sys

import checklist
import project
from watch_test import Watch, configured_copy, save

MAIN = "int main(int argc, char** argv) try {\n"
BY_WATCH = "(compiled by the watch in "
BY_CLANG = "(compiled by clang++ in "
# Where the watch's compiler has the function (Debian 13's LibTorch exports it), by the watch;
# where it has not, by clang++, with the watch's reason.
EITHER = (BY_WATCH, BY_CLANG)


def edits(lesson):
    """(what, the saved text, who compiles it, what the watch's standard error must hold: the
    watch's reason, or clang++'s own message)"""
    at_main = lambda before, inside: lesson.replace(MAIN, before + MAIN + inside)  # noqa: E731
    return [
        ("a comment appended", lesson + "// a comment\n", BY_WATCH, None),
        ("a line of the output changed", lesson.replace("Next: run several heads.", "Next: the edit shows."),
         BY_WATCH, None),
        ("an exception thrown and caught by the lab",
         at_main("", '  try { throw std::runtime_error("thrown"); } catch (const std::exception& e) '
                 '{ std::printf("caught: %s\\n", e.what()); }\n'), BY_WATCH, None),
        ("a global object whose constructor prints before main",
         at_main('struct Hello { Hello() { std::printf("constructed first\\n"); } } hello_object;\n', ""),
         BY_WATCH, None),
        ("main() without parameters",
         lesson.replace(MAIN, "int lesson_main(int argc, char** argv);\nint main() { char name[] = "
                        "\"lab04_attention\"; char* argv[] = {name, nullptr}; return lesson_main(1, argv); }\n"
                        "int lesson_main(int argc, char** argv) try {\n"), BY_WATCH, None),
        ("a compile error", lesson + "int broken = ;\n", None, "int broken = ;"),
        ("the error fixed", lesson + "// fixed\n", BY_WATCH, None),
        ("a warning", at_main("", "  int unused_number = 3;\n"), BY_CLANG, "warning: unused variable 'unused_number'"),
        ("a macro of the lab's", at_main('#define LAB_GREETING "hello\\n"\n', "  std::printf(LAB_GREETING);\n"),
         BY_WATCH, None),
        ("that macro removed, still used", at_main("", "  std::printf(LAB_GREETING);\n"), None, "LAB_GREETING"),
        ("the lesson again", lesson + "// again\n", BY_WATCH, None),
        ("a header no compile had read", at_main("#include <regex>\n", ""), BY_CLANG,
         "not in the watch: it includes <regex>, a header that no earlier compile had included"),
        ("a header the precompiled header holds", at_main("#include <map>\n", ""), BY_WATCH, None),
        ("a new header's directive after a comment, with a digraph",
         at_main("/* a comment */ %:  include <scoped_allocator>\n", ""), BY_CLANG,
         "not in the watch: it includes <scoped_allocator>, a header that no earlier compile had included"),
        ("a header named by a macro", at_main("#define LAB_HEADER <regex>\n#include LAB_HEADER\n", ""),
         BY_CLANG, "not in the watch: it includes a header named by a macro"),
        ("a #pragma", at_main('#pragma GCC diagnostic ignored "-Wunused-variable"\n', ""), BY_CLANG,
         "not in the watch: it has a #pragma"),
        ("an #undef of a header's macro", at_main("#undef TORCH_VERSION_PATCH\n", ""), BY_CLANG,
         "not in the watch: it undefines a macro"),
        ("a function named as the C library's labs, which the call would miss in the watch",
         at_main("static int labs(int) { return 0; }\n", '  std::printf("%ld\\n", long(labs(5L)));\n'), BY_CLANG,
         "not in the watch: its name labs is also a name outside it"),
        ("a name a using-directive brings in, defined again",
         at_main("using namespace std;\nstatic int max(int a, int b) { return a > b ? a : b; }\n",
                 '  std::printf("%d\\n", max(2, 3));\n'), BY_CLANG,
         "not in the watch: its name max is also a name outside it"),
        ("the Python lab's mask of floats, 1 - tril: an operator of LibTorch's no save had used, said in words (no "
         "signature)",
         lesson.replace("torch::ones({T, T}, torch::kBool).tril_();", "torch::tril(torch::ones({T, T}));")
         .replace("scores.masked_fill_(tril.logical_not(), -INFINITY)", "scores.masked_fill_(1 - tril, -INFINITY)"),
         EITHER, "not in the watch: it uses an operator of LibTorch's that the watch's compiler had not loaded yet"),
        ("the lesson once more", lesson + "// once more\n", BY_WATCH, None),
    ]


def main(argv):
    if len(argv) != 2 or not os.path.isfile(os.path.join(argv[0], "README.md")):
        print("resident_compiler_test: usage: resident_compiler_test.py PROJECT_DIR WORK_DIR", file=sys.stderr)
        return 2
    project_dir, work = argv
    configure = configured_copy(project_dir, work)
    if not configure:
        return 1
    if "with its resident compiler" not in configure.stdout:
        said = [l for l in configure.stdout.splitlines() if "The watch compiles" in l]
        print("SKIPPED: this build has no resident compiler: %s" % (said[0] if said else "no watch here"))
        return 0
    command = project.readme_command("watch", os.path.join(project_dir, "README.md")).strip()
    lab_cpp = os.path.join(work, "lab04_attention.cpp")
    program = os.path.join(work, "build", "lab04_attention")
    lesson = open(lab_cpp).read()
    checks = []
    watch = Watch(work, command + " --no-check")
    try:
        watch.next_round()
        for what, text, compiled_by, said in edits(lesson):
            save(lab_cpp, text)
            out, err = watch.next_round()
            built = subprocess.run(["cmake", "--build", "build", "--target", "lab04_attention"], cwd=work,
                                   capture_output=True, text=True)
            expected = subprocess.run([program], capture_output=True, text=True).stdout if \
                built.returncode == 0 else ""
            lines = [l for l in err.splitlines() if l.startswith("watch: ")]
            if compiled_by is None:  # clang++'s error, and no run
                ok = not out and "does not compile" in err and said in err and built.returncode != 0
            else:
                by = [b for b in (compiled_by if compiled_by == EITHER else (compiled_by,)) if lines and b in lines[-1]]
                ok = (built.returncode == 0 and expected and out == expected and by
                      and (said is None or by == [BY_WATCH] or said in err))
            if any(re.search(r"\b_Z[A-Za-z0-9_]+", l) for l in lines):  # a linker's symbol: no words for a student
                ok, err = False, "a mangled name in the watch's lines:\n" + "\n".join(lines)
            checks.append(("%s: %s" % (what, "the compile error, as clang++ gives it" if compiled_by is None else
                                       "%s, it prints what the program prints" % (
                                           "by the watch, or by clang++ saying why" if compiled_by == EITHER else
                                           compiled_by[1:-4])),
                           ok, "watch's stderr %r\nwatch's stdout begins %r\nprogram's begins %r" % (
                               err[-700:], out[:150], expected[:150])))
    finally:
        save(lab_cpp, lesson)
        watch.kill()
    return checklist.report(checks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
