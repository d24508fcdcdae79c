//! `memloop bench`: speed figures on a deterministic synthetic corpus.
//! Every figure is measured in this run; compare ratios, not absolute numbers,
//! across machines.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use memloop::time::Clock;
use memloop::{
    Config, Durability, Embedder, ListQuery, LocalEmbedder, Memory, NewMemory, Scope, SearchQuery,
};
use memloop_embed::Coalescing;
use memloop_store::vector::{Flat, VectorIndex};
use serde_json::{json, Value};

use crate::corpus::{mixed_vector, sentences, Rng};
use crate::longcorpus::LONG_SEED;
use crate::output::{progress_bar, Output};
use crate::run_store::RunStore;
use stats::{f, latency, peak_rss_mb, percentile, rss_mb, vector_pool};

mod cold;
mod kernels;
mod keyword;
mod near;
mod stats;

/// The size `--large` measures: the store and the vector index alone.
const LARGE: usize = 1_000_000;

#[derive(Args)]
pub struct BenchArgs {
    /// Memories in the measured scope, one run per size (0: none).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    sizes: Vec<usize>,
    /// Also measure a store of 1,000,000 memories in one scope (unless
    /// `--sizes` has that size; its import takes minutes) and the vector
    /// index alone at 1,000,000 vectors.
    #[arg(long)]
    large: bool,
    /// Queries per latency figure.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Texts for the embedding figures, one per line (default: the synthetic corpus).
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// Write the embedding corpus to this file and exit (to time other embedders on the same text).
    #[arg(long)]
    dump_corpus: Option<PathBuf>,
    /// Skip the embedding figures.
    #[arg(long)]
    skip_embedding: bool,
    /// Commit durability for the store figures: full (fsync) or process.
    #[arg(long, default_value = "full")]
    durability: String,
    /// Where the benchmark stores live (default: a temporary directory, removed after).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Memories in the gc figure's scope, half of them expired (0: skip
    /// the figure).
    #[arg(long, default_value_t = 200_000)]
    gc_memories: usize,
    /// Which half expired: `interleaved` (every other memory, as when
    /// episodes with a TTL alternate with facts kept) or `oldest` (the
    /// first half written, as when everything has the same TTL).
    #[arg(long, default_value = "interleaved")]
    gc_layout: String,
    /// Save the store's indexes after the gc figure's import, as a store
    /// closed and opened again (or a server's earlier gc) has them: gc then
    /// saves only what it removed. Without it, gc also saves the import.
    #[arg(long)]
    gc_saved: bool,
    /// Users in the long-conversation figure (about 500 turns each,
    /// assistant replies of 1-3k characters; 0: skip the figure).
    #[arg(long, default_value_t = 2)]
    long_users: usize,
    /// Write the long-conversation dataset (`--long-users` users, in the
    /// eval format, for `memloop eval jsonl`) to this file and exit.
    #[arg(long)]
    write_long_jsonl: Option<PathBuf>,
    /// Users of 100 memories each in the cold-partition figure (each
    /// user's first search after a reopen; 0: skip it).
    #[arg(long, default_value_t = 200)]
    cold_users: usize,
    /// Times the cold-partition figure reopens the store and searches
    /// every user again (its percentiles are over all of them).
    #[arg(long, default_value_t = 1)]
    cold_rounds: usize,
    /// Near-duplicate chat memories (real embeddings) in the HNSW recall
    /// figure (0: skip it; 100000 embeds for about two minutes).
    #[arg(long, default_value_t = 0)]
    near_duplicates: usize,
    /// Memories in the keyword-index-alone figure (0: skip it; 1000000
    /// builds in under a minute).
    #[arg(long, default_value_t = 0)]
    keyword_docs: usize,
    /// Keep the near-duplicates' vectors in this file and reuse them.
    #[arg(long)]
    near_duplicates_vectors: Option<PathBuf>,
    /// Keep each size's store in `--work-dir` and, when a store of that
    /// size is there from an earlier run, measure only its searches
    /// (hybrid, dense, recall, with the query embedding) without
    /// importing again: to compare binaries on a million memories in
    /// about a minute a run rather than six. The embedded store only.
    #[arg(long, requires = "work_dir")]
    searches_only: bool,
    /// On PostgreSQL (`--store`), leave the run's memories in the database
    /// instead of purging them (the tenant is printed), to profile queries.
    #[arg(long)]
    keep: bool,
}

