"""memloop against the stores a user would pick instead, in one run.

Same corpus, same vectors, same queries, same k for every store:
  1. a synthetic chat-like corpus and questions (corpus.py, fixed seeds);
  2. vectors for both from memloop's own MiniLM embedder (`memloop add` into
     a scratch store, then `memloop export --vectors`), so every store indexes
     the identical float32 vectors;
  3. each store ingests the corpus with vectors given, then answers every
     query; rounds visit the stores in rotating order so that the machine's
     noise falls on all of them alike;
  4. recall@10 against an exact brute-force search over the same vectors
     (numpy), and ratios to memloop measured in the same run.

Run it through run.sh (it makes the venv). See README.md beside this file.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import corpus
import stores
from stores import K, Skip

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


# ---------------------------------------------------------------- vectors

def read_export(path):
    """(ids, texts, vectors) of the memories in a `memloop export --vectors` file."""
    ids, texts, vecs = [], [], []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "memory":
                ids.append(rec["id"])
                texts.append(rec["memory"])
                vecs.append(rec["vector"])
    return ids, texts, np.asarray(vecs, dtype=np.float32)


def embed_with_memloop(binary, work, texts, qtexts):
    """Embed corpus and queries with memloop's model; cached in `work` by content.

    Returns the corpus export file (what memloop itself will import), the
    memloop ids and vectors in corpus order, and the query vectors.
    """
    work.mkdir(parents=True, exist_ok=True)
    key = work / "texts.json"
    cexp, qexp = work / "corpus.jsonl", work / "queries.jsonl"
    fresh = not (key.exists() and cexp.exists() and qexp.exists()
                 and json.loads(key.read_text()) == {"corpus": texts, "queries": qtexts})
    if fresh:
        print(f"embedding {len(texts):,} memories and {len(qtexts)} queries with memloop ...", flush=True)
        store = work / "scratch"
        shutil.rmtree(store, ignore_errors=True)
        for user, items, out in (("peers", texts, cexp), ("peers-queries", qtexts, qexp)):
            lst = work / f"{user}.txt"
            lst.write_text("\n".join(items) + "\n")
            t = time.perf_counter()
            sh([binary, "--data-dir", str(store), "add", "--user", user, "--file", str(lst)],
               stdout=subprocess.DEVNULL)
            print(f"  {user}: {len(items):,} embedded in {time.perf_counter() - t:.1f} s", flush=True)
            with open(out, "w") as f:
                sh([binary, "--data-dir", str(store), "export", "--vectors", "--user", user], stdout=f)
        shutil.rmtree(store, ignore_errors=True)
        key.write_text(json.dumps({"corpus": texts, "queries": qtexts}))
    else:
        print(f"reusing the vectors in {work}", flush=True)

    ids, etexts, evecs = read_export(cexp)
    pos = {t: i for i, t in enumerate(etexts)}
    order = [pos[t] for t in texts]  # the export is in id order; put it in corpus order
    _, qt, qv = read_export(qexp)
    qpos = {t: i for i, t in enumerate(qt)}
    return cexp, [ids[i] for i in order], evecs[order], qv[[qpos[t] for t in qtexts]]


# ---------------------------------------------------------------- figures

def exact_threshold(C, Q):
    """Each query's 10th best cosine over the corpus, by brute force."""
    Cn = C / np.linalg.norm(C, axis=1, keepdims=True)
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    S = Qn @ Cn.T
    return S, np.partition(S, -K, axis=1)[:, -K]


def recall_at_k(S, thr, hits):
    """Hits at least as similar as the exact 10th count (ties in the corpus
    would otherwise make an exact answer look wrong), over k per query."""
    found = sum(int(np.sum(S[qi, h[:K]] >= thr[qi] - 1e-5)) for qi, h in enumerate(hits) if h)
    return found / (K * len(hits))


def percentiles(lat, nq):
    """p50 and p99 in ms over the queries of each query's median over the
    rounds. The median drops a round that another process on the machine
    interrupted; what is left of the spread is the queries' own (some cost
    more than others). The same statistic for every store."""
    per_query = np.median(np.asarray(lat).reshape(-1, nq), axis=0) * 1e3
    return float(np.percentile(per_query, 50)), float(np.percentile(per_query, 99))


def raw_percentiles(lat):
    """The same over every sample, machine noise included (JSON only)."""
    return float(np.percentile(np.asarray(lat) * 1e3, 50)), float(np.percentile(np.asarray(lat) * 1e3, 99))


