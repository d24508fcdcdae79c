#!/usr/bin/env python3
"""sentence-transformers CPU throughput baseline for all-MiniLM-L6-v2.

Usage:
    python st_baseline.py MODEL_DIR SENTENCES.txt [--threads N] [--single-n 200]

Prints one JSON object:
    {"single_p50_ms": .., "single_p99_ms": .., "batch32_sent_per_s": .., "threads": N}

single  = model.encode() on one sentence at a time over the first 200 non-empty
          lines (after warm-up); per-call latency percentiles in milliseconds.
batch32 = model.encode(all lines, batch_size=32); sentences per second.

Needs sentence-transformers (and torch) in a THROWAWAY venv; it is a reference
point for the Rust embedder, not used by CI. Runs fully offline. Max seq length
is 256 tokens, output is mean-pooled and L2-normalised, as in the Rust crate.
"""
import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def load_model(model_dir):
    from sentence_transformers import SentenceTransformer

    if (Path(model_dir) / "modules.json").is_file():
        model = SentenceTransformer(model_dir, device="cpu")
    else:
        try:  # sentence-transformers >= 6
            from sentence_transformers.sentence_transformer import modules as models
        except ImportError:
            from sentence_transformers import models
        word = models.Transformer(model_dir, max_seq_length=256)
        dim = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension
        pool = models.Pooling(dim(), pooling_mode="mean")
        model = SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu")
    model.max_seq_length = 256
    model.eval()
    return model


def percentile(sorted_vals, q):
    # linear interpolation, same as numpy's default
    if not sorted_vals:
        return float("nan")
    pos = (len(sorted_vals) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("sentences", help="UTF-8 text file, one sentence per line")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--single-n", type=int, default=200, help="lines used for the single test")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up single encodes")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass

    with open(args.sentences, encoding="utf-8") as f:
        lines = [ln.rstrip("\r\n") for ln in f]
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        raise SystemExit("no sentences")

    model = load_model(args.model_dir)
    enc = dict(convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)

    with torch.inference_mode():
        # warm-up: single calls and one full batch
        for s in lines[: args.warmup]:
            model.encode(s, **enc)
        model.encode(lines[:32], batch_size=32, **enc)

        single = lines[: args.single_n]
        lat_ms = []
        for s in single:
            t0 = time.perf_counter()
            model.encode(s, **enc)
            lat_ms.append((time.perf_counter() - t0) * 1000.0)
        lat_ms.sort()

        t0 = time.perf_counter()
        out = model.encode(lines, batch_size=32, **enc)
        batch_s = time.perf_counter() - t0
        assert out.shape[0] == len(lines)

    print(json.dumps({
        "single_p50_ms": round(percentile(lat_ms, 50), 3),
        "single_p99_ms": round(percentile(lat_ms, 99), 3),
        "batch32_sent_per_s": round(len(lines) / batch_s, 1),
        "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