pub fn run(config: &Config, out: &Output, a: BenchArgs) -> anyhow::Result<()> {
    let texts = match &a.corpus {
        Some(p) => std::fs::read_to_string(p)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect(),
        None => sentences(1, 1024),
    };
    if let Some(path) = &a.dump_corpus {
        std::fs::write(path, texts.join("\n") + "\n")?;
        eprintln!("wrote {} sentences to {}", texts.len(), path.display());
        return Ok(());
    }
    if let Some(path) = &a.write_long_jsonl {
        let convs = crate::longcorpus::conversations(
            LONG_SEED,
            a.long_users.max(1),
            crate::longcorpus::TURNS,
            crate::longcorpus::QUESTIONS,
        );
        crate::eval::format::write_jsonl(path, &convs)?;
        eprintln!("wrote {} conversations to {}", convs.len(), path.display());
        return Ok(());
    }
    let durability = match a.durability.as_str() {
        "full" => Durability::Full,
        "process" => Durability::Process,
        other => anyhow::bail!("--durability {other:?}: use full or process"),
    };
    let t = Instant::now();
    let embedder = crate::local_model::load(config, "memloop bench")?;
    let mut report =
        json!({"model_load_ms": t.elapsed().as_secs_f64() * 1e3, "durability": a.durability});
    if !a.skip_embedding {
        report["embedding"] = bench_embedding(&embedder, &texts)?;
        print_embedding(out, &report["embedding"]);
        report["embedding_kernels"] = kernels::bench_kernels(config, &texts)?;
        kernels::print_kernels(out, &report["embedding_kernels"]);
    }
    let tmp;
    let work = match &a.work_dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("memloop-bench-")
                .tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    // The configured store (the data directory's kind, or PostgreSQL with
    // --store), in a tenant of the run's own.
    let mut run = RunStore::new(&config.store.clone().with_durability(durability), "bench");
    if a.keep {
        run = run.keeping();
    }
    report["store"] = json!(run.backend());
    if !out.json {
        println!("long-term store: {}", run.backend());
    }
    if a.searches_only && run.backend() != "embedded" {
        anyhow::bail!("--searches-only reuses an embedded store; leave out --store");
    }
    let mut stores = Vec::new();
    let mut sizes: Vec<usize> = a.sizes.iter().copied().filter(|&n| n > 0).collect();
    if a.large && !sizes.contains(&LARGE) {
        sizes.push(LARGE);
    }
    for &n in &sizes {
        let fig = bench_store(
            out,
            &embedder,
            (&run, &work.join(format!("store-{n}"))),
            (n, a.searches_only),
            a.queries,
        )?;
        print_store(out, n, &fig);
        stores.push(fig);
    }
    report["stores"] = Value::Array(stores);
    if a.gc_memories > 0 {
        let interleaved = match a.gc_layout.as_str() {
            "interleaved" => true,
            "oldest" => false,
            other => anyhow::bail!("--gc-layout {other:?}: use interleaved or oldest"),
        };
        let fig = bench_gc(
            out,
            &embedder,
            (&run, &work.join("store-gc")),
            (a.gc_memories, interleaved, a.gc_saved),
            a.queries,
        )?;
        print_gc(out, &fig);
        report["gc"] = fig;
    }
    if a.long_users > 0 {
        let fig = bench_long(
            out,
            &embedder,
            (&run, &work.join("store-long")),
            a.long_users,
        )?;
        print_long(out, &fig);
        report["long"] = fig;
    }
    if a.cold_users > 0 {
        let fig = cold::bench_cold(
            out,
            &embedder,
            (&run, &work.join("store-cold")),
            (a.cold_users, a.cold_rounds),
        )?;
        cold::print_cold(out, &fig);
        report["cold"] = fig;
    }
    if a.near_duplicates > 0 {
        let fig = near::bench_near_duplicates(
            out,
            &embedder,
            (&run, &work.join("store-near")),
            (a.near_duplicates, a.queries),
            a.near_duplicates_vectors.as_deref(),
        )?;
        near::print_near_duplicates(out, &fig);
        report["near_duplicates"] = fig;
    }
    if a.keyword_docs > 0 {
        let fig = keyword::bench_keyword(out, a.keyword_docs, a.queries)?;
        keyword::print_keyword(out, &fig);
        report["keyword_only"] = fig;
    }
    if a.large {
        let fig = bench_index_only(out, &embedder, LARGE, a.queries)?;
        print_index_only(out, &fig);
        report["index_only"] = fig;
    }
    report["peak_rss_mb"] = json!(peak_rss_mb());
    if out.json {
        out.json_value(&report)?;
    } else {
        println!("peak RSS: {:.0} MB", peak_rss_mb());
    }
    Ok(())
}

