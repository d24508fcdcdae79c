#!/usr/bin/env bash
# The plugin's own CI: dependencies (once per lock file), type check, lint,
# unit tests and build, with the pinned Node that OpenClaw itself needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=toolchain.sh
source scripts/toolchain.sh
openclaw_node
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent typecheck
npm run --silent lint
npm test
npm run --silent build
