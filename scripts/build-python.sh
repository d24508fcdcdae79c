#!/usr/bin/env bash
# Builds the Python package `memloop` (crates/memloop-py): one abi3 wheel
# for CPython 3.10 and later, into target/wheels/. maturin (pinned) is
# installed into a venv of its own under target/python-tools the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ -d "$HOME/.cache/memloop-target" ]; then
  export CARGO_TARGET_DIR="$HOME/.cache/memloop-target"
fi
tools="target/python-tools"
maturin_version="1.16.0"
if ! "$tools/bin/maturin" --version 2>/dev/null | grep -q "$maturin_version"; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin==$maturin_version"
fi
rm -f target/wheels/memloop-*.whl
"$tools/bin/maturin" build --locked --release --strip \
  -m crates/memloop-py/Cargo.toml --interpreter python3 --out target/wheels
ls target/wheels/memloop-*.whl