fn bench_embedding(e: &Arc<LocalEmbedder>, texts: &[String]) -> anyhow::Result<Value> {
    let strs: Vec<&str> = texts.iter().map(String::as_str).collect();
    e.embed_batch(&strs[..strs.len().min(64)])?; // warm-up
    let n = strs.len().min(200);
    let (p50, p99) = latency(n, |i| {
        e.embed(strs[i])?;
        Ok(())
    })?;
    let t = Instant::now();
    for chunk in strs.chunks(32) {
        e.embed_batch(chunk)?;
    }
    let batch_rate = strs.len() as f64 / t.elapsed().as_secs_f64();
    // What a server sees: 32 callers at once, one text each.
    let plain = concurrent_rate(e.clone() as Arc<dyn Embedder>, &strs)?;
    let coalesced = concurrent_rate(
        Arc::new(Coalescing::new(e.clone() as Arc<dyn Embedder>)),
        &strs,
    )?;
    Ok(
        json!({"model": e.info().model_id, "sentences": strs.len(), "single_p50_ms": p50, "single_p99_ms": p99,
        "single_per_s": 1e3 / p50, "batch32_per_s": batch_rate,
        "concurrent32_plain_per_s": plain, "concurrent32_coalesced_per_s": coalesced}),
    )
}

/// Texts per second when 32 threads each embed single texts from `texts`.
fn concurrent_rate(e: Arc<dyn Embedder>, texts: &[&str]) -> anyhow::Result<f64> {
    const THREADS: usize = 32;
    let per_thread = (texts.len() / THREADS).max(4);
    let t = Instant::now();
    let results: Vec<memloop::Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let e = e.clone();
                scope.spawn(move || {
                    for j in 0..per_thread {
                        e.embed(texts[(i * per_thread + j) % texts.len()])?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(memloop::Error::Internal("a bench thread panicked".into()))
                })
            })
            .collect()
    });
    for r in results {
        r?;
    }
    Ok((THREADS * per_thread) as f64 / t.elapsed().as_secs_f64())
}

fn print_embedding(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "embedding ({}, {} sentences)",
        v["model"].as_str().unwrap_or("?"),
        v["sentences"]
    );
    println!(
        "  single   p50 {:>7.2} ms   p99 {:>7.2} ms",
        f(v, "single_p50_ms"),
        f(v, "single_p99_ms")
    );
    println!("  batch32  {:>7.0} sentences/s", f(v, "batch32_per_s"));
    println!(
        "  32 callers, one text each: {:.0}/s plain, {:.0}/s coalesced",
        f(v, "concurrent32_plain_per_s"),
        f(v, "concurrent32_coalesced_per_s")
    );
}

/// The `i`-th memory `bench_store` imports, text and vector, drawn from
/// `rng`: the recall figure replays the same draws.
fn import_item(rng: &mut Rng, pool: &[Vec<f32>], i: usize) -> (String, Vec<f32>) {
    let text = format!("{} (note {i})", crate::corpus::sentence(rng));
    (text, mixed_vector(rng, pool))
}

