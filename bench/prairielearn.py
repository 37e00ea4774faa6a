#!/usr/bin/env python3
"""bench/prairielearn.py: how long PrairieLearn's jobs take in real Docker, against the
question's timeout (info.json): 20 jobs in a row, then five at once, each run as PrairieLearn's
grader host runs it (docker run --network none --memory 2g --cpus 0.9, /grade laid out).

  bench/prairielearn.py [WORK_DIR]    (as root, with Debian's docker.io and debootstrap)

The image is built first (its layers cached by the tests' Docker daemon, tests/docker_host.py)
and is not timed. The jobs are the lesson, the lab with no scale and softmax over dimension 0,
in turn. Prints a Markdown table (rows: in a row, five at once; the median and the slowest
job, as seconds and as a fraction of the timeout; failed jobs), which bench/run puts in
docs/performance.md; the target is a third of the timeout for every job. Exit 0 when every job
passed (whatever its time), 1 when one failed, 2 when it cannot run here (one line).
"""
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests")]
import docker_host  # noqa: E402
import make_class  # noqa: E402
import prairielearn_test as pl  # noqa: E402
import project  # noqa: E402

IN_A_ROW, AT_ONCE = 20, 5


def labs():
    lesson = open(os.path.join(project.ROOT, "lab04_attention.cpp"), "rb").read()
    dim_0 = lesson.replace(b"torch::softmax(scores, /*dim=*/-1)", b"torch::softmax(scores, /*dim=*/0)")
    return [("lesson", lesson, ("score", 1.0)), ("no scale", make_class.lab_text("no_scale").encode(), ("score", 6 / 7)),
            ("softmax over dimension 0", dim_0, ("below", 1.0))]


def main(argv):
    if len(argv) > 1:
        print("bench/prairielearn.py: usage: bench/prairielearn.py [WORK_DIR]", file=sys.stderr)
        return 2
    why = docker_host.why_not()
    if why:
        print("bench/prairielearn.py: no real Docker here: %s" % why, file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0]) if argv else tempfile.mkdtemp(prefix="lab04-bench-pl-")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "prairielearn")
    subprocess.run(["rm", "-rf", out], check=True)
    subprocess.run([sys.executable, pl.MAKE_STARTER, "--prairielearn", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "question", "info.json")) as f:
        options = json.load(f)["externalGradingOptions"]
    try:
        folder, env = docker_host.start()
    except docker_host.NoDocker as e:
        print("bench/prairielearn.py: %s" % e, file=sys.stderr)
        return 2
    try:
        docker_host.base_image(env)
    except docker_host.NoDocker as e:
        docker_host.stop(folder)
        print("bench/prairielearn.py: %s" % e, file=sys.stderr)
        return 2
    host = pl.RealDocker(folder, env)
    try:
        with open(os.path.join(work, "image-build.log"), "w") as log:
            failed = host.build(os.path.join(out, "image"), work, log)
        if failed:
            print("bench/prairielearn.py: %s" % failed, file=sys.stderr)
            return 2
        kinds = labs()

        def job(n, prefix):
            what, text, (expect, value) = kinds[n % len(kinds)]
            folder = os.path.join(work, "%s%d" % (prefix, n))
            subprocess.run(["rm", "-rf", folder], check=True)
            pl.lay_out(folder, os.path.join(out, "question"), {"lab04_attention.cpp": text})
            status, data, took, output, _ = host.run(options["entrypoint"], folder, options["timeout"],
                                                     "%s%d" % (prefix, n))
            ok, _, _ = pl.judged(status, data, expect, value)
            return took, ok
        rows = {"in a row": [job(n, "row") for n in range(IN_A_ROW)]}
        with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
            rows["five at once"] = list(pool.map(lambda n: job(n, "once"), range(AT_ONCE)))
    finally:
        host.close()
    timeout = options["timeout"]
    print("| PrairieLearn's jobs in real Docker (2 GiB, 0.9 CPU; timeout %d s) | jobs | median | slowest | "
          "slowest / timeout | target | failed |" % timeout)
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, ends in rows.items():
        times = [t for t, _ in ends]
        print("| %s | %d | %.1f s | %.1f s | %.2f | <= 0.33 | %d |" % (
            name, len(ends), statistics.median(times), max(times), max(times) / timeout,
            sum(1 for _, ok in ends if not ok)))
    return 0 if all(ok for ends in rows.values() for _, ok in ends) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
