#!/usr/bin/env python3
"""make_class.py: a class of students made from the lesson and the catalogue, in the shapes
grader/grade_class.py reads, with what each student's row must say (independent of the grader:
the edits below are made to the lesson's text, and each names the mistake it makes).

usage: make_class.py SHAPE FOLDER [MANIFEST]
  SHAPE     folders (a folder per student, some as cloned repositories), canvas (Canvas's
            <login>_<id>_<id>_lab04_attention.cpp files), gradescope (Gradescope's export, a
            group submission among them) or bench (30 students, a folder each)
  MANIFEST  a JSON file: for each student, the lab's kind, the mistakes it makes (ids of
            lab04/checker/mistakes.py) and the status its row must have
"""
import json
import os
import sys

import project

S = "scores.mul_(1.0 / std::sqrt(double(HEAD)))"
SOFTMAX = "torch::softmax(scores, /*dim=*/-1)"
MASK = "scores.masked_fill_(tril.logical_not(), -INFINITY)"
FORGE = r"""#include <fcntl.h>
#include <unistd.h>
#include <cstring>
#include <string>
static void forge() {
  const char* fake = "exit:0 - 0 0\n";
  for (int fd = 3; fd < 256; ++fd) if (write(fd, fake, std::strlen(fake)) < 0) continue;
  std::string out = "/proc/" + std::to_string(getppid()) + "/fd/1";
  int fd = open(out.c_str(), O_WRONLY);
  if (fd >= 0 && write(fd, fake, std::strlen(fake)) < 0) close(fd);
  if (fork() == 0) { setsid(); for (;;) sleep(1); }
}
int main(int argc, char** argv) try {
  forge();"""
MAIN = "int main(int argc, char** argv) try {"
END = "  return finish_output(0);\n} catch"
# A lab that claims shapes of a hundred million rows before the lesson's own output.
LIES = MAIN + r"""
  std::printf("    q, shape (100000000, 6):\n      t0: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]\n");
  std::printf("STEP 3-5:\n  t99999999: [0.5, 0.5]\n\n");"""
# Leftovers: files in every place any user may write, at any depth, and a folder thousands deep
# (SHARED stands for a
# folder of root's that anyone may write, as X11's socket folder is), and System V IPC.
SHARED = "/tmp/lab04-shared-by-everyone"
LEAVES = r"""#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <string>
static void leave_things_behind() {
  const std::string block(1 << 20, 'x');
  for (const char* place : {"/tmp", "/var/tmp", "/dev/shm", "/run/lock", "%s"})
    for (int n = 0; n < 16; ++n) {
      std::string path = std::string(place) + "/left-" + std::to_string(getpid()) + "-" + std::to_string(n);
      std::FILE* f = std::fopen(path.c_str(), "w");
      if (!f) break;
      for (int mb = 0; mb < 8; ++mb) std::fwrite(block.data(), 1, block.size(), f);
      std::fclose(f);
    }
  // and a folder 3,000 deep in each (a recursive cleanup ends in a RecursionError)
  for (const char* place : {"/tmp", "/var/tmp", "/dev/shm", "/run/lock", "%s"}) {
    std::string top = std::string(place) + "/left-" + std::to_string(getpid()) + "-deep";
    if (mkdir(top.c_str(), 0700) != 0 || chdir(top.c_str()) != 0) continue;
    for (int n = 0; n < 3000 && mkdir("d", 0700) == 0 && chdir("d") == 0; ++n) {
    }
    if (chdir("/") != 0) break;
  }
  for (int n = 0; n < 4; ++n) {
    shmget(IPC_PRIVATE, 64 << 20, IPC_CREAT | 0600);
    semget(IPC_PRIVATE, 4, IPC_CREAT | 0600);
    msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  }
}
""" % (SHARED, SHARED) + MAIN + "\n  leave_things_behind();"
# Processes that burn CPU for as long as the run lasts, each in a session of its own.
BURNS = "#include <unistd.h>\n" + MAIN + """
  for (int n = 0; n < 30; ++n)
    if (fork() == 0) { setsid(); for (volatile unsigned long i = 0;; i = i + 1) {} }"""