def memloop_bench(binary, size):
    """memloop's own in-process figures at the same size (its own corpus and
    vectors: the only way to time its dense-only search without HTTP and
    without the query embedding, which the CLI and REST API cannot skip)."""
    r = sh([binary, "--json", "bench", "--sizes", str(size), "--skip-embedding", "--gc-memories", "0",
            "--long-users", "0", "--cold-users", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return json.loads(r.stdout)["stores"][0]


# ---------------------------------------------------------------- report

def fmt(x, nd=2):
    if x is None or x != x:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{nd}f}"


def ratio(a, b):
    # An estimate at or below zero is noise (tiny corpora, few rounds): no ratio.
    if not a or not b or a != a or b != b or a <= 0 or b <= 0:
        return "–"
    return f"{a / b:.1f}×" if a / b >= 10 else f"{a / b:.2f}×"


def report(res, args, machine):
    L = []
    P = L.append
    P(f"{args.size:,} memories (one user), {args.queries} queries × {args.rounds} rounds, k = {K}, "
      f"{stores.DIM}-d vectors from memloop's all-MiniLM-L6-v2, identical for every store")
    P(f"machine: {machine}")
    P("")
    m = res.get("memloop")
    m = m if m and "skipped" not in m else None
    base = m["est"] if m else None
    P("Ingest, vectors given (each store's own bulk path, default durability):")
    P("")
    P("| store | ingest /s | memloop ÷ store |")
    P("|---|---|---|")
    for name, r in res.items():
        if "skipped" in r:
            continue
        P(f"| {name} | {fmt(r['ingest_per_s'])} | {ratio(m['ingest_per_s'], r['ingest_per_s']) if m else '–'} |")
    if m and "bench" in m:
        P(f"| memloop bench, store insert path (reference: its own corpus and vectors) | "
          f"{fmt(m['bench']['bulk_import_per_s'])} | |")
    P("")
    P(f"Search, top {K}; p50 / p99 over the queries of each query's median over the rounds:")
    P("")
    P("| store | what one query includes | p50 ms | p99 ms | recall@10 vs exact | p50 ÷ memloop | p99 ÷ memloop |")
    P("|---|---|---|---|---|---|---|")
    if m:
        P(f"| memloop, REST | HTTP + query embedding + hybrid search | {fmt(m['p50'])} | {fmt(m['p99'])} | "
          f"{fmt(m['recall'], 3)} (hybrid ranking) | | |")
        P(f"| memloop, REST, a 1-memory user | HTTP + query embedding | {fmt(m['one_p50'])} | {fmt(m['one_p99'])} | | | |")
        P(f"| **memloop, search alone (estimate)** | the two above, per query, subtracted | "
          f"**{fmt(base['p50'])}** | **{fmt(base['p99'])}** | | 1.00× | 1.00× |")
        if "bench" in m:
            b = m["bench"]
            P(f"| memloop bench, in process (reference) | dense search by vector, its own {args.size:,}-memory corpus | "
              f"{fmt(b['search_dense_p50_ms'])} | {fmt(b['search_dense_p99_ms'])} | {fmt(b['recall_at_10'], 3)} | | |")
            P(f"| memloop bench, in process (reference) | hybrid search by vector, same | "
              f"{fmt(b['search_hybrid_p50_ms'])} | {fmt(b['search_hybrid_p99_ms'])} | | | |")
    for name, r in res.items():
        if name == "memloop" or "skipped" in r:
            continue
        P(f"| {name} | {r['query_kind']} | {fmt(r['p50'])} | {fmt(r['p99'])} | {fmt(r['recall'], 3)} | "
          f"{ratio(r['p50'], base['p50']) if base else '–'} | {ratio(r['p99'], base['p99']) if base else '–'} |")
    if base and min(base["p50"], base["p99"]) <= 0:
        P("")
        P("memloop's estimate is within the noise of the query embedding here: "
          "rerun with more --rounds, a larger --size or on a quieter machine.")
    P("")
    P("What each store ran:")
    for name, r in res.items():
        P(f"- {name}: {r.get('skipped') and 'SKIPPED: ' + r['skipped'] or r['includes']}")
    return "\n".join(L)


# ---------------------------------------------------------------- main

def find_memloop(arg):
    for c in (arg, os.environ.get("MEMLOOP_BIN"), shutil.which("memloop"),
              str(REPO / "target" / "release" / "memloop")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000, help="memories in the corpus (default 10,000)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="timed passes over the queries per store")
    ap.add_argument("--warmup", type=int, default=10, help="untimed queries per store first")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--memloop", help="memloop binary (default: $MEMLOOP_BIN, PATH, target/release)")
    ap.add_argument("--work", default="/tmp/memloop-peers-work", help="where stores and cached vectors live")
    ap.add_argument("--only", help="comma-separated store names to run (substring match), memloop always")
    ap.add_argument("--skip", help="comma-separated store names not to run (substring match), e.g. qdrant,mem0")
    ap.add_argument("--no-memloop-bench", action="store_true", help="skip the in-process reference row")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    args = ap.parse_args()

    binary = find_memloop(args.memloop)
    if not binary:
        sys.exit("no memloop binary: pass --memloop PATH (cargo build --release builds target/release/memloop)")
    model = REPO / "models" / "all-MiniLM-L6-v2"
    if "MEMLOOP_MODEL_DIR" not in os.environ and model.is_dir():
        os.environ["MEMLOOP_MODEL_DIR"] = str(model)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # Chroma: no network calls

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor()) if os.path.exists("/proc/cpuinfo") else platform.processor()
    machine = f"{os.cpu_count()} cores, {cpu}; Python {platform.python_version()}; {binary}"
    load0 = os.getloadavg()[0]

    work = Path(args.work)
    texts = corpus.memories(args.size, args.seed)
    qtexts = corpus.queries(args.queries, args.seed + 1)
    export, ids, C, Q = embed_with_memloop(binary, work / f"vectors-{args.size}-{args.seed}", texts, qtexts)
    S, thr = exact_threshold(C, Q)

    ml = stores.Memloop(binary, str(export), {i: n for n, i in enumerate(ids)})
    todo = [ml, stores.Chroma(), stores.LanceDB(index=False), stores.LanceDB(index=True),
            stores.SqliteVec(), stores.QdrantLocal(), stores.Mem0(qtexts, Q.tolist())]
    names = [s.name for s in todo]  # the report's order
    if args.only:
        want = [w.strip().lower() for w in args.only.split(",")]
        todo = [s for s in todo if s is ml or any(w in s.name.lower() for w in want)]
    res, live = {}, []
    if args.skip:
        drop = [w.strip().lower() for w in args.skip.split(",")]
        for s in [s for s in todo if s is not ml and any(w in s.name.lower() for w in drop)]:
            res[s.name] = {"skipped": "not run (--skip)"}
            todo.remove(s)

    for i, st in enumerate(todo):
        print(f"ingest: {st.name} ...", flush=True)
        try:
            st.open(str(work / "stores" / f"{i}"))
            t = time.perf_counter()
            st.ingest(texts, C)
            dt = time.perf_counter() - t
            if st is ml:
                ml.serve(str(work / "memloop-serve.log"))
            res[st.name] = {"includes": st.includes, "query_kind": st.query_kind, "ingest_per_s": len(texts) / dt, "lat": [], "hits": None}
            live.append(st)
            print(f"  {len(texts) / dt:,.0f} /s", flush=True)
        except Skip as e:
            res[st.name] = {"skipped": str(e)}
            print(f"  skipped: {e}", flush=True)
            st.close()
        except Exception as e:  # a peer that fails here is reported, not hidden
            res[st.name] = {"skipped": f"failed: {type(e).__name__}: {e}"}
            print(f"  failed: {type(e).__name__}: {e}", flush=True)
            st.close()
    one = []  # memloop's 1-memory user, paired with each memloop query
    nq = len(qtexts)

    try:
        for st in live:  # untimed: first searches load indexes, caches warm
            for qi in range(min(args.warmup, len(qtexts))):
                st.query(qi, qtexts[qi], Q[qi])
                if st is ml:
                    ml.query_one(qtexts[qi])
        for rnd in range(args.rounds):
            print(f"round {rnd + 1}/{args.rounds}", flush=True)
            order = live[rnd % len(live):] + live[:rnd % len(live)]
            for st in order:
                r = res[st.name]
                hits = []
                if st is ml:
                    ml.reconnect()
                for qi in range(len(qtexts)):
                    if st is ml and (qi + rnd) % 2:  # alternate which of the pair runs first
                        t = time.perf_counter(); ml.query_one(qtexts[qi]); one.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    h = st.query(qi, qtexts[qi], Q[qi])
                    r["lat"].append(time.perf_counter() - t)
                    if st is ml and not (qi + rnd) % 2:
                        t = time.perf_counter(); ml.query_one(qtexts[qi]); one.append(time.perf_counter() - t)
                    hits.append(h)
                if r["hits"] is None:
                    r["hits"] = hits
    finally:
        for st in live:
            st.close()

    m = res.get(ml.name)
    if m and "skipped" not in m:
        # The pair was timed query by query in the same order: subtracting per
        # query removes HTTP and the query embedding, both paid alike.
        diff = np.asarray(m["lat"]) - np.asarray(one)
        m["one_p50"], m["one_p99"] = percentiles(one, nq)
        p50, p99 = percentiles(diff, nq)
        m["est"] = {"p50": p50, "p99": p99}
    for name, r in res.items():
        if "skipped" in r:
            continue
        r["p50"], r["p99"] = percentiles(r["lat"], nq)
        r["raw_p50"], r["raw_p99"] = raw_percentiles(r["lat"])
        r["recall"] = recall_at_k(S, thr, r["hits"])
        del r["lat"], r["hits"]
    if m and "skipped" not in m and not args.no_memloop_bench:
        print("memloop bench (in-process reference) ...", flush=True)
        try:
            m["bench"] = memloop_bench(binary, args.size)
        except (subprocess.CalledProcessError, KeyError, ValueError) as e:
            print(f"  failed: {e}", flush=True)

    res = {n: res[n] for n in names if n in res}
    # Other work on the machine moves every figure: say how busy it was.
    machine += f"; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    text = report(res, args, machine)
    print("\n" + text)
    if args.json:
        Path(args.json).write_text(json.dumps({"size": args.size, "queries": args.queries, "rounds": args.rounds,
                                               "k": K, "machine": machine, "stores": res}, indent=2))


if __name__ == "__main__":
    main()
