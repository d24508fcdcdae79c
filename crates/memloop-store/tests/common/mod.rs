//! What the tests of seeded vectors share: a store of 32 dimensions,
//! a deterministic unit vector per seed, and a dense-only query.
#![allow(dead_code)]

use memloop_core::{EmbedderInfo, Scope};
use memloop_store::SearchQuery;

pub const DIMS: usize = 32;

pub fn info() -> EmbedderInfo {
    EmbedderInfo {
        model_id: "test-hash".into(),
        dimensions: DIMS,
    }
}

/// A deterministic unit vector per seed.
pub fn vector(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v: Vec<f32> = (0..DIMS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect();
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.iter().map(|a| a / norm).collect()
}

/// A query by vector alone, for the `k` best.
pub fn dense(scope: &Scope, k: usize) -> SearchQuery {
    let mut q = SearchQuery::new(scope.clone(), "");
    q.keyword_weight = 0.0;
    q.top_k = k;
    q
}