/// The exact top 10 of each query among the `n` vectors `bench_store`'s
/// import wrote from `seed`, regenerated in one pass rather than kept
/// (1.5 GB at a million, which the peak RSS would count as the store's).
fn exact_top10_replayed(
    seed: u64,
    n: usize,
    pool: &[Vec<f32>],
    queries: &[Vec<f32>],
) -> Vec<Vec<i64>> {
    let mut rng = Rng::new(seed);
    let mut best: Vec<Vec<(f32, i64)>> = vec![Vec::with_capacity(11); queries.len()];
    for i in 0..n {
        let (_, v) = import_item(&mut rng, pool, i);
        for (q, b) in queries.iter().zip(&mut best) {
            let s: f32 = q.iter().zip(&v).map(|(x, y)| x * y).sum();
            if b.len() < 10 || b.last().is_some_and(|l| s > l.0) {
                let at = b.partition_point(|e| e.0 >= s);
                b.insert(at, (s, i as i64));
                b.truncate(10);
            }
        }
    }
    best.into_iter()
        .map(|b| b.into_iter().map(|e| e.1).collect())
        .collect()
}

fn exact_top10(vectors: &[(i64, Vec<f32>)], q: &[f32]) -> Vec<i64> {
    let mut flat = VectorIndex::Flat(Flat::new(q.len()));
    for (r, v) in vectors {
        let _ = flat.insert(*r, v);
    }
    flat.search(q, 10, None)
        .map(|h| h.into_iter().map(|x| x.row).collect())
        .unwrap_or_default()
}

fn bench_store(
    out: &Output,
    e: &Arc<LocalEmbedder>,
    (run, dir): (&RunStore, &std::path::Path),
    (n, searches_only): (usize, bool),
    queries: usize,
) -> anyhow::Result<Value> {
    // A scope per size: on a shared database each size starts empty too.
    let scope = run.scope(&format!("bench-user-{n}"));
    let import_scope = run.scope(&format!("bench-import-{n}"));
    let options = run.options();
    let pool = vector_pool(e, 1000)?;
    let seed = 42 + n as u64;
    let mut rng = Rng::new(seed);
    if searches_only && dir.exists() {
        let memory = Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, options.clone())?;
        let listed = ListQuery {
            scope: scope.clone(),
            ..ListQuery::default()
        };
        if memory.count(&listed)? >= n {
            // The queries drawn after the import's items, as below.
            for i in 0..n {
                import_item(&mut rng, &pool, i);
            }
            let (qvecs, qtexts) = draw_queries(&mut rng, &pool, queries);
            return search_figures(&memory, &scope, (seed, n, &pool), (&qvecs, &qtexts));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    let memory = Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, options.clone())?;
    // Bulk import with precomputed vectors: the store's own rate.
    let bar = progress_bar(out, n as u64, &format!("import {n}"));
    let t = Instant::now();
    let mut i = 0;
    while i < n {
        let m = (n - i).min(1000);
        let batch: Vec<(NewMemory, Vec<f32>)> = (0..m)
            .map(|j| {
                let (text, v) = import_item(&mut rng, &pool, i + j);
                (NewMemory::text(text), v)
            })
            .collect();
        memory.store().insert(&scope, batch)?;
        i += m;
        bar.set_position(i as u64);
    }
    let import_rate = n as f64 / t.elapsed().as_secs_f64();
    bar.finish_and_clear();
    // First search after the import: the import kept the index current.
    let (qvecs, qtexts) = draw_queries(&mut rng, &pool, queries);
    let t = Instant::now();
    memory.search_by_vector(
        &SearchQuery::new(scope.clone(), qtexts[0].clone()),
        &qvecs[0],
    )?;
    let index_build_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut fig = search_figures(&memory, &scope, (seed, n, &pool), (&qvecs, &qtexts))?;
    let add_texts = sentences(500 + n as u64, 100);
    let (add_p50, add_p99) = latency(add_texts.len(), |i| {
        memory.add(
            &scope,
            NewMemory::text(format!("{} (single {i})", add_texts[i])),
        )?;
        Ok(())
    })?;
    let e2e_texts = sentences(900 + n as u64, 2048);
    let t = Instant::now();
    for (c, chunk) in e2e_texts.chunks(256).enumerate() {
        let batch = chunk
            .iter()
            .enumerate()
            .map(|(j, s)| NewMemory::text(format!("{s} (bulk {c}-{j})")))
            .collect();
        memory.add_batch(&import_scope, batch)?;
    }
    let e2e_rate = e2e_texts.len() as f64 / t.elapsed().as_secs_f64();
    drop(memory);
    let t = Instant::now();
    let reopened = Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, options)?;
    reopened.search_by_vector(
        &SearchQuery::new(scope.clone(), qtexts[0].clone()),
        &qvecs[0],
    )?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let resident_mb = rss_mb();
    run.clean(&reopened, &scope)?;
    run.clean(&reopened, &import_scope)?;
    for (key, value) in [
        ("bulk_import_per_s", import_rate),
        ("bulk_import_with_embedding_per_s", e2e_rate),
        ("first_search_index_build_ms", index_build_ms),
        ("add_p50_ms", add_p50),
        ("add_p99_ms", add_p99),
        ("open_ready_ms", open_ms),
        ("resident_after_reopen_mb", resident_mb),
    ] {
        fig[key] = json!(value);
    }
    Ok(fig)
}