# kind: (the edits of the lesson's text, the known mistakes they make, the row's status)
KINDS = {
    "lesson": ([], [], "graded"),
    "fill_minus_1e9": ([("-INFINITY)", "-1e9)")], [], "graded"),
    "scale_by_division": ([(S, "scores.div_(std::sqrt(double(HEAD)))")], [], "graded"),
    "keys_transposed_with_t": ([("k.transpose(-2, -1)", "k.t()")], [], "graded"),
    "no_scale": ([(S, "scores.mul_(1.0)")], ["no_scale"], "graded"),
    "softmax_over_dim_0": ([(SOFTMAX, "torch::softmax(scores, /*dim=*/0)")], ["softmax_over_dim_0"], "graded"),
    "mask_past": ([(MASK, "scores.masked_fill_(tril, -INFINITY)")], ["mask_past"], "graded"),
    "weights_times_keys": ([("weights.matmul(v)", "weights.matmul(k)")], ["weights_times_keys"], "graded"),
    "bias_all": ([(".bias(false)", ".bias(true)")], ["bias_all"], "graded"),
    "mask_filled_with_zero": ([("tril.logical_not(), -INFINITY)", "tril.logical_not(), 0.0)")],
                              ["mask_filled_with_zero"], "graded"),
    "no_scale_and_softmax_over_dim_0": ([(S, "scores.mul_(1.0)"), (SOFTMAX, "torch::softmax(scores, /*dim=*/0)")],
                                        ["no_scale", "softmax_over_dim_0"], "graded"),
    "values_made_by_the_key_layer": ([("torch::Tensor v = head.value(x);", "torch::Tensor v = head.key(x);")], [], "graded"),
    "compile_error": ([("torch::Tensor out = weights.matmul(v);", "torch::Tensor out = weights.matmul(v)")], [],
                      "did not compile"),
    "hangs_after_step_2": ([('peek(opt, "v", v);', 'peek(opt, "v", v); for (volatile bool forever = true; forever;) {}')],
                           [], "timed out"),
    "crashes_after_step_4": ([('peek(opt, "scores after the mask", scores);',
                               'peek(opt, "scores after the mask", scores); *(volatile int*)nullptr = 1;')], [], "crashed"),
    "kills_its_grader": ([("int main(int argc, char** argv) try {",
                           "#include <unistd.h>\n#include <csignal>\nint main(int argc, char** argv) try {\n"
                           "  kill(getppid(), SIGKILL);\n  kill(-1, SIGKILL);")],
                         [], "graded"),  # it can kill neither: as root it runs as a user of its own
    "floods_processes": ([("int main(int argc, char** argv) try {",
                           "#include <unistd.h>\nint main(int argc, char** argv) try {\n"
                           "  for (;;) if (fork() < 0) pause();")], [], "timed out"),
    # no_scale, and an attack on the grader's channel: a forged answer written into every
    # descriptor it can reach and into its grader's stdout, and a process left behind.
    "forges_its_answer": ([(S, "scores.mul_(1.0)"), ("int main(int argc, char** argv) try {", FORGE)],
                          ["no_scale"], "graded"),
    # Right output, then a crash or a hang: judged on what it printed (STEP 7's exit status lost).
    "aborts_after_its_last_line": ([(END, "  finish_output(0);\n  std::abort();\n} catch")], [], "crashed"),
    "hangs_after_its_last_line": ([(END, "  finish_output(0);\n  for (volatile bool forever = true; forever;) {\n  }\n"
                                         "  return 0;\n} catch")], [], "timed out"),
    "claims_huge_shapes": ([(MAIN, LIES)], [], "graded"),
    # No attention computed: q, k and v printed as zeros, STEP 3 to 6 constants. Each step holds
    # on such inputs whatever its code, so none after STEP 2 earns anything (own_inputs.py).
    "computes_nothing": ([("torch::Tensor %s = head.%s(x);" % (t, layer), "torch::Tensor %s = torch::zeros({T, HEAD});" % t)
                          for t, layer in (("q", "query"), ("k", "key"), ("v", "value"))]
                         + [("q.matmul(k.transpose(-2, -1))", "torch::zeros({T, T})"),
                            (SOFTMAX, "torch::ones({T, T}).tril_().div_(torch::arange(1, T + 1).unsqueeze(1))"),
                            ("weights.matmul(v)", "torch::zeros({T, HEAD})")], [], "graded"),
    "leaves_files_and_ipc": ([(MAIN, LEAVES)], [], "graded"),
    "burns_cpu": ([(MAIN, BURNS)], [], "graded"),
    # Terminal escapes on stderr (a window title, a clipboard write, a cleared screen), no output.
    "prints_escapes": ([(MAIN, MAIN + '\n  std::fputs("\\x1b]0;owned\\x07\\x1b]52;c;b3duZWQ=\\x07\\x1b[2J", stderr);'
                                    '\n  return 5;')], [], "failed to run"),
}
# Graded only where the sandbox holds them:
HOSTILE = ["kills_its_grader", "floods_processes", "forges_its_answer", "leaves_files_and_ipc"]
# Kinds whose grade depends on the machine's load (its own busy processes slow it down): left
# out of the classes whose rows are compared with a lab graded alone.
UNSTEADY = ["burns_cpu"]
# The bench's class of 30: the lesson, forms of it, one and two mistakes, a compile error, a hang.
BENCH = (["lesson"] * 7 + ["fill_minus_1e9", "scale_by_division", "keys_transposed_with_t"] + ["no_scale"] * 4
         + ["softmax_over_dim_0"] * 4 + ["mask_past"] * 2 + ["weights_times_keys"] * 2 + ["bias_all", "mask_filled_with_zero"]
         + ["no_scale_and_softmax_over_dim_0"] * 2 + ["values_made_by_the_key_layer", "compile_error", "crashes_after_step_4",
                                                     "hangs_after_step_2"])


