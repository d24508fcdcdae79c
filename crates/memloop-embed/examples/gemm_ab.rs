//! A/B of the matrix kernels in one process: one model per kernel this
//! machine runs, measured in interleaved rounds so that load from other
//! processes falls on all of them alike.
//!
//! cargo run --release -p memloop-embed --example gemm_ab -- CORPUS [ROUNDS]
//!
//! CORPUS: texts, one per line (`memloop bench --dump-corpus FILE` writes the
//! bench's). Prints, per round, batch-32 sentences/s and the p50 of one text,
//! then each kernel's medians and their ratio to the AVX-512 kernel.
//! `GEMM_AB_ONLY=amx` (or another kernel's name) runs that kernel alone, for
//! a profiler.

use std::time::Instant;

use memloop_core::Embedder;
use memloop_embed::{GemmPath, LocalEmbedder};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let corpus = args
        .next()
        .ok_or("usage: gemm_ab CORPUS [ROUNDS] (CORPUS: texts, one per line)")?;
    let rounds: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    let text = std::fs::read_to_string(&corpus)?;
    let texts: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if texts.is_empty() {
        return Err(format!("{corpus} holds no texts").into());
    }
    let dir = memloop_embed::locate_model_dir(None)?;
    let mut models = Vec::new();
    let only = std::env::var("GEMM_AB_ONLY").ok();
    for path in GemmPath::all_available() {
        if only.as_deref().is_some_and(|o| o != path.name()) {
            continue;
        }
        let mut m = LocalEmbedder::load_with_gemm(&dir, path)?;
        // GEMM_AB_THREADS caps the threads (default: every core).
        if let Some(t) = std::env::var("GEMM_AB_THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
        {
            m = m.with_threads(t);
        }
        m.embed_batch(&texts[..texts.len().min(64)])?; // warm-up
        models.push((path, m, Vec::new(), Vec::new()));
    }
    // GEMM_AB_SINGLES=0 times batches alone, GEMM_AB_BATCHES=0 single
    // texts alone (for a profiler).
    let batches = std::env::var_os("GEMM_AB_BATCHES").is_none_or(|v| v != "0");
    // GEMM_AB_BATCH sets the batch size (default 32, as a search's writes).
    let batch_size = std::env::var("GEMM_AB_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(32usize)
        .max(1);
    let singles = std::env::var("GEMM_AB_SINGLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
        .min(texts.len());
    for round in 0..rounds {
        for (path, model, batch, single) in &mut models {
            let t = Instant::now();
            for chunk in texts.chunks(batch_size).filter(|_| batches) {
                model.embed_batch(chunk)?;
            }
            // With batches off (GEMM_AB_BATCHES=0) there is no rate to give.
            let rate = if batches {
                texts.len() as f64 / t.elapsed().as_secs_f64()
            } else {
                0.0
            };
            let mut lat = Vec::with_capacity(singles);
            for t in &texts[..singles] {
                let s = Instant::now();
                model.embed(t)?;
                lat.push(s.elapsed().as_secs_f64() * 1e3);
            }
            let p50 = if lat.is_empty() { 0.0 } else { median(lat) };
            println!(
                "round {round} {:>8}: batch-32 {rate:7.1} sentences/s, one text p50 {p50:.2} ms",
                path.name()
            );
            batch.push(rate);
            single.push(p50);
        }
    }
    let base = models
        .iter()
        .find(|m| m.0 == GemmPath::Avx512)
        .map(|m| (median(m.2.clone()), median(m.3.clone())));
    println!("\nmedians over {rounds} rounds ({} texts):", texts.len());
    for (path, _, batch, single) in &models {
        let (b, s) = (median(batch.clone()), median(single.clone()));
        let ratio = base.map_or(String::new(), |(bb, bs)| {
            format!(
                "  (vs avx512: batch {:.2}x, one text {:.2}x the time)",
                b / bb,
                s / bs
            )
        });
        println!(
            "{:>8}: batch-32 {b:7.1} sentences/s, one text p50 {s:.2} ms{ratio}",
            path.name()
        );
    }
    Ok(())
}
