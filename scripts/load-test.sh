#!/usr/bin/env bash
# Load test of `memloop serve` on loopback with wrk (apt-get install wrk):
# search at concurrency 32 on a 10k-memory user (query embedding included,
# every query text different, nothing cached), then raw adds at concurrency 8,
# checking that every acknowledged add is stored. Prints the embedder's own
# single-text throughput from the same run as the baseline.
# Then the search at c = 32 again for each embedder kernel path, alternating
# (COMPARE="default avx512", ROUNDS=2), with the throughput ratio.
# Usage: scripts/load-test.sh [path/to/memloop]   (default: target/release/memloop)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/memloop}
PORT=${PORT:-18431}
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

echo "== baseline: the embedder alone (memloop bench, same machine, same run)"
"$BIN" --json bench --sizes 1000 --queries 50 --work-dir "$WORK/bench" > "$WORK/bench.json"
python3 - "$WORK/bench.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["embedding"]
print(f"embedder alone: {e['single_per_s']:.0f} single texts/s (p50 {e['single_p50_ms']:.2f} ms); "
      f"32 callers at once: {e['concurrent32_plain_per_s']:.0f}/s plain, "
      f"{e['concurrent32_coalesced_per_s']:.0f}/s coalesced; batches of 32: {e['batch32_per_s']:.0f}/s")
PY

echo "== 10k memories for user load"
"$BIN" --json bench --dump-corpus "$WORK/corpus.txt" >/dev/null
# 10,000 distinct memories from the corpus's sentences; queries are other
# word mixes of them, so none is a stored text.
python3 - "$WORK" <<'PY'
import random, sys
work = sys.argv[1]
lines = [l.strip() for l in open(f"{work}/corpus.txt") if l.strip()]
rng = random.Random(7)
with open(f"{work}/memories.txt", "w") as f:
    for i in range(10000):
        f.write(f"{lines[i % len(lines)]} (note {i})\n")
with open(f"{work}/queries.txt", "w") as f:
    for i in range(2000):
        words = " ".join(lines[rng.randrange(len(lines))].split()[:6] + lines[rng.randrange(len(lines))].split()[-4:])
        f.write(words.replace('"', "") + "\n")
PY
"$BIN" --data-dir "$WORK/data" --json add --user load --file "$WORK/memories.txt" >/dev/null
echo "stored: $("$BIN" --data-dir "$WORK/data" --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["memories"])') memories"