/// Queries for the store figures: random mixtures of the pool's vectors
/// (drawn after the import's items, from the same generator) and texts.
fn draw_queries(rng: &mut Rng, pool: &[Vec<f32>], queries: usize) -> (Vec<Vec<f32>>, Vec<String>) {
    let qvecs = (0..queries).map(|_| mixed_vector(rng, pool)).collect();
    (qvecs, sentences(99, queries))
}

/// The searches' figures on a store `bench_store` filled from `seed`:
/// hybrid and dense latency, the graph's recall@10 against exact, and
/// latency with the query embedding.
fn search_figures(
    memory: &Memory,
    scope: &Scope,
    (seed, n, pool): (u64, usize, &[Vec<f32>]),
    (qvecs, qtexts): (&[Vec<f32>], &[String]),
) -> anyhow::Result<Value> {
    let (hybrid_p50, hybrid_p99) = latency(qvecs.len(), |i| {
        memory.search_by_vector(
            &SearchQuery::new(scope.clone(), qtexts[i].clone()),
            &qvecs[i],
        )?;
        Ok(())
    })?;
    let mut dense = SearchQuery::new(scope.clone(), "");
    dense.keyword_weight = 0.0;
    let (dense_p50, dense_p99) = latency(qvecs.len(), |i| {
        memory.search_by_vector(&dense, &qvecs[i])?;
        Ok(())
    })?;
    // Recall@10 of the index against exact search; a hit's note number is its item.
    let note_of = |text: &str| {
        text.rsplit("(note ")
            .next()
            .and_then(|s| s.trim_end_matches(')').parse::<i64>().ok())
    };
    let recall_queries = qvecs.len().min(50);
    let exact = exact_top10_replayed(seed, n, pool, &qvecs[..recall_queries]);
    let mut found = 0usize;
    for (q, exact) in qvecs.iter().zip(&exact) {
        let hits = memory.search_by_vector(&dense, q)?;
        found += hits
            .iter()
            .filter_map(|h| note_of(&h.record.text))
            .filter(|r| exact.contains(r))
            .count();
    }
    let recall_at_10 = found as f64 / (recall_queries * 10) as f64;
    let (with_embed_p50, with_embed_p99) = latency(qvecs.len().min(100), |i| {
        memory.search(&SearchQuery::new(scope.clone(), qtexts[i].clone()))?;
        Ok(())
    })?;
    Ok(json!({
        "memories": n,
        "search_hybrid_p50_ms": hybrid_p50, "search_hybrid_p99_ms": hybrid_p99,
        "search_dense_p50_ms": dense_p50, "search_dense_p99_ms": dense_p99,
        "recall_at_10": recall_at_10,
        "search_with_embedding_p50_ms": with_embed_p50, "search_with_embedding_p99_ms": with_embed_p99,
    }))
}

