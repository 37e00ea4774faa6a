"""packagers.py: the starter's parts for each grading platform: Gradescope's autograder (a zip),
Classroom 50's classroom (the template repository, the autograder's bundle, the runtime) and
PrairieLearn's course (the question and the grader's image), each with the project it builds
and grades with and a README that says how to set it up (make_starter.py --autograder,
--classroom50, --prairielearn). A platform's results files are the checker's
(lab04/checker/platforms.py).
"""
import os

from lab04 import PROJECT
from lab04.checker import cases
from lab04.checker.files import write_text, written
from lab04.instructor.starter_files import HERE, copied, fill, grader_files, write_tree

def write_autograder(path, files):
    """Gradescope's autograder zip: setup.sh and run_autograder at its root, and the starter's
    files that build and grade a lab, with the starter's lab04_attention.cpp (never the lesson:
    setup.sh builds the project with it once; each submission brings its own)."""
    import zipfile
    with written(path, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            with open(os.path.join(HERE, "gradescope", name)) as f:
                z.writestr(info, f.read())
        for name in copied() + grader_files():
            z.write(os.path.join(PROJECT, name), name)  # with its mode: check_lab.py runs
        z.writestr("tests/CMakeLists.txt", files["tests/CMakeLists.txt"])
        z.writestr("lab04_attention.cpp", files["lab04_attention.cpp"])  # the starter's, for setup.sh's build
    print("make_starter: wrote %s: Gradescope's autograder (upload it as the autograder's zip)" % path)
    return 0


def write_classroom50(out, files, points, install, unisolated=False):
    """A Classroom 50 classroom's part of this lab: the template repository, the autograder's
    bundle, the runtime and how to set them up (templates/classroom50_README.md)."""
    import json
    packages = install.split("--no-install-recommends", 1)[1].split("&&", 1)[0].split()
    template = dict(files)
    del template[".github/workflows/grade.yml"]  # Classroom 50's runner grades each push
    write_tree(os.path.join(out, "template"), copied(), template)
    bundle = {"lab04_attention.cpp": files["lab04_attention.cpp"],  # the starter's: no solution in a public bundle
              "tests/CMakeLists.txt": files["tests/CMakeLists.txt"]}
    write_tree(os.path.join(out, "autograder", "project"), copied() + grader_files(), {})
    write_tree(os.path.join(out, "autograder", "project"), [], bundle)
    grader = fill("classroom50_autograder.py", POINTS=", ".join(str(int(p)) for p in points),
                  UNISOLATED="grade" if unisolated else "refuse",
                  PACKAGES=" ".join(packages))
    path = os.path.join(out, "autograder", "autograder.py")
    write_text(path, grader)
    os.chmod(path, 0o755)
    write_text(os.path.join(out, "runtime.json"), json.dumps({"runs-on": "ubuntu-latest", "apt": packages}, indent=2) + "\n")
    write_text(os.path.join(out, "README.md"), fill("classroom50_README.md", POINTS=",".join(str(int(p)) for p in points)))
    print("make_starter: wrote %s: Classroom 50's template/, autograder/ and runtime.json (%s says how to set "
          "them up)" % (out, os.path.join(out, "README.md")))
    return 0


PRAIRIELEARN_IMAGE = "YOUR_DOCKERHUB_NAME/lab04-attention-grader"  # the README says to name it
PRAIRIELEARN_TIMEOUT = 60  # seconds of a job: six times the lesson's job at 0.9 CPU (tests/prairielearn_test.py)
PRAIRIELEARN_ENTRYPOINT = "/opt/lab04/instructor/prairielearn/run_grader"


def write_prairielearn(out, files, points, blanks, install, unisolated=False):
    """A PrairieLearn course's part of this lab: the question (externally graded, a file editor
    started from the starter's lab) and the grader's image (its Dockerfile and the project it
    builds, with the starter's lab: never the solution), and how to set them up."""
    import json
    import uuid
    packages = install.split("--no-install-recommends", 1)[1].split("&&", 1)[0].split()
    shown = ",".join(cases.fmt(p) for p in points)
    info = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "lab04-attention/prairielearn")),  # the same each time
            "title": "Lab 04: self-attention in C++ with LibTorch", "topic": "Self-attention", "tags": ["lab04", "c++"],
            "type": "v3", "singleVariant": True, "gradingMethod": "External",
            "externalGradingOptions": {"enabled": True, "image": PRAIRIELEARN_IMAGE,
                                       "entrypoint": PRAIRIELEARN_ENTRYPOINT, "timeout": PRAIRIELEARN_TIMEOUT}}
    if unisolated:  # run_grader grades even where nothing keeps /grade from the lab
        info["externalGradingOptions"]["environment"] = {"LAB04_GRADE_UNISOLATED": "1"}
    question = {"info.json": json.dumps(info, indent=2) + "\n",
                "question.html": fill("prairielearn_question.html", STEPS=", ".join(map(str, blanks)), POINTS=shown),
                "lab04_attention.cpp": files["lab04_attention.cpp"], "tests/points": shown + "\n"}
    write_tree(os.path.join(out, "question"), [], question)
    project = copied() + grader_files() + ["instructor/prairielearn/run_grader"]
    write_tree(os.path.join(out, "image", "lab04"), project, {"lab04_attention.cpp": files["lab04_attention.cpp"],
                                                             "tests/CMakeLists.txt": files["tests/CMakeLists.txt"]})
    write_text(os.path.join(out, "image", "Dockerfile"), fill("prairielearn_Dockerfile", PACKAGES=" ".join(packages)))
    write_text(os.path.join(out, "README.md"), fill("prairielearn_README.md", POINTS=shown, IMAGE=PRAIRIELEARN_IMAGE,
                                                    TIMEOUT=str(PRAIRIELEARN_TIMEOUT)))
    print("make_starter: wrote %s: PrairieLearn's question/ and the grader's image/ (%s says how to set them up)"
          % (out, os.path.join(out, "README.md")))
    return 0
