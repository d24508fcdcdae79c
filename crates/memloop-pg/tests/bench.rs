//! Store-level figures for docs/benchmarks.md, both backends in one run:
//! `MEMLOOP_PG_BENCH_N=100000 cargo test --release -p memloop-pg --test bench -- --ignored --nocapture`.
//! Random unit vectors of 384 dimensions (the local model's size) and texts
//! from a 5,000-word vocabulary, all in one user's scope; search latency
//! excludes the query embedding (measured separately in docs/benchmarks.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "conformance/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::sync::Arc;
use std::time::Instant;

use memloop_core::{EmbedderInfo, NewMemory, Scope};
use memloop_longterm::{LongTermStore, SearchQuery};

const DIMS: usize = 384;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIMS)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
    fn text(&mut self) -> String {
        (0..8)
            .map(|_| format!("w{}", self.next() % 5000))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn run(name: &str, store: Arc<dyn LongTermStore>, n: usize) {
    let scope = Scope::user("bench");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let t = Instant::now();
    let mut left = n;
    while left > 0 {
        let k = left.min(500);
        let batch = (0..k)
            .map(|_| (NewMemory::text(rng.text()), rng.unit()))
            .collect();
        store.insert(&scope, batch).unwrap();
        left -= k;
    }
    let load = t.elapsed().as_secs_f64();
    let adds: Vec<f64> = (0..200)
        .map(|_| {
            let item = vec![(NewMemory::text(rng.text()), rng.unit())];
            let t = Instant::now();
            store.insert(&scope, item).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let mut searches = Vec::new();
    let mut recall = 0.0;
    let queries = 200;
    for _ in 0..queries {
        let q = SearchQuery::new(scope.clone(), rng.text());
        let v = rng.unit();
        let t = Instant::now();
        store.search(&q, &v).unwrap();
        searches.push(t.elapsed().as_secs_f64() * 1e3);
        // Recall of the vector signal alone against an exact scan.
        let dense = SearchQuery {
            keyword_weight: 0.0,
            ..q.clone()
        };
        let approx: Vec<String> = store
            .search(&dense, &v)
            .unwrap()
            .into_iter()
            .map(|h| h.record.id)
            .collect();
        let exact_q = SearchQuery {
            include_superseded: true,
            ..dense
        };
        let exact: Vec<String> = store
            .search(&exact_q, &v)
            .unwrap()
            .into_iter()
            .map(|h| h.record.id)
            .collect();
        recall += approx.iter().filter(|id| exact.contains(id)).count() as f64
            / exact.len().max(1) as f64;
    }
    println!(
        "{name}: n={n} load {load:.1}s ({:.0}/s) add p50 {:.2} ms p99 {:.2} ms; search p50 {:.2} ms p99 {:.2} ms; vector recall@10 {:.3}",
        n as f64 / load,
        pct(adds.clone(), 0.5),
        pct(adds, 0.99),
        pct(searches.clone(), 0.5),
        pct(searches, 0.99),
        recall / queries as f64
    );
}

#[test]
#[ignore]
fn bench_both_backends() {
    let n: usize = std::env::var("MEMLOOP_PG_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let info = EmbedderInfo {
        model_id: "bench".into(),
        dimensions: DIMS,
    };
    let dir = tempfile::tempdir().unwrap();
    let embedded = memloop_store::open(
        dir.path(),
        info.clone(),
        memloop_store::StoreOptions::default(),
    )
    .unwrap();
    run("embedded", embedded, n);
    let pg = backend::Pg::new();
    let store = memloop_pg::open(&pg.url, info, memloop_pg::PgOptions::default()).unwrap();
    run("postgres", store, n);
}