fn print_store(out: &Output, n: usize, v: &Value) {
    if out.json {
        return;
    }
    println!("store with {n} memories in one user's scope");
    // A line only for figures the run has (`--searches-only` has the searches').
    let line = |key: &str, text: String| {
        if !v[key].is_null() {
            println!("{text}");
        }
    };
    line(
        "bulk_import_per_s",
        format!(
            "  bulk import           {:>9.0} memories/s (vectors given), {:.0}/s with embedding",
            f(v, "bulk_import_per_s"),
            f(v, "bulk_import_with_embedding_per_s")
        ),
    );
    line(
        "first_search_index_build_ms",
        format!(
            "  first search after import {:>5.1} ms",
            f(v, "first_search_index_build_ms")
        ),
    );
    println!(
        "  search hybrid         p50 {:>7.3} ms  p99 {:>7.3} ms  (no query embedding)",
        f(v, "search_hybrid_p50_ms"),
        f(v, "search_hybrid_p99_ms")
    );
    println!(
        "  search dense only     p50 {:>7.3} ms  p99 {:>7.3} ms  recall@10 {:.3}",
        f(v, "search_dense_p50_ms"),
        f(v, "search_dense_p99_ms"),
        f(v, "recall_at_10")
    );
    println!(
        "  search + embedding    p50 {:>7.3} ms  p99 {:>7.3} ms",
        f(v, "search_with_embedding_p50_ms"),
        f(v, "search_with_embedding_p99_ms")
    );
    line(
        "add_p50_ms",
        format!(
            "  single add (durable)  p50 {:>7.3} ms  p99 {:>7.3} ms",
            f(v, "add_p50_ms"),
            f(v, "add_p99_ms")
        ),
    );
    line(
        "open_ready_ms",
        format!("  reopen, ready         {:>9.1} ms", f(v, "open_ready_ms")),
    );
    line(
        "resident_after_reopen_mb",
        format!(
            "  resident after reopen {:>9.0} MB  (whole process: store, model, allocator's spare)",
            f(v, "resident_after_reopen_mb")
        ),
    );
}

