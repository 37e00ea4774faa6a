"""built_alone.py: a lab built alone, as the build makes build/lab04_attention, with any generator.

build_commands() reads how the build compiles the lesson (compile_commands.json) and links
its program (the command CMake makes for it, written down by a linker launcher,
tests/record_link.sh, on the target lab04_link_record); build_alone() builds another source
with those commands. The tests that grade labs one by one (grade_class_test.py) or check
labs written another way (written_another_way_test.py) use it.
"""
import json
import os
import shlex
import subprocess


def build_commands(build, link_target, link_record):
    """How the build makes build/lab04_attention, with any generator: the lesson's compile
    command from compile_commands.json, and the link command CMake makes for the program
    (link_target's, written down by its linker launcher, tests/record_link.sh). Returns
    ((folder, words), (folder, words)), or a string: why they cannot be had."""
    with open(os.path.join(build, "lab04_paths.txt")) as f:
        lesson = os.path.normpath(dict(line.rstrip("\n").split(" ", 1) for line in f)["lesson_object"])
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)

    def words_of(e):
        return e["arguments"] if "arguments" in e else shlex.split(e["command"])
    compiles = [(e["directory"], words_of(e)) for e in entries if "-o" in words_of(e)[:-1]]
    compiles = [(d, w) for d, w in compiles if os.path.normpath(os.path.join(d, w[w.index("-o") + 1])) == lesson]
    if os.path.exists(link_record):
        os.remove(link_record)
    made = subprocess.run(["cmake", "--build", build, "--target", link_target], capture_output=True, text=True)
    if not compiles or made.returncode != 0 or not os.path.isfile(link_record):
        return "no compile command for %s in compile_commands.json, or no link command recorded: %s" % (
            lesson, (made.stdout + made.stderr).strip()[-500:])
    with open(link_record) as f:
        folder, *link = f.read().split("\0")[:-1]
    return compiles[0], (folder, link)


def build_alone(commands, source, out):
    """The lab built alone, as the build makes build/lab04_attention, with the lesson's file
    replaced by source: True when it compiled and linked into the program out."""
    (compile_dir, compile_words), (link_dir, link_words) = commands
    words, skip = [], 0
    for w in compile_words:  # less the file names and the dependency file
        if skip:
            skip -= 1
        elif w in ("-o", "-c", "-MT", "-MF"):
            skip = 1
        elif w not in ("-MD", "-MMD"):
            words.append(w)
    obj = os.path.normpath(os.path.join(compile_dir, compile_words[compile_words.index("-o") + 1]))
    link = list(link_words)
    link[link.index("-o") + 1] = out
    link = [out + ".o" if os.path.normpath(os.path.join(link_dir, w)) == obj else w for w in link]
    return subprocess.run(words + ["-o", out + ".o", "-c", source], cwd=compile_dir, capture_output=True).returncode == 0 \
        and subprocess.run(link, cwd=link_dir, capture_output=True).returncode == 0
