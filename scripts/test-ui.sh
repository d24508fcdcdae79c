#!/usr/bin/env bash
# The inspector's browser tests (crates/memloop-server/tests/ui): a real
# headless Chromium (Debian's package, installed here if missing) driven
# by playwright-core (pinned, npm ci) against a real `memloop serve` on
# loopback. Screenshots of each view land in target/ui-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ -d "$HOME/.cache/memloop-target" ]; then
  export CARGO_TARGET_DIR="$HOME/.cache/memloop-target"
fi
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing Debian's chromium ..."
  $sudo apt-get install -y -q chromium >/dev/null 2>&1 ||
    { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
fi
# The memloop binary `cargo test --workspace` builds (its profile optimises
# the model's forward pass); built here only when it is missing. Not
# `cargo build`: its profile would replace that binary with a slow one.
export MEMLOOP_BIN="${MEMLOOP_BIN:-$(realpath -m "${CARGO_TARGET_DIR:-target}/debug/memloop")}"
if [ ! -x "$MEMLOOP_BIN" ]; then
  cargo test --workspace --locked --no-run -q
fi
export MEMLOOP_MODEL_DIR="${MEMLOOP_MODEL_DIR:-$PWD/models/all-MiniLM-L6-v2}"
cd crates/memloop-server/tests/ui
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
node --test --test-concurrency=1 inspector.test.mjs
