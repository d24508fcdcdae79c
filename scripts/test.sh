#!/usr/bin/env bash
# Runs every test: unit, integration (real SQLite files, the real embedding
# model, loopback HTTP stubs, SIGKILL crash rounds) and doctests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch-model.sh >/dev/null
cargo test --workspace --locked
