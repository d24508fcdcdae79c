//! The near-duplicate figure of `memloop bench` (`--near-duplicates N`):
//! N chat memories from the corpus's templates, each with a note number of
//! its own, so that thousands share all but a few words; embedded by the
//! model (real vectors, not mixtures), written through the store's insert
//! path in import batches, then searched dense-only and compared with an
//! exact scan of the same vectors. This is where an HNSW graph loses
//! recall: neighbourhoods are dense and nearly equidistant.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memloop::{Embedder, LocalEmbedder, Memory, NewMemory, SearchQuery};
use memloop_store::vector::dot;
use serde_json::{json, Value};

use super::stats::{f, latency};
use crate::corpus::{sentence, sentences, Rng};
use crate::output::{progress_bar, Output};
use crate::run_store::RunStore;

/// The memories' texts: the same for every run.
fn texts(n: usize) -> Vec<String> {
    let mut rng = Rng::new(4242);
    (0..n)
        .map(|i| format!("{} (note {i})", sentence(&mut rng)))
        .collect()
}

/// The texts' vectors: read from `cache` when it holds exactly them
/// (n × dims little-endian f32), else embedded (and written there).
fn vectors(
    out: &Output,
    e: &LocalEmbedder,
    texts: &[String],
    cache: Option<&Path>,
) -> anyhow::Result<Vec<Vec<f32>>> {
    let dims = e.info().dimensions;
    if let Some(bytes) = cache.and_then(|p| std::fs::read(p).ok()) {
        if bytes.len() == texts.len() * dims * 4 {
            return Ok(bytes
                .chunks_exact(dims * 4)
                .map(|v| {
                    v.chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect()
                })
                .collect());
        }
    }
    let bar = progress_bar(out, texts.len() as u64, "embed near-dups");
    let mut all = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(256) {
        let strs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        all.extend(e.embed_batch(&strs)?);
        bar.set_position(all.len() as u64);
    }
    bar.finish_and_clear();
    if let Some(p) = cache {
        let bytes: Vec<u8> = all.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(p, bytes)?;
    }
    Ok(all)
}

/// The 10th best exact similarity to `q`: a hit at least this similar is
/// a right answer (ties among near-duplicates make any of them right).
fn tenth_best(all: &[Vec<f32>], q: &[f32]) -> f32 {
    let mut top = [f32::NEG_INFINITY; 10];
    for v in all {
        let s = dot(q, v);
        if s > top[9] {
            top[9] = s;
            top.sort_by(|a, b| b.total_cmp(a));
        }
    }
    top[9]
}

pub fn bench_near_duplicates(
    out: &Output,
    e: &Arc<LocalEmbedder>,
    (run, dir): (&RunStore, &Path),
    (n, queries): (usize, usize),
    cache: Option<&Path>,
) -> anyhow::Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let texts = texts(n);
    let vecs = vectors(out, e, &texts, cache)?;
    let memory = Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, run.options())?;
    let scope = run.scope("bench-near-duplicates");
    let bar = progress_bar(out, n as u64, "import near-dups");
    let t = Instant::now();
    for (c, (tchunk, vchunk)) in texts.chunks(1000).zip(vecs.chunks(1000)).enumerate() {
        let batch = tchunk
            .iter()
            .zip(vchunk)
            .map(|(t, v)| (NewMemory::text(t.clone()), v.clone()))
            .collect();
        memory.store().insert(&scope, batch)?;
        bar.set_position(((c + 1) * 1000).min(n) as u64);
    }
    let import_rate = n as f64 / t.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let qtexts = sentences(77, queries);
    let strs: Vec<&str> = qtexts.iter().map(String::as_str).collect();
    let qvecs = e.embed_batch(&strs)?;
    let mut dense = SearchQuery::new(scope.clone(), "");
    dense.keyword_weight = 0.0;
    dense.top_k = 10;
    let note_of = |text: &str| {
        text.rsplit("(note ")
            .next()
            .and_then(|s| s.trim_end_matches(')').parse::<usize>().ok())
    };
    // The store's search (100 graph candidates, as every search asks) and
    // the graph asked for 10 only, as an index alone would be.
    let mut narrow = dense.clone();
    narrow.candidates = 10;
    let bars: Vec<f32> = qvecs.iter().map(|q| tenth_best(&vecs, q) - 1e-5).collect();
    let recall = |query: &SearchQuery| -> anyhow::Result<f64> {
        let mut right = 0usize;
        for (q, bar_at) in qvecs.iter().zip(&bars) {
            let hits = memory.search_by_vector(query, q)?;
            right += hits
                .iter()
                .filter_map(|h| note_of(&h.record.text))
                .filter(|&i| i < vecs.len() && dot(q, &vecs[i]) >= *bar_at)
                .count();
        }
        Ok(right as f64 / (qvecs.len() * 10) as f64)
    };
    let (recall, recall_narrow) = (recall(&dense)?, recall(&narrow)?);
    let (p50, p99) = latency(qvecs.len(), |i| {
        memory.search_by_vector(&dense, &qvecs[i])?;
        Ok(())
    })?;
    run.clean(&memory, &scope)?;
    Ok(json!({
        "memories": n, "queries": qvecs.len(), "import_per_s": import_rate,
        "recall_at_10": recall, "recall_at_10_of_10_candidates": recall_narrow,
        "search_dense_p50_ms": p50, "search_dense_p99_ms": p99,
    }))
}

pub fn print_near_duplicates(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "near-duplicate chat memories: {} in one scope (real embeddings)",
        v["memories"]
    );
    println!(
        "  import                {:>9.0} memories/s (vectors given)",
        f(v, "import_per_s")
    );
    println!(
        "  search dense only     p50 {:>7.3} ms  p99 {:>7.3} ms  recall@10 {:.3} (ties count)",
        f(v, "search_dense_p50_ms"),
        f(v, "search_dense_p99_ms"),
        f(v, "recall_at_10")
    );
    println!(
        "  the graph asked for 10 candidates only: recall@10 {:.3}",
        f(v, "recall_at_10_of_10_candidates")
    );
}
