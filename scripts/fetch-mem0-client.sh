#!/usr/bin/env bash
# Installs Mem0's own Python client (mem0ai, pinned) into target/mem0-client/,
# for the server test that points it at memloop. Idempotent: an installed
# client of the pinned version is left as it is. Needs python3 with pip.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/target/mem0-client}"
version="2.2.1"

if [ -f "$dest/mem0ai-$version.dist-info/METADATA" ]; then
  echo "mem0ai $version already installed: $dest"
  exit 0
fi
rm -rf "$dest"
echo "installing mem0ai $version into $dest ..."
python3 -m pip install --quiet --disable-pip-version-check --target "$dest" "mem0ai==$version"