/// `gc` deleting expired memories: `n` memories in one scope, half of
/// them past their TTL (every other one when `interleaved`, the hard
/// case: deleting them rewrites every page; else the older half), on a
/// manual clock. Measured in one run: hybrid search latency with the
/// expired memories present but invisible, then the same searches run
/// back to back while `gc` (expiry, saving the HNSW index, pruning the
/// log) runs on another thread, and gc's own time.
fn bench_gc(
    out: &Output,
    e: &Arc<LocalEmbedder>,
    (run, dir): (&RunStore, &std::path::Path),
    (n, interleaved, saved): (usize, bool, bool),
    queries: usize,
) -> anyhow::Result<Value> {
    const T0: i64 = 1_767_225_600_000;
    let _ = std::fs::remove_dir_all(dir);
    let clock = Clock::manual(T0);
    let memory = Memory::with_embedder(
        dir,
        e.clone() as Arc<dyn Embedder>,
        run.options().with_clock(clock.clone()),
    )?;
    let pool = vector_pool(e, 1000)?;
    let mut rng = Rng::new(4242 + n as u64);
    let scope = run.scope("bench-gc");
    let bar = progress_bar(out, n as u64, &format!("gc import {n}"));
    let mut i = 0;
    while i < n {
        let m = (n - i).min(1000);
        let batch: Vec<(NewMemory, Vec<f32>)> = (0..m)
            .map(|j| {
                let mut memory = NewMemory::text(format!(
                    "{} (note {})",
                    crate::corpus::sentence(&mut rng),
                    i + j
                ));
                let expired = if interleaved {
                    (i + j) % 2 == 0
                } else {
                    i + j < n / 2
                };
                if expired {
                    memory.expires_at = Some(T0 + 1);
                }
                (memory, mixed_vector(&mut rng, &pool))
            })
            .collect();
        memory.store().insert(&scope, batch)?;
        i += m;
        bar.set_position(i as u64);
    }
    bar.finish_and_clear();
    let qvecs: Vec<Vec<f32>> = (0..queries)
        .map(|_| mixed_vector(&mut rng, &pool))
        .collect();
    let qtexts = sentences(77, queries);
    let search = |i: usize| -> anyhow::Result<f64> {
        let t = Instant::now();
        let q = SearchQuery::new(scope.clone(), qtexts[i % queries].clone());
        memory.search_by_vector(&q, &qvecs[i % queries])?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    // Load and build the partition's indexes, then let half expire.
    search(0)?;
    if saved {
        memory.flush()?;
    }
    clock.advance(1)?;
    let mut before = (0..queries)
        .map(search)
        .collect::<anyhow::Result<Vec<_>>>()?;
    before.sort_by(f64::total_cmp);
    let (gc_result, during) = std::thread::scope(|s| {
        let gc = s.spawn(|| {
            let t = Instant::now();
            let cpu = thread_cpu_s();
            memory.gc().map(|r| {
                let cpu = thread_cpu_s()
                    .zip(cpu)
                    .map(|(after, before)| after - before);
                (r, t.elapsed().as_secs_f64(), cpu)
            })
        });
        let mut during = Vec::new();
        let mut i = 0;
        while !gc.is_finished() {
            match search(i) {
                Ok(ms) => during.push(ms),
                Err(e) => return (Err(e), during),
            }
            i += 1;
        }
        let r = gc
            .join()
            .unwrap_or_else(|_| Err(memloop::Error::Internal("the gc thread panicked".into())));
        (r.map_err(anyhow::Error::from), during)
    });
    let (report, gc_s, gc_cpu_s) = gc_result?;
    let mut during = during;
    during.sort_by(f64::total_cmp);
    let mut after = (0..queries)
        .map(search)
        .collect::<anyhow::Result<Vec<_>>>()?;
    after.sort_by(f64::total_cmp);
    let p99_before = percentile(&before, 0.99);
    let p99_during = percentile(&during, 0.99);
    run.clean(&memory, &scope)?;
    Ok(json!({
        "memories": n,
        "layout": if interleaved { "interleaved" } else { "oldest" },
        "saved_before": saved,
        "expired_deleted": report.expired_deleted,
        "gc_s": gc_s,
        "gc_cpu_s": gc_cpu_s,
        "search_p50_ms_before": percentile(&before, 0.5),
        "search_p99_ms_before": p99_before,
        "searches_during_gc": during.len(),
        "search_p50_ms_during": percentile(&during, 0.5),
        "search_p99_ms_during": p99_during,
        "search_max_ms_during": during.last().copied().unwrap_or(0.0),
        "search_p99_during_over_before": p99_during / p99_before,
        "search_p99_ms_after": percentile(&after, 0.99),
    }))
}

fn print_gc(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "gc of {} expired memories out of {} ({}{})",
        v["expired_deleted"],
        v["memories"],
        v["layout"].as_str().unwrap_or(""),
        if v["saved_before"] == true {
            ", indexes saved before"
        } else {
            ""
        }
    );
    println!(
        "  gc                    {:>9.2} s  (its thread on a core {:.2} s)",
        f(v, "gc_s"),
        f(v, "gc_cpu_s")
    );
    println!(
        "  search before gc      p50 {:>7.3} ms  p99 {:>7.3} ms",
        f(v, "search_p50_ms_before"),
        f(v, "search_p99_ms_before")
    );
    println!(
        "  search during gc      p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms  ({} searches; p99 {:.2}x before)",
        f(v, "search_p50_ms_during"),
        f(v, "search_p99_ms_during"),
        f(v, "search_max_ms_during"),
        v["searches_during_gc"],
        f(v, "search_p99_during_over_before")
    );
    println!(
        "  search after gc       p99 {:>7.3} ms",
        f(v, "search_p99_ms_after")
    );
}

