#!/usr/bin/env bash
# Starts what the tests talk to, when it is not already answering: Redis on
# 127.0.0.1:6379 (no persistence; this kind of machine usually runs one
# already). Idempotent; prints nothing but errors.
set -euo pipefail

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }

if ! redis_up; then
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis-server not found; installing it (apt-get install redis-server)" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq redis-server >/dev/null
  fi
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 40); do redis_up && break; sleep 0.25; done
  redis_up || { echo "Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
fi
