#!/usr/bin/env bash
# Soak test of `memloop serve` (docs/soak.md): starts the server on a free
# loopback port with a temporary data directory and the soak's settings
# (sweeps every 15 s, idle sessions expire after 10 s, the in-process
# short-term buffer bounded at 1.5 MiB, indexes saved every minute), then
# `memloop soak` drives a mixed load across many users and sessions for
# --seconds (default 600; CI runs 60), sampling the server's RSS, open
# files and latency every 10 s, and checks that no error was answered,
# every acknowledged write is found, RSS after warm-up stays within its
# bound and p99 does not drift upward. Exits non-zero when a check fails.
#
# Usage: scripts/soak.sh [--seconds N] [--release] [--bin PATH] [memloop soak flags…]
#   default binary: the test-profile build (`cargo build --profile test`,
#   what scripts/test.sh leaves in target/debug); --release builds and uses
#   target/release/memloop; --bin (or MEMLOOP_BIN) uses the one given.
#   SOAK_KEEP=1 keeps the work directory (data, server log, the report).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ -d "$HOME/.cache/memloop-target" ]; then
  export CARGO_TARGET_DIR="$HOME/.cache/memloop-target"
fi
target="${CARGO_TARGET_DIR:-target}"

secs=600
bin="${MEMLOOP_BIN:-}"
release=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs="$2"; shift 2 ;;
    --seconds=*) secs="${1#*=}"; shift ;;
    --release) release=1; shift ;;
    --bin) bin="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done

if [ -z "$bin" ]; then
  if [ "$release" = 1 ]; then
    cargo build --release --locked -p memloop-cli --bin memloop
    bin="$target/release/memloop"
  else
    # The profile the tests build with: the embedder optimised (dev would
    # leave its matrix products unoptimised, and the load would measure that).
    cargo build --profile test --locked -p memloop-cli --bin memloop
    bin="$target/debug/memloop"
  fi
fi
[ -x "$bin" ] || { echo "no memloop binary at $bin" >&2; exit 1; }
bash scripts/fetch-model.sh >/dev/null

work="$(mktemp -d "${TMPDIR:-/tmp}/memloop-soak.XXXXXX")"
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  if [ "${SOAK_KEEP:-0}" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

cat > "$work/soak.toml" <<'TOML'
[forgetting]
gc_interval = "15s"

[short_term]
ttl_secs = 10
max_bytes = 1572864

[server]
save_indexes_secs = 60
TOML

# Port 0: the kernel picks a free one, which the server logs.
env -u MEMLOOP_DATA_DIR -u MEMLOOP_CONFIG -u MEMLOOP_STORE -u MEMLOOP_SHORT_TERM \
    -u MEMLOOP_LLM_PROVIDER -u MEMLOOP_API_KEYS \
  "$bin" --data-dir "$work/data" --config "$work/soak.toml" --log-format json \
  serve --addr 127.0.0.1:0 2>"$work/server.log" &
server=$!
addr=""
for _ in $(seq 600); do
  kill -0 "$server" 2>/dev/null || { echo "the server exited:"; tail -5 "$work/server.log"; exit 1; }
  addr="$(grep -o '"local":"127\.0\.0\.1:[0-9]*"' "$work/server.log" | head -1 | cut -d'"' -f4 || true)"
  if [ -n "$addr" ] && curl -sf "http://$addr/readyz" >/dev/null; then break; fi
  addr=""
  sleep 0.1
done
[ -n "$addr" ] || { echo "the server was not ready within 60 s:"; tail -5 "$work/server.log"; exit 1; }
echo "memloop serve at http://$addr (pid $server, $bin)"

status=0
"$bin" soak --url "http://$addr" --seconds "$secs" --pid "$server" "${extra[@]}" \
  | tee "$work/report.txt" || status=$?

# A clean stop is part of the test: SIGTERM, requests finish, exit 0.
kill -TERM "$server"
if ! wait "$server"; then
  echo "FAIL  the server did not stop cleanly on SIGTERM:"; tail -5 "$work/server.log"
  status=1
fi
server=""
if grep -q -E 'panicked|"level":"ERROR"' "$work/server.log"; then
  echo "FAIL  the server logged errors:"; grep -E 'panicked|"level":"ERROR"' "$work/server.log" | head -5
  status=1
fi
exit "$status"
