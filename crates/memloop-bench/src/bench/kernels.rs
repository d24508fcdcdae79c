//! The embedder's matrix kernels side by side in `memloop bench`: one model
//! per kernel this machine runs (AMX, AVX-512, AVX2, portable), measured in
//! interleaved rounds so that load from other processes falls on all of
//! them alike, with each kernel's ratio to the AVX-512 one (to the portable
//! one on a CPU without AVX-512), and beside them the kernel the embedder
//! chose at load by timing one layer of each (`kernel_calibration`).

use std::time::Instant;

use memloop::{Config, Embedder};
use memloop_embed::GemmPath;
use serde_json::{json, Value};

use super::stats::{f, percentile};
use crate::output::Output;

const ROUNDS: usize = 3;
/// Texts timed one at a time per round.
const SINGLES: usize = 100;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

pub fn bench_kernels(config: &Config, texts: &[String]) -> anyhow::Result<Value> {
    let strs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut models = Vec::new();
    for path in GemmPath::all_available() {
        let m = crate::local_model::load_on(config, "memloop bench", Some(path))?;
        m.embed_batch(&strs[..strs.len().min(64)])?; // warm-up
        models.push((path, m, Vec::new(), Vec::new()));
    }
    for _ in 0..ROUNDS {
        for (_, model, batch, single) in &mut models {
            let t = Instant::now();
            for chunk in strs.chunks(32) {
                model.embed_batch(chunk)?;
            }
            batch.push(strs.len() as f64 / t.elapsed().as_secs_f64());
            let mut lat = Vec::with_capacity(SINGLES);
            for text in strs.iter().take(SINGLES) {
                let t = Instant::now();
                model.embed(text)?;
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
            single.push(median(lat));
        }
    }
    let figures: Vec<(GemmPath, f64, f64)> = models
        .into_iter()
        .map(|(p, _, b, s)| (p, median(b), median(s)))
        .collect();
    let base = [GemmPath::Avx512, GemmPath::Portable]
        .into_iter()
        .find_map(|want| figures.iter().find(|k| k.0 == want).copied());
    let kernels: Vec<Value> = figures
        .iter()
        .map(|&(p, b, s)| {
            let mut v = json!({"kernel": p.name(), "batch32_per_s": b, "single_p50_ms": s});
            if let Some((_, bb, bs)) = base {
                v["batch32_vs_base"] = json!(b / bb);
                v["single_vs_base"] = json!(s / bs);
            }
            v
        })
        .collect();
    let (dir, _) = crate::local_model::locate(config, "memloop bench")?;
    let calibration = memloop_embed::kernel_calibration(&dir);
    let timed: Vec<Value> = calibration
        .timings
        .iter()
        .map(|t| {
            json!({
                "kernel": t.path.name(),
                "query_layer_us": t.query.as_secs_f64() * 1e6,
                "batch_layer_us": t.batch.as_secs_f64() * 1e6,
            })
        })
        .collect();
    Ok(json!({
        "chosen_at_load": calibration.chosen.name(),
        "fixed_order_pick": calibration.incumbent.name(),
        "calibration": timed,
        "calibration_ms": calibration.took.as_secs_f64() * 1e3,
        "rounds": ROUNDS,
        "sentences": strs.len(),
        "base": base.map(|b| b.0.name()),
        "kernels": kernels
    }))
}

pub fn print_kernels(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "matrix kernels, interleaved ({} rounds, medians; ratios to {})",
        v["rounds"],
        v["base"].as_str().unwrap_or("none")
    );
    for k in v["kernels"].as_array().into_iter().flatten() {
        let ratio = |key: &str| {
            k[key]
                .as_f64()
                .map_or(String::new(), |r| format!(" ({r:.2}x)"))
        };
        println!(
            "  {:<9} batch32 {:>7.0} sentences/s{:<9}  one text p50 {:>6.2} ms{}",
            k["kernel"].as_str().unwrap_or("?"),
            f(k, "batch32_per_s"),
            ratio("batch32_vs_base"),
            f(k, "single_p50_ms"),
            ratio("single_vs_base")
        );
    }
    println!(
        "  chosen at load: {} (the fixed order's pick: {}); one layer timed per kernel in {:.0} ms:",
        v["chosen_at_load"].as_str().unwrap_or("?"),
        v["fixed_order_pick"].as_str().unwrap_or("?"),
        f(v, "calibration_ms")
    );
    for t in v["calibration"].as_array().into_iter().flatten() {
        println!(
            "    {:<10} query rows {:>8.1} µs   batch rows {:>8.1} µs",
            t["kernel"].as_str().unwrap_or("?"),
            f(t, "query_layer_us"),
            f(t, "batch_layer_us")
        );
    }
    if !v["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|k| k["kernel"] == "amx")
    {
        println!("  (no amx: this CPU or kernel does not offer AMX tiles)");
    }
}
