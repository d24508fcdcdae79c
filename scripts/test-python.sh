#!/usr/bin/env bash
# The Python package's tests (crates/memloop-py/tests): builds the wheel
# (scripts/build-python.sh, a release build), installs it into a fresh venv with pytest (never the
# source tree: a packaging bug fails here), and runs the suite against the
# real embedding model, real files, a kill -9, and a loopback LLM speaking
# Anthropic's Messages API. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-python.sh
venv="target/python-test-venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pytest==9.2.0" "mypy==2.4.1" target/wheels/memloop-*.whl
export MEMLOOP_MODEL_DIR="${MEMLOOP_MODEL_DIR:-$PWD/models/all-MiniLM-L6-v2}"
"$venv/bin/python" -m pytest -q -p no:cacheprovider crates/memloop-py/tests "$@"
