"""`python -m memloop.bench`: add and search latency from Python at 10,000
memories, memloop against Mem0's OSS `Memory` in the same run, and the
binding's own cost over the engine call.

memloop is measured as a user gets it: `Memory.add(..., infer=False)` and
`Memory.search`, embedding included. Mem0 (`infer=False`, Qdrant local,
its default) is fed memloop's vectors through a lookup embedder, as
bench/peers does: its figures include no embedding at all, so the ratio is
conservative in Mem0's favour. Mem0 runs when `mem0ai` is importable
(pip install mem0ai==2.2.1); otherwise only memloop's figures print.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from functools import partial
from typing import Any, Callable

from ._memory import Memory

SUBJECTS = ["my sister", "my manager", "our neighbour", "the dentist", "my coach", "the landlord",
            "my daughter", "an old friend", "the plumber", "my doctor"]
VERBS = ["moved to", "recommended", "complained about", "booked", "cancelled", "painted",
         "visited", "sold", "fixed", "photographed"]
OBJECTS = ["the flat in Lisbon", "a ramen place", "the blue bicycle", "a trip to Kyoto",
           "the garden shed", "a jazz concert", "the old piano", "a cooking class",
           "the kitchen sink", "a ferry to Naxos"]
WHEN = ["last Monday", "in March", "two weeks ago", "yesterday", "over the summer",
        "on my birthday", "before Christmas", "this morning"]


def corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts: list[str] = []
    seen: set[str] = set()
    while len(texts) < n:
        t = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(WHEN)} (note {len(texts)})"
        if t not in seen:
            seen.add(t)
            texts.append(t)
    return texts


def questions(n: int, seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    return [f"who {rng.choice(VERBS)} {rng.choice(OBJECTS)}?" for _ in range(n)]


def timed(f: Callable[[], Any]) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def summary(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(s), "p95_ms": 1000 * s[int(0.95 * (len(s) - 1))],
            "n": len(s)}


def load(m: Any, texts: list[str], step: int = 100) -> None:
    """Mem0's batch form: a list of messages, one memory each with infer=False."""
    for s in range(0, len(texts), step):
        m.add([{"role": "user", "content": t} for t in texts[s:s + step]], user_id="bench", infer=False)


def bench_memloop(work: str, texts: list[str], queries: list[str], singles: list[str]) -> dict[str, Any]:
    m = Memory(os.path.join(work, "memloop"))
    ingest = timed(partial(load, m, texts))
    adds = [timed(partial(m.add, t, user_id="bench", infer=False)) for t in singles]
    search = partial(m.search, filters={"user_id": "bench"}, top_k=10)
    for q in queries[:10]:
        search(q)
    searches = [timed(partial(search, q)) for q in queries]
    # The binding's own cost: the whole Python call against the time spent
    # inside the engine for the same search (arguments and answer as JSON
    # included on the engine's side).
    inside, whole = [], []
    for q in queries:
        args = json.dumps({"query": q, "filters": {"user_id": "bench"}, "top_k": 10})
        inside.append(m._engine.timed_call("search", args)[1])
        whole.append(timed(partial(search, q)))
    return {
        "ingest_per_s": len(texts) / ingest,
        "add": summary(adds),
        "search": summary(searches),
        "binding_overhead_p50_us": 1e6 * (statistics.median(whole) - statistics.median(inside)),
        "engine_search_p50_ms": 1000 * statistics.median(inside),
        "vectors": m,
    }


def bench_mem0(work: str, texts: list[str], queries: list[str], singles: list[str],
               embed: Callable[[list[str]], list[list[float]]]) -> dict[str, Any]:
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = os.path.join(work, "mem0-home")
    from mem0 import Memory as Mem0Memory  # type: ignore[import-not-found]

    everything = texts + queries + singles
    vectors = embed(everything)
    lookup = dict(zip(everything, vectors))

    class Given:
        def embed(self, text: str, memory_action: Any = None) -> list[float]:
            return lookup[text]

        def embed_batch(self, batch: list[str], memory_action: Any = None) -> list[list[float]]:
            return [lookup[t] for t in batch]

    dim = len(vectors[0])
    m = Mem0Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "bench", "embedding_model_dims": dim,
            "path": os.path.join(work, "qdrant"), "on_disk": True}},
        "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": dim}},
        "llm": {"provider": "openai", "config": {"api_key": "unused"}},
        "history_db_path": os.path.join(work, "mem0-history.db"),
    })
    m.embedding_model = Given()
    ingest = timed(partial(load, m, texts))
    adds = [timed(partial(m.add, t, user_id="bench", infer=False)) for t in singles]
    search = partial(m.search, filters={"user_id": "bench"}, top_k=10, threshold=0.0)
    for q in queries[:10]:
        search(q)
    searches = [timed(partial(search, q)) for q in queries]
    return {"ingest_per_s": len(texts) / ingest, "add": summary(adds), "search": summary(searches)}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m memloop.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=10_000, help="memories stored first (10000)")
    p.add_argument("--queries", type=int, default=200, help="timed searches (200)")
    p.add_argument("--adds", type=int, default=100, help="timed single adds after the load (100)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--skip-mem0", action="store_true")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args()
    texts = corpus(a.size, a.seed)
    queries = questions(a.queries, a.seed)
    singles = [f"one more thing: {t}" for t in corpus(a.adds, a.seed + 2)]
    work = tempfile.mkdtemp(prefix="memloop-bench-")
    try:
        ml = bench_memloop(work, texts, queries, singles)
        memory = ml.pop("vectors")
        results: dict[str, Any] = {"memloop": ml, "size": a.size}
        if not a.skip_mem0:
            try:
                results["mem0"] = bench_mem0(work, texts, queries, singles, memory.embed)
            except ImportError as e:
                print(f"(Mem0 skipped: {e}; pip install mem0ai==2.2.1)")
        print(f"{a.size} memories, one user; p50 / p95 in ms")
        print("| store | ingest (memories/s) | add p50 | add p95 | search p50 | search p95 |")
        print("|---|---|---|---|---|---|")
        for name, r in results.items():
            if isinstance(r, dict):
                print(f"| {name} | {r['ingest_per_s']:.0f} | {r['add']['p50_ms']:.2f} | {r['add']['p95_ms']:.2f} "
                      f"| {r['search']['p50_ms']:.2f} | {r['search']['p95_ms']:.2f} |")
        if "mem0" in results:
            m0 = results["mem0"]
            print(f"Mem0 / memloop, p50: add {m0['add']['p50_ms'] / ml['add']['p50_ms']:.1f}x, "
                  f"search {m0['search']['p50_ms'] / ml['search']['p50_ms']:.1f}x "
                  "(Mem0 embeds nothing here; memloop embeds every text and query)")
        print(f"binding overhead over the engine call, search p50: {ml['binding_overhead_p50_us']:.0f} us "
              f"(engine {ml['engine_search_p50_ms']:.2f} ms)")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
