"""`python -m memloop fetch-model [DIR]`: fetch the local embedding model."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "fetch-model" and len(argv) <= 2:
        from ._fetch import fetch_model

        fetch_model(argv[1] if len(argv) == 2 else None)
        return 0
    print(
        "usage: python -m memloop fetch-model [DIR]\n"
        "  downloads and checks the embedding model (all-MiniLM-L6-v2, 87 MB) into DIR\n"
        "  (default ~/.cache/memloop/models/all-MiniLM-L6-v2, where memloop looks for it)\n"
        "benchmarks: python -m memloop.bench --help",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
