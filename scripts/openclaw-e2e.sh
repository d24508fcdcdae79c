#!/usr/bin/env bash
# End-to-end test of the OpenClaw memory plugin (integrations/openclaw) in a
# real OpenClaw: `openclaw agent --local` with the plugin in the memory slot,
# `memloop serve` behind it, and a deterministic stub model on loopback that
# answers with the memories it was sent. Runs against each pinned OpenClaw
# release in OPENCLAW_E2E_VERSIONS (default: 2026.9.6 and 2026.8.2, the newest
# release before the 2026.9 line that the plugin supports).
#
# Installs Node 24 and OpenClaw into ~/.cache/memloop-openclaw (reused between
# runs; MEMLOOP_OPENCLAW_CACHE moves it), builds the plugin, and uses the
# memloop binary at $MEMLOOP_BIN, else the debug build in the cargo target
# directory (built with `cargo build -p memloop-cli` when missing). Starts and
# stops everything it starts, by PID; everything listens on 127.0.0.1 only.
# Exits non-zero when any assertion fails; prints "N passed, N failed".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
plugin="$root/integrations/openclaw"
# shellcheck source=../integrations/openclaw/scripts/toolchain.sh
source "$plugin/scripts/toolchain.sh"

VERSIONS="${OPENCLAW_E2E_VERSIONS:-2026.9.6 2026.8.2}"
HOOK_TIMEOUT_MS=2000
USER_ID=openclaw # the plugin's default user: `--local` runs have no channel sender

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "  ok   $*"; }
bad() { failed=$((failed + 1)); echo "  FAIL $*"; }
check() { # check "what" command...: one assertion
  local what="$1"; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

# --- what the test needs -----------------------------------------------------
openclaw_node
echo "node $(node --version), npm $(npm --version)"
if [ ! -d "$plugin/node_modules" ] || [ "$plugin/package-lock.json" -nt "$plugin/node_modules/.package-lock.json" ]; then
  (cd "$plugin" && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd "$plugin" && npm run --silent build)

if [ -z "${MEMLOOP_BIN:-}" ]; then
  target="${CARGO_TARGET_DIR:-$HOME/.cache/memloop-target}"
  [ -d "$target" ] || target="$root/target"
  MEMLOOP_BIN="$target/debug/memloop"
  if [ ! -x "$MEMLOOP_BIN" ]; then
    (cd "$root" && CARGO_TARGET_DIR="$target" cargo build -p memloop-cli)
  fi
fi
[ -x "$MEMLOOP_BIN" ] || { echo "no memloop binary at $MEMLOOP_BIN" >&2; exit 1; }
bash "$root/scripts/fetch-model.sh" >/dev/null
export MEMLOOP_MODEL_DIR="$root/models/all-MiniLM-L6-v2"

work="$(mktemp -d "${TMPDIR:-/tmp}/openclaw-e2e.XXXXXX")"
# OpenClaw writes its log and locks under the temp dir (some of it always
# under /tmp): what this run creates there is removed at the end.
mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
created_in_tmp=()
for d in /tmp/openclaw /tmp/openclaw-state-locks-$(id -u) /tmp/node-compile-cache; do
  [ -e "$d" ] || created_in_tmp+=("$d")
done
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for p in "${created_in_tmp[@]}"; do rm -rf "$p"; done
  if [ "$failed" -eq 0 ] && [ -z "${OPENCLAW_E2E_KEEP:-}" ]; then rm -rf "$work"; else echo "logs kept in $work"; fi
}
trap cleanup EXIT

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
# json FILE EXPR: evaluates EXPR (JavaScript, `j` is the parsed file) and prints the result.
json() { node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); const r=('"$2"'); console.log(typeof r==="string"?r:JSON.stringify(r))' "$1"; }
# until_ready URL SECONDS: polls a readiness URL (a start-up wait, not a timed behaviour).
until_ready() {
  local i
  for i in $(seq 1 $(($2 * 4))); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.25
  done
  return 1
}

