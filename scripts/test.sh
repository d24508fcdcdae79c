#!/usr/bin/env bash
# Runs every test: unit, integration (real SQLite files, the real embedding
# model, loopback HTTP stubs, SIGKILL crash rounds, Mem0's own Python client
# against the server) and doctests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch-model.sh >/dev/null
bash scripts/fetch-mem0-client.sh >/dev/null
cargo test --workspace --locked
