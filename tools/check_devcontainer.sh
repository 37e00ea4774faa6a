#!/bin/sh
# Reads .devcontainer/devcontainer.json (and starter/'s, where the make-starter command of docs/instructors.md
# made a starter) with the Dev Containers reference CLI, as VS Code and Codespaces read it, and
# checks that the configuration it resolves runs the README's install-build-run command (less its
# last step, the run of the lab: a starter's stops at its first blank) in a Debian image. The CLI comes from the npm registry (into build/devcontainer-cli); this
# machine has no Docker, so the CLI is told to use a docker that lists no container
# (read-configuration then reads the file alone). If the registry cannot be reached, it says so
# and reports the check as skipped (exit 0); a file that does not check fails (exit 1).
set -u
cd "$(dirname "$0")/.."
if ! log=$(npm install --prefix build/devcontainer-cli --no-audit --no-fund @devcontainers/cli@0.89.0 2>&1); then
  reason=$(printf '%s\n' "$log" | grep -m1 -E 'npm (ERR!|error) (request|code|network)' || printf '%s\n' "$log" | head -1)
  echo "check-devcontainer: SKIPPED: the Dev Containers CLI could not be installed from the npm registry ($reason)"
  exit 0
fi
install=$(tools/readme_command install-build-run)
install=${install% && build/lab04_attention}
status=0
for folder in . starter; do
  [ -f "$folder/.devcontainer/devcontainer.json" ] || continue
  if ! read=$(build/devcontainer-cli/node_modules/.bin/devcontainer read-configuration --workspace-folder "$folder" \
      --docker-path true 2>/dev/null); then
    echo "check-devcontainer: $folder: the Dev Containers CLI could not read it"
    status=1
    continue
  fi
  printf '%s\n' "$read" | tail -1 | INSTALL="$install" FOLDER="$folder" python3 -c '
import json, os, sys
conf = json.loads(sys.stdin.read())["configuration"]
wrong = []
if not str(conf.get("image", "")).startswith("debian:"):
    wrong.append("its image %r is not Debian" % conf.get("image"))
if conf.get("postCreateCommand") != os.environ["INSTALL"]:
    wrong.append("its postCreateCommand is not the README install-build-run command less its run of the lab")
print("check-devcontainer: %s: %s" % (os.environ["FOLDER"], "; ".join(wrong) or
      "read as VS Code reads it: image %s, the README install line (less the run) as its create command" % conf["image"]))
sys.exit(1 if wrong else 0)' || status=1
done
exit $status
