#!/usr/bin/env python3
"""bench/devcontainer.py: the watch's rows inside the dev container's image, in real Docker,
where students on macOS and Windows work: the image .devcontainer/devcontainer.json names
(Debian's, made with debootstrap and docker import: no registry is reachable here), the
project copied in as a Codespace clones it, its postCreateCommand run (the README's install
line, then the build), then `bench/run --watch` in a container of that image.

  bench/devcontainer.py WORK_DIR [DOC]    (as root, with Debian's docker.io and debootstrap)

Prints the part (a Markdown table, as bench/run --watch prints it, headed as the dev
container's image) and, with DOC (docs/performance.md), puts it there as its own system
(bench/systems.py). The image's build and its log stay in WORK_DIR. Exit 0 when measured, 1
when the image or the run failed, 2 with one line when no Docker can run here.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tests")]
import docker_host  # noqa: E402
import project  # noqa: E402
import systems  # noqa: E402

IMAGE = "lab04-devcontainer-bench:last"  # the last one kept: the next run reuses its layers
WORKSPACE = "/workspaces/lab"  # where a Codespace puts the repository
# bench/run's own tools, which it installs where they are missing: its container has no network.
TOOLS = "apt-get install -y --no-install-recommends time hyperfine || apt-get install -y --no-install-recommends time"


def dockerfile(config):
    return "FROM %s\nCOPY lab %s\nWORKDIR %s\nRUN %s\nRUN %s\n" % (
        config["image"], WORKSPACE, WORKSPACE, config["postCreateCommand"], TOOLS)


def main(argv):
    if len(argv) not in (1, 2) or (len(argv) == 2 and not os.path.isfile(argv[1])):
        print("bench/devcontainer.py: expected WORK_DIR [DOC], DOC an existing file, got: %s" % " ".join(argv),
              file=sys.stderr)
        return 2
    why = docker_host.why_not()
    if why:
        print("bench/devcontainer.py: no real Docker here: %s" % why, file=sys.stderr)
        return 2
    work = os.path.abspath(argv[0])
    with open(os.path.join(project.ROOT, ".devcontainer", "devcontainer.json")) as f:
        config = json.load(f)
    name, _, suite = config["image"].partition(":")
    if name != "debian" or not suite:
        print("bench/devcontainer.py: the dev container's image is %r, not debian:SUITE" % config["image"],
              file=sys.stderr)
        return 2
    context, out = os.path.join(work, "context"), os.path.join(work, "out")
    subprocess.run(["rm", "-rf", context, out], check=True)
    os.makedirs(out)
    project.copy(project.ROOT, os.path.join(context, "lab"))
    with open(os.path.join(context, "Dockerfile"), "w") as f:
        f.write(dockerfile(config))
    try:
        folder, env = docker_host.start()
    except docker_host.NoDocker as e:
        print("bench/devcontainer.py: %s" % e, file=sys.stderr)
        return 2
    try:
        docker_host.base_image(env, tag=config["image"], suite=suite)
        with open(os.path.join(work, "image-build.log"), "w") as log:
            built = subprocess.run(["docker", "build", "--network", "host", "-t", IMAGE, context], env=env,
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if built.returncode != 0:
            print("bench/devcontainer.py: the image did not build (see %s)" % log.name, file=sys.stderr)
            return 1
        ran = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", out + ":" + WORKSPACE + "/bench/out",
                              IMAGE, "bench/run", "--watch", "5"], env=env, capture_output=True, text=True)
        subprocess.run(["docker", "image", "prune", "-f"], env=env, capture_output=True)  # the run before's
    except docker_host.NoDocker as e:
        print("bench/devcontainer.py: %s" % e, file=sys.stderr)
        return 2
    finally:
        docker_host.stop(folder)
    part = os.path.join(out, "system.md")
    if ran.returncode != 0 or not os.path.isfile(part):
        print("bench/devcontainer.py: bench/run --watch in the image: exit %d: %s" % (
            ran.returncode, ran.stderr.strip()[-300:]), file=sys.stderr)
        return 1
    lines = open(part).read().splitlines()
    system = "the dev container's image, %s" % lines[0].lstrip("# ").split(",")[0]
    lines[0] = "### The dev container's image (%s, in Docker): %s" % (config["image"], lines[0].lstrip("# "))
    with open(part, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    if len(argv) == 2:
        return systems.main([argv[1], system, part])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
