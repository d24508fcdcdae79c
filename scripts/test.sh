#!/usr/bin/env bash
# Runs every test: unit, integration (real SQLite files, the real embedding
# model, loopback HTTP stubs, SIGKILL crash rounds, Mem0's own Python client
# against the server), property-based fuzzing of every parser, doctests, and
# the Python package's pytest suite (scripts/test-python.sh) and the
# inspector's browser tests (scripts/test-ui.sh).
# Starts the services the tests need when they are not running:
# scripts/services.sh (Redis) and scripts/pg.sh (PostgreSQL with pgvector,
# for the PostgreSQL backend's tests, which find it by MEMLOOP_TEST_PG_URL).
# A cargo target directory under ~/.cache/memloop-target is used when it
# exists, so repeated runs are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ -d "$HOME/.cache/memloop-target" ]; then
  export CARGO_TARGET_DIR="$HOME/.cache/memloop-target"
fi
bash scripts/fetch-model.sh >/dev/null
bash scripts/fetch-model-nomic.sh >/dev/null
bash scripts/fetch-mem0-client.sh >/dev/null
bash scripts/services.sh
bash scripts/pg.sh start
export MEMLOOP_TEST_PG_URL="${MEMLOOP_TEST_PG_URL:-$(bash scripts/pg.sh url)}"
cargo test --workspace --locked
# The Python package, built as a wheel and installed into a fresh venv.
bash scripts/test-python.sh
# The inspector (/ui) in a real headless Chromium.
bash scripts/test-ui.sh
