//! The cold-partition figure of `memloop bench` (`--cold-users N`): N
//! users of 100 memories each, the store reopened, then each user's first
//! search (which loads that user's partition: its keyword index and its
//! vectors) timed against a second, warm one. What a server pays the first
//! time a user comes back after a restart.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memloop::{Embedder, Memory, MiniLmEmbedder, NewMemory, SearchQuery};
use serde_json::{json, Value};

use crate::bench::{f, percentile, vector_pool};
use crate::corpus::{mixed_vector, sentence, sentences, Rng};
use crate::output::{progress_bar, Output};
use crate::run_store::RunStore;

/// Memories of each user.
const PER_USER: usize = 100;

pub fn bench_cold(
    out: &Output,
    e: &Arc<MiniLmEmbedder>,
    (run, dir): (&RunStore, &Path),
    users: usize,
) -> anyhow::Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let pool = vector_pool(e, 200)?;
    let mut rng = Rng::new(31);
    let scopes: Vec<_> = (0..users)
        .map(|u| run.scope(&format!("bench-cold-{u}")))
        .collect();
    {
        let memory = Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, run.options())?;
        let bar = progress_bar(out, users as u64, "cold users");
        for (u, scope) in scopes.iter().enumerate() {
            let batch = (0..PER_USER)
                .map(|i| {
                    let text = format!("{} (user {u} note {i})", sentence(&mut rng));
                    (NewMemory::text(text), mixed_vector(&mut rng, &pool))
                })
                .collect();
            memory.store().insert(scope, batch)?;
            bar.set_position(u as u64 + 1);
        }
        bar.finish_and_clear();
    }
    let memory = Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, run.options())?;
    let qtexts = sentences(313, users);
    let (mut cold, mut warm) = (Vec::with_capacity(users), Vec::with_capacity(users));
    for (u, scope) in scopes.iter().enumerate() {
        let q = SearchQuery::new(scope.clone(), qtexts[u].clone());
        let v = mixed_vector(&mut rng, &pool);
        for times in [&mut cold, &mut warm] {
            let t = Instant::now();
            memory.search_by_vector(&q, &v)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    for scope in &scopes {
        run.clean(&memory, scope)?;
    }
    cold.sort_by(f64::total_cmp);
    warm.sort_by(f64::total_cmp);
    Ok(json!({
        "users": users, "memories_per_user": PER_USER,
        "first_search_p50_ms": percentile(&cold, 0.5), "first_search_p99_ms": percentile(&cold, 0.99),
        "warm_search_p50_ms": percentile(&warm, 0.5), "warm_search_p99_ms": percentile(&warm, 0.99),
    }))
}

pub fn print_cold(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "cold partitions: {} users of {} memories, store reopened",
        v["users"], v["memories_per_user"]
    );
    println!(
        "  first search (loads)  p50 {:>7.3} ms  p99 {:>7.3} ms  (no query embedding)",
        f(v, "first_search_p50_ms"),
        f(v, "first_search_p99_ms")
    );
    println!(
        "  second search         p50 {:>7.3} ms  p99 {:>7.3} ms",
        f(v, "warm_search_p50_ms"),
        f(v, "warm_search_p99_ms")
    );
}