def lab_text(kind):
    with open(os.path.join(project.ROOT, "lab04_attention.cpp")) as f:
        text = f.read()
    for old, new in KINDS[kind][0]:
        if old not in text:
            raise SystemExit("make_class: the lesson has no %r any more: update KINDS" % old)
        text = text.replace(old, new)
    return text


def entry(kind):
    return {"kind": kind, "mistakes": KINDS[kind][1], "status": KINDS[kind][2]}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w" if isinstance(text, str) else "wb") as f:
        f.write(text)


def folders(root, kinds):
    """A folder per student: the lab at the top, in a subfolder, or in a cloned repository."""
    manifest = {}
    for n, kind in enumerate(kinds):
        name = "student%02d" % n
        where = ["", "src", "lab04-attention"][n % 3]
        write(os.path.join(root, name, where, "lab04_attention.cpp"), lab_text(kind))
        manifest[name] = entry(kind)
    return manifest


def main(argv):
    if len(argv) not in (2, 3) or argv[0] not in ("folders", "canvas", "gradescope", "bench"):
        print("make_class: usage: make_class.py folders|canvas|gradescope|bench FOLDER [MANIFEST]", file=sys.stderr)
        return 2
    shape, root = argv[0], argv[1]
    os.makedirs(root)
    manifest = {}
    if shape == "bench":
        manifest = folders(root, BENCH)
    elif shape == "folders":
        manifest = folders(root, [k for k in KINDS if k not in UNSTEADY])
        os.makedirs(os.path.join(root, "nobody"))  # an empty folder: a student with no lab
        manifest["nobody"] = {"kind": None, "mistakes": [], "status": "no lab"}
        for name, status, data in (("twice", "more than one lab", None), ("binary", "not a text file", b"\x7fELF\0\0\1"),
                                   ("empty", "empty file", ""), ("huge", "file too large", "// x\n" * 400000)):
            if data is None:
                write(os.path.join(root, name, "a", "lab04_attention.cpp"), lab_text("lesson"))
                write(os.path.join(root, name, "b", "lab04_attention.cpp"), lab_text("no_scale"))
            else:
                write(os.path.join(root, name, "lab04_attention.cpp"), data)
            manifest[name] = {"kind": None, "mistakes": [], "status": status}
    elif shape == "canvas":
        for n, kind in enumerate(["lesson", "no_scale", "softmax_over_dim_0", "mask_past"]):
            login = "login%d" % n
            late = "_late" if n == 1 else ""
            write(os.path.join(root, "%s%s_%d_%d_lab04_attention.cpp" % (login, late, 1000 + n, 5000 + n)), lab_text(kind))
            manifest[login] = entry(kind)
    else:  # gradescope: a group of two, and one alone
        meta = []
        for n, (kind, people) in enumerate([("no_scale", [("Ada One", "s1"), ("Bo Two", "s2")]),
                                            ("lesson", [("Cy Three", "s3")])]):
            sub = "submission_%d" % (900 + n)
            write(os.path.join(root, sub, "lab04_attention.cpp"), lab_text(kind))
            meta.append("%s:\n  :submitters:\n" % sub + "".join(
                "  - :name: %s\n    :sid: '%s'\n    :email: %s@example.edu\n" % (name, sid, sid) for name, sid in people)
                + "  :created_at: 2026-11-30 10:00:00.000000000 +00:00\n  :score: \n")
            for _, sid in people:
                manifest[sid] = entry(kind)
        write(os.path.join(root, "submission_metadata.yml"), "".join(meta))
    if len(argv) == 3:
        write(argv[2], json.dumps(manifest, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
