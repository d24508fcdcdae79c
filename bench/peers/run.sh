#!/usr/bin/env bash
# memloop against Chroma, LanceDB, sqlite-vec, Qdrant (local) and Mem0 on the
# same corpus, vectors and queries, in one run (see README.md beside this file).
#
#   bench/peers/run.sh                      # 10,000 memories
#   bench/peers/run.sh --size 100000 --skip qdrant,mem0
#   bench/peers/run.sh --help
#
# Makes bench/peers/.venv if it is missing and installs requirements.txt into
# it (again whenever that file changes), then runs peers.py with the
# arguments given. The memloop binary: --memloop PATH, else $MEMLOOP_BIN,
# else `memloop` on PATH, else target/release/memloop (cargo build --release).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
  "$py" -m venv "$here/.venv"
fi
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
stamp="$here/.venv/.requirements.sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$here/.venv/bin/pip" install --disable-pip-version-check --quiet -r "$here/requirements.txt"
  echo "$want" > "$stamp"
fi
exec "$here/.venv/bin/python" "$here/peers.py" "$@"