/// Time the calling thread has spent on a core, in seconds (Linux's
/// scheduler statistics; None elsewhere). Less noisy than wall time on a
/// shared machine, whose other tenants take cores away at random.
fn thread_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Search on long conversations (crate::longcorpus): each user's turns
/// stored as the eval stores them (episodes with their neighbours as
/// keyword context, embedded by the model), then every question asked as
/// the eval asks it (top 50), timed without the query embedding.
fn bench_long(
    out: &Output,
    e: &Arc<LocalEmbedder>,
    (run, dir): (&RunStore, &std::path::Path),
    users: usize,
) -> anyhow::Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let convs = crate::longcorpus::conversations(
        LONG_SEED,
        users,
        crate::longcorpus::TURNS,
        crate::longcorpus::QUESTIONS,
    );
    let mut times = Vec::new();
    let mut turns = 0;
    let mut chars = 0;
    let t = Instant::now();
    for (i, conv) in convs.iter().enumerate() {
        let memory = crate::eval::ingest(
            out,
            &(e.clone() as Arc<dyn memloop::Embedder>),
            (run, &dir.join(format!("user-{i}")), None),
            conv,
            (crate::eval::EPISODE_CONTEXT_TURNS, 0.5),
            &mut 0,
        )?;
        for s in &conv.sessions {
            turns += s.turns.len();
            chars += s.turns.iter().map(|t| t.text.len()).sum::<usize>();
        }
        let vectors: Vec<Vec<f32>> = conv
            .questions
            .iter()
            .map(|q| e.embed_query(&q.question))
            .collect::<memloop::Result<_>>()?;
        // Warm: the first search loads the partition.
        let scope = run.scope(&conv.id);
        let mut q = SearchQuery::new(scope.clone(), "");
        q.top_k = 50;
        memory.search_by_vector(&q, &vectors[0])?;
        for _ in 0..3 {
            for (question, v) in conv.questions.iter().zip(&vectors) {
                q.text = question.question.clone();
                let t = Instant::now();
                memory.search_by_vector(&q, v)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        run.clean(&memory, &scope)?;
    }
    let ingest_s = t.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    Ok(json!({
        "users": users, "turns": turns, "mean_turn_chars": chars as f64 / turns.max(1) as f64,
        "searches": times.len(), "ingest_and_search_s": ingest_s,
        "search_top50_p50_ms": percentile(&times, 0.5),
        "search_top50_p99_ms": percentile(&times, 0.99),
    }))
}

fn print_long(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "long conversations: {} users, {} turns, {:.0} characters a turn",
        v["users"],
        v["turns"],
        f(v, "mean_turn_chars")
    );
    println!(
        "  search top 50         p50 {:>7.3} ms  p99 {:>7.3} ms  (no query embedding, {} searches)",
        f(v, "search_top50_p50_ms"),
        f(v, "search_top50_p99_ms"),
        v["searches"]
    );
}

fn bench_index_only(
    out: &Output,
    e: &LocalEmbedder,
    n: usize,
    queries: usize,
) -> anyhow::Result<Value> {
    let pool = vector_pool(e, 1000)?;
    let mut rng = Rng::new(1_000_003);
    let items: Vec<(i64, Vec<f32>)> = (0..n)
        .map(|i| (i as i64, mixed_vector(&mut rng, &pool)))
        .collect();
    let bar = progress_bar(out, n as u64, "hnsw 1M");
    let t = Instant::now();
    let index = VectorIndex::build_ann(pool[0].len(), &items, &|done, _| {
        bar.set_position(done as u64)
    })?;
    let build_s = t.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let qvecs: Vec<Vec<f32>> = (0..queries)
        .map(|_| mixed_vector(&mut rng, &pool))
        .collect();
    let (p50, p99) = latency(queries, |i| {
        index.search(&qvecs[i], 10, None)?;
        Ok(())
    })?;
    let mut found = 0;
    let rq = queries.min(20);
    for q in qvecs.iter().take(rq) {
        let exact = exact_top10(&items, q);
        let got = index.search(q, 10, None)?;
        found += got.iter().filter(|h| exact.contains(&h.row)).count();
    }
    Ok(
        json!({"vectors": n, "build_s": build_s, "search_p50_ms": p50, "search_p99_ms": p99,
        "recall_at_10": found as f64 / (rq * 10) as f64}),
    )
}

fn print_index_only(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!("vector index alone, {} vectors (HNSW, f16)", v["vectors"]);
    println!(
        "  build {:.1} s   search p50 {:.3} ms  p99 {:.3} ms  recall@10 {:.3}",
        f(v, "build_s"),
        f(v, "search_p50_ms"),
        f(v, "search_p99_ms"),
        f(v, "recall_at_10")
    );
}
