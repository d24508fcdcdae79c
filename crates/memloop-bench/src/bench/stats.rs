//! What every benchmark figure is computed with: percentiles and
//! latencies, the process's memory, a figure read back from its JSON, and
//! the pool of real embeddings the synthetic vectors mix.

use std::time::Instant;

use memloop::{Embedder, LocalEmbedder};
use serde_json::Value;

use crate::corpus::sentences;

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// p50 and p99 in milliseconds of `n` runs of `f`.
pub(crate) fn latency(
    n: usize,
    mut f: impl FnMut(usize) -> anyhow::Result<()>,
) -> anyhow::Result<(f64, f64)> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        f(i)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((percentile(&times, 0.5), percentile(&times, 0.99)))
}

pub(crate) fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

/// What the process holds in memory now.
pub(crate) fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

/// A size line of /proc/self/status, in MB.
fn status_mb(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(key)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

pub(crate) fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// A pool of real embeddings that the synthetic vectors mix.
pub(crate) fn vector_pool(e: &LocalEmbedder, n: usize) -> anyhow::Result<Vec<Vec<f32>>> {
    let texts = sentences(7, n);
    let strs: Vec<&str> = texts.iter().map(String::as_str).collect();
    Ok(e.embed_batch(&strs)?)
}