start_memloop() { # start_memloop DIR PORT: memloop serve, keyless, on loopback
  MEMLOOP_DATA_DIR="$1/data" "$MEMLOOP_BIN" serve --addr "127.0.0.1:$2" >>"$1/memloop.log" 2>&1 &
  memloop_pid=$!
  pids+=("$memloop_pid")
  until_ready "http://127.0.0.1:$2/readyz" 120 || { echo "memloop did not become ready; see $1/memloop.log" >&2; return 1; }
}
stop_memloop() {
  kill "$memloop_pid" 2>/dev/null || true
  wait "$memloop_pid" 2>/dev/null || true
}

write_config() { # write_config DIR MODEL_PORT MEMLOOP_PORT
  cat >"$1/state/openclaw.json" <<EOF
{
  "models": { "mode": "merge", "providers": { "stub": {
    "baseUrl": "http://127.0.0.1:$2/v1", "apiKey": "sk-stub", "api": "openai-completions",
    "models": [{ "id": "stub-model", "name": "Stub", "contextWindow": 128000, "maxTokens": 4096 }] } } },
  "agents": { "defaults": { "model": { "primary": "stub/stub-model" } } },
  "tools": { "toolSearch": false },
  "plugins": {
    "load": { "paths": ["$plugin"] },
    "slots": { "memory": "memory-memloop" },
    "entries": {
      "memory-memloop": { "enabled": true, "hooks": { "allowConversationAccess": true },
        "config": { "baseUrl": "http://127.0.0.1:$3", "timeoutMs": $HOOK_TIMEOUT_MS } },
      "memory-core": { "enabled": false }
    }
  }
}
EOF
}

# agent DIR NAME SESSION MESSAGE: one `openclaw agent --local` turn; the JSON
# answer in DIR/NAME.json, stderr in DIR/NAME.err, wall time (ms) in DIR/NAME.ms.
agent() {
  local start end rc=0
  start=$(date +%s%3N)
  (cd "$1" && HOME="$1/home" OPENCLAW_STATE_DIR="$1/state" OPENCLAW_CONFIG_PATH="$1/state/openclaw.json" \
    timeout 180 "$OPENCLAW" agent --local --agent main --session-id "$3" -m "$4" --json >"$1/$2.json" 2>"$1/$2.err") || rc=$?
  end=$(date +%s%3N)
  echo $((end - start)) >"$1/$2.ms"
  return $rc
}
# openclaw_in DIR NAME ARGS...: an openclaw command in DIR's home and state; output in DIR/NAME.json and DIR/NAME.err.
openclaw_in() {
  local dir="$1" name="$2"; shift 2
  HOME="$dir/home" OPENCLAW_STATE_DIR="$dir/state" OPENCLAW_CONFIG_PATH="$dir/state/openclaw.json" \
    "$OPENCLAW" "$@" >"$dir/$name.json" 2>"$dir/$name.err"
}
reply_of() { json "$1" 'j.payloads.map(p=>p.text).join("\n")'; }
# The model request that carried MESSAGE (the user's words), as the stub logged it.
request_for() { node "$plugin/e2e/inspect.ts" request-for "$1" "$2"; }
memories() { # memories PORT [include_superseded]: the user's memories as JSON
  curl -fsS "http://127.0.0.1:$1/v1/memories?user_id=$USER_ID&limit=1000${2:+&include_superseded=true}"
}
contains() { grep -qiF -- "$2" <<<"$1"; }
# settled PORT TEXT...: the user's current memories once they mention every
# TEXT (or after 30 s). OpenClaw 2026.8 prints its answer before its
# agent_end hook has finished recording, so the record may land just after.
settled() {
  local port="$1" out i t all; shift
  for i in $(seq 1 120); do
    out="$(memories "$port" || echo '{}')"
    all=1
    for t in "$@"; do contains "$out" "$t" || all=0; done
    [ "$all" -eq 1 ] && break
    sleep 0.25
  done
  echo "$out"
}
# traced MEMORIES PROMPT_FILE LOG SESSION: every stored memory whose text
# reached the prompt is named in memloop's logged trace of that session's recall.
traced() { node "$plugin/e2e/inspect.ts" traced "$@"; }