# Starts the server (MEMLOOP_GEMM=$1, blank for the default path; its log
# in $2) and waits until it is ready; fails if it exits or is not ready in 20 s.
start_server() {
  MEMLOOP_GEMM=$1 "$BIN" --data-dir "$WORK/data" serve --addr "127.0.0.1:$PORT" 2>"$2" &
  SERVER=$!
  for _ in $(seq 100); do
    curl -sf "127.0.0.1:$PORT/readyz" >/dev/null && return 0
    kill -0 $SERVER 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
# One search of the load user (the first one loads its indexes).
warm_up() {
  curl -sf -o /dev/null -H "Content-Type: application/json" -d '{"query":"warm up","user_id":"load"}' \
    "$@" "127.0.0.1:$PORT/v1/memories/search"
}

start_server "" "$WORK/server.log" || { echo "the server did not start: $(tail -1 "$WORK/server.log")"; exit 1; }
# The user's first search loads its indexes (and builds the HNSW graph, over
# 5,000 memories): timed on its own, then the steady state is measured.
warm_up -w "first search (loads the user's indexes): %{time_total} s\n"

cat > "$WORK/search.lua" <<LUA
local queries = {}
for line in io.lines("$WORK/queries.txt") do queries[#queries + 1] = line end
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  -- a different text each time: no cache can answer it
  local q = queries[(n % #queries) + 1] .. " #" .. n
  return wrk.format(nil, "/v1/memories/search", nil,
    '{"query":"' .. q:gsub('"', "") .. '","user_id":"load","top_k":10}')
end
LUA
echo "== search, concurrency 32, 20 s"
# --timeout 10s: with wrk's default of 2 s it reports one "timeout" per
# connection at the end of a run even when no request took over 200 ms.
wrk -t 2 -c 32 -d 20s --timeout 10s --latency -s "$WORK/search.lua" "http://127.0.0.1:$PORT" | tee "$WORK/search.out"
# Latency at concurrency 32 is queueing (Little's law: 32 / throughput);
# at low concurrency it is one search's own time.
echo "== search, concurrency 4, 10 s"
wrk -t 2 -c 4 -d 10s --timeout 10s --latency -s "$WORK/search.lua" "http://127.0.0.1:$PORT" | grep -E "50%|99%|Requests/sec|Non-2xx|Socket"

cat > "$WORK/add.lua" <<'LUA'
-- every wrk thread numbers its own adds: texts are unique across threads
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/memories", nil,
    '{"messages":"load test add ' .. tid .. '-' .. n .. '","user_id":"adds","infer":false}')
end
LUA
echo "== add (infer false), concurrency 8, 10 s"
wrk -t 2 -c 8 -d 10s --latency -s "$WORK/add.lua" "http://127.0.0.1:$PORT" | tee "$WORK/add.out"
kill -TERM $SERVER; wait $SERVER || true
acked=$(awk '/requests in/ {print $1}' "$WORK/add.out")
errors=$(grep -c "Non-2xx" "$WORK/add.out" || true)
stored=$("$BIN" --data-dir "$WORK/data" --json list --user adds --limit 1000 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["results"]))')
stored_all=$(sqlite3 "$WORK/data/memloop.db" "select count(*) from memories where user_id='adds'" 2>/dev/null || echo "?")
echo "adds acknowledged (2xx): $acked (non-2xx lines: $errors); stored for user adds: $stored_all (list shows up to 1000: $stored)"

# Issue 18's comparison: search at c = 32 with each embedder kernel path
# (MEMLOOP_GEMM), alternating ROUNDS times on the same store and queries, so
# the machine's noise falls on both. COMPARE="" skips it; a path the CPU
# cannot run is reported and skipped.
COMPARE=${COMPARE-"default avx512"}
ROUNDS=${ROUNDS:-2}
if [ -n "$COMPARE" ]; then
  echo "== search at concurrency 32 by kernel path ($COMPARE), $ROUNDS rounds of 15 s, alternating"
  : > "$WORK/compare.txt"
  for round in $(seq "$ROUNDS"); do
    for path in $COMPARE; do
      if [ "$path" = default ]; then gemm=""; else gemm=$path; fi
      if ! start_server "$gemm" "$WORK/server-$path.log"; then
        echo "path $path: the server did not start ($(tail -1 "$WORK/server-$path.log")); skipped"
        kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true
        continue
      fi
      warm_up
      wrk -t 2 -c 32 -d 15s --timeout 10s --latency -s "$WORK/search.lua" "http://127.0.0.1:$PORT" > "$WORK/run.out"
      rate=$(awk '/Requests\/sec/ {print $2}' "$WORK/run.out")
      p50=$(awk '$1 == "50%" {print $2}' "$WORK/run.out")
      p99=$(awk '$1 == "99%" {print $2}' "$WORK/run.out")
      bad=$(awk '/Non-2xx/ {print $NF}' "$WORK/run.out")
      echo "round $round, path $path: $rate searches/s, p50 $p50, p99 $p99, non-2xx ${bad:-0}"
      echo "$path $rate" >> "$WORK/compare.txt"
      kill -TERM $SERVER; wait $SERVER || true
    done
  done
  python3 - "$WORK/compare.txt" $COMPARE <<'PY'
import sys
rates = {}
for line in open(sys.argv[1]):
    path, rate = line.split()
    rates.setdefault(path, []).append(float(rate))
paths = [p for p in sys.argv[2:] if p in rates]
if len(paths) >= 2:
    base = paths[-1]
    mean = lambda p: sum(rates[p]) / len(rates[p])
    for p in paths[:-1]:
        print(f"{p} against {base}: {mean(p):.0f} / {mean(base):.0f} searches/s = {mean(p) / mean(base):.2f}x")
PY
fi