run_version() {
  local version="$1" dir="$work/$1"
  echo "== openclaw $version"
  OPENCLAW="$(openclaw_install "$version")"
  mkdir -p "$dir/home" "$dir/state"
  local mport model_port mlog="$dir/model.jsonl"
  mport=$(free_port)
  model_port=$(free_port)
  : >"$mlog"
  node "$plugin/e2e/stub-model.ts" "$model_port" "$mlog" 2>"$dir/stub-model.err" &
  pids+=("$!")
  start_memloop "$dir" "$mport"
  until_ready "http://127.0.0.1:$model_port/v1/models" 30 || { bad "stub model did not start"; return; }
  write_config "$dir" "$model_port" "$mport"

  check "openclaw accepts the config" openclaw_in "$dir" validate config validate
  openclaw_in "$dir" inspect plugins inspect memory-memloop --runtime --json || true
  check "the plugin is loaded in the memory slot with its hooks and tools" test "$(json "$dir/inspect.json" \
    '[j.plugin.kind, j.plugin.memorySlotSelected, j.plugin.status, (j.typedHooks||[]).map(h=>h.name).sort().join(","), j.plugin.toolNames.join(",")].join(" ")' 2>/dev/null)" \
    = "memory true loaded agent_end,before_compaction,before_prompt_build,before_reset,session_end memory_search,memory_get,memory_store,memory_forget"

  # Session 1: two facts and a preference.
  local s1="I live in Lisbon. I work as a nurse. I prefer green tea over coffee."
  agent "$dir" s1 "e2e-one" "$s1" || bad "session 1 turn failed (see $dir/s1.err)"
  local stored
  stored="$(settled "$mport" Lisbon nurse "green tea")"
  echo "$stored" >"$dir/stored-after-s1.json"
  check "memloop stored the first fact (Lisbon)" contains "$stored" "Lisbon"
  check "memloop stored the second fact (nurse)" contains "$stored" "nurse"
  check "memloop stored the preference (green tea)" contains "$stored" "green tea"
  local lisbon_id
  lisbon_id="$(json "$dir/stored-after-s1.json" '(j.results||[]).find(m=>m.kind==="fact"&&/Lisbon/.test(m.memory))?.id ?? ""')"

  # Session 2, a new session id: ask about them.
  local q="Where do I live, what is my job and what do I like to drink?"
  agent "$dir" s2 "e2e-two" "$q" || bad "session 2 turn failed (see $dir/s2.err)"
  local sent
  sent="$(request_for "$mlog" "$q")"
  echo "$sent" >"$dir/s2.prompt"
  check "the second session's model request carried the recall block" contains "$sent" "<relevant-memories>"
  check "... marked as untrusted" contains "$sent" "untrusted historical data"
  check "... with the Lisbon fact" contains "$sent" "Lisbon"
  check "... and the green tea preference" contains "$sent" "green tea"
  local said
  said="$(reply_of "$dir/s2.json" 2>/dev/null || true)"
  check "the stub's reply saw the memories (got: ${said:0:160})" bash -c '[[ "$1" =~ memories_seen=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 2 ] && grep -qF Lisbon <<<"$1"' _ "$said"
  # The trace of that recall: memloop logs every retrieval with the ids it
  # returned, and /v1/context answers the same trace to the plugin.
  check "memloop's trace of the session-2 recall names each memory the prompt carried" \
    traced "$dir/stored-after-s1.json" "$dir/s2.prompt" "$dir/memloop.log" "session_id=e2e-two "

  # A correction in session 2 supersedes the old fact.
  agent "$dir" s2b "e2e-two" "Actually I moved to Porto." || bad "correction turn failed (see $dir/s2b.err)"
  local now all
  now="$(settled "$mport" Porto)"
  all="$(memories "$mport" all || echo '{}')"
  echo "$now" >"$dir/current-after-s2.json"
  echo "$all" >"$dir/all-after-s2.json"
  check "the correction is stored (Porto)" contains "$now" "Porto"
  check "the Lisbon fact is no longer current" bash -c '[ -n "$1" ] && ! grep -qF "\"$1\"" "$2"' _ "$lisbon_id" "$dir/current-after-s2.json"
  check "... but kept in history with its validity ended" test "$(json "$dir/all-after-s2.json" \
    "Boolean((j.results||[]).find(m=>m.id===\"$lisbon_id\")?.valid_until)")" = true
  agent "$dir" s3 "e2e-three" "Which city do I live in now?" || bad "session 3 turn failed"
  said="$(reply_of "$dir/s3.json" 2>/dev/null || true)"
  check "a later session recalls the corrected fact (got: ${said:0:160})" contains "$said" "lives in Porto"

  # A task done with a tool: the stub reads a file that is not there, then
  # one that is. The run reaches memloop with the turn, becomes a procedure
  # with its pitfall, and a later session's recall carries it.
  # OpenClaw's read tool resolves a relative path in the agent's workspace.
  mkdir -p "$dir/state/workspace"
  echo "version 2.4.1: faster search" >"$dir/state/workspace/release-notes.txt"
  agent "$dir" tool "e2e-tool" "Read the release notes and tell me the version (tool task)" || bad "tool turn failed (see $dir/tool.err)"
  said="$(reply_of "$dir/tool.json" 2>/dev/null || true)"
  check "the stub's tool task ran to its end (got: ${said:0:120})" contains "$said" "STUB tool task done"
  local procs=""
  for _ in $(seq 1 120); do
    procs="$(curl -fsS -H 'content-type: application/json' -d "{\"user_id\":\"$USER_ID\",\"query\":\"read the release notes\"}" \
      "http://127.0.0.1:$mport/v1/procedures/search" || echo '{}')"
    contains "$procs" "release-notes.txt" && break
    sleep 0.25
  done
  echo "$procs" >"$dir/procedures.json"
  check "the tool calls became a procedure with the read that worked" contains "$procs" "release-notes.txt"
  check "... and the failed read as its pitfall" test "$(json "$dir/procedures.json" \
    '((j.results||[])[0]?.pitfalls||[]).some(p=>p.includes("release-notes-draft.txt")&&p.includes("worked"))')" = true
  local ask="How did you read the release notes last time?"
  agent "$dir" tool2 "e2e-tool-2" "$ask" || bad "the session after the tool task failed"
  sent="$(request_for "$mlog" "$ask")"
  check "the next session's recall carries the procedure" contains "$sent" "Procedure:"
  check "... and its pitfall" contains "$sent" "release-notes-draft.txt"

  # Fail open: with memloop stopped, and with a memloop that never answers.
  local up_ms
  up_ms=$(cat "$dir/s3.ms")
  stop_memloop
  agent "$dir" down "e2e-down" "Hello, are you there?" || true
  said="$(reply_of "$dir/down.json" 2>/dev/null || true)"
  check "with memloop stopped the agent still answers (got: ${said:0:80})" contains "$said" "STUB memories_seen=0"
  node -e 'const s=require("net").createServer(()=>{});s.listen(+process.argv[1],"127.0.0.1")' "$mport" &
  local hole=$!
  pids+=("$hole")
  agent "$dir" hang "e2e-hang" "Hello again" || true
  kill "$hole" 2>/dev/null || true
  said="$(reply_of "$dir/hang.json" 2>/dev/null || true)"
  local hang_ms limit
  hang_ms=$(cat "$dir/hang.ms")
  # Two hooks wait at most the timeout each; 8 s more covers OpenClaw's own variance.
  limit=$((up_ms + 2 * HOOK_TIMEOUT_MS + 8000))
  check "with memloop not answering the agent answers within the hook timeout (${hang_ms} ms; normal turn ${up_ms} ms; limit ${limit} ms)" \
    bash -c 'grep -qF "STUB memories_seen=0" <<<"$1" && [ "$2" -le "$3" ]' _ "$said" "$hang_ms" "$limit"
  check "the plugin logged why it went on without memory" grep -q "memory-memloop: recall skipped" "$dir/hang.err"
}

for v in $VERSIONS; do run_version "$v"; done
echo "openclaw-e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
