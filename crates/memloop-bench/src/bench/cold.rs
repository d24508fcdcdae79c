//! The cold-partition figure of `memloop bench` (`--cold-users N`): N
//! users of 100 memories each, the store reopened, then each user's first
//! search (which loads that user's partition: its keyword index and its
//! vectors) timed against a second, warm one. What a server pays the first
//! time a user comes back after a restart (`--cold-rounds R`: reopened
//! and searched R times, figures over all). With `--cold-users 10000` it is
//! also the million memories spread over 10,000 users: the import rate,
//! the reopen, single adds and deletes into loaded partitions, and the
//! memory held once every partition is loaded.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memloop::{Embedder, LocalEmbedder, Memory, NewMemory, SearchQuery};
use serde_json::{json, Value};

use super::stats::{f, percentile, vector_pool};
use crate::corpus::{mixed_vector, sentence, sentences, Rng};
use crate::output::{progress_bar, Output};
use crate::run_store::RunStore;

/// Memories of each user.
const PER_USER: usize = 100;

pub fn bench_cold(
    out: &Output,
    e: &Arc<LocalEmbedder>,
    (run, dir): (&RunStore, &Path),
    (users, rounds): (usize, usize),
) -> anyhow::Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let pool = vector_pool(e, 200)?;
    let mut rng = Rng::new(31);
    let scopes: Vec<_> = (0..users)
        .map(|u| run.scope(&format!("bench-cold-{u}")))
        .collect();
    let t = Instant::now();
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
    let import_rate = (users * PER_USER) as f64 / t.elapsed().as_secs_f64();
    let open = || Memory::with_embedder(dir, e.clone() as Arc<dyn Embedder>, run.options());
    let t = Instant::now();
    let mut memory = open()?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let qtexts = sentences(313, users);
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    // The figures are over every round: on a noisy machine one round's
    // median moved by a third from run to run.
    for round in 0..rounds.max(1) {
        if round > 0 {
            // Reopened, so every partition is cold again.
            drop(memory);
            memory = open()?;
        }
        for (u, scope) in scopes.iter().enumerate() {
            let q = SearchQuery::new(scope.clone(), qtexts[u].clone());
            let v = mixed_vector(&mut rng, &pool);
            for times in [&mut cold, &mut warm] {
                let t = Instant::now();
                memory.search_by_vector(&q, &v)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let resident_mb = super::stats::rss_mb();
    // Single durable writes into loaded partitions, spread over the users.
    let picks: Vec<usize> = (0..100).map(|_| rng.below(users)).collect();
    let mut added = Vec::with_capacity(picks.len());
    let (add_p50, add_p99) = super::stats::latency(picks.len(), |i| {
        let text = format!("{} (added {i})", sentence(&mut rng));
        let v = mixed_vector(&mut rng, &pool);
        let mut rec = memory
            .store()
            .insert(&scopes[picks[i]], vec![(NewMemory::text(text), v)])?;
        added.extend(rec.pop().map(|r| r.0.id));
        Ok(())
    })?;
    let (delete_p50, delete_p99) = super::stats::latency(added.len(), |i| {
        memory
            .store()
            .delete(&scopes[picks[i]].tenant, &added[i], None)?;
        Ok(())
    })?;
    for scope in &scopes {
        run.clean(&memory, scope)?;
    }
    cold.sort_by(f64::total_cmp);
    warm.sort_by(f64::total_cmp);
    Ok(json!({
        "users": users, "memories_per_user": PER_USER, "rounds": rounds.max(1),
        "import_per_s": import_rate, "open_ms": open_ms, "resident_all_loaded_mb": resident_mb,
        "add_p50_ms": add_p50, "add_p99_ms": add_p99,
        "delete_p50_ms": delete_p50, "delete_p99_ms": delete_p99,
        "first_search_p50_ms": percentile(&cold, 0.5), "first_search_p99_ms": percentile(&cold, 0.99),
        "warm_search_p50_ms": percentile(&warm, 0.5), "warm_search_p99_ms": percentile(&warm, 0.99),
    }))
}

pub fn print_cold(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "cold partitions: {} users of {} memories, store reopened (rounds: {})",
        v["users"], v["memories_per_user"], v["rounds"]
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
    println!(
        "  import {:.0} memories/s (a batch per user, vectors given), reopen {:.1} ms",
        f(v, "import_per_s"),
        f(v, "open_ms")
    );
    println!(
        "  single add (durable)  p50 {:>7.3} ms  p99 {:>7.3} ms",
        f(v, "add_p50_ms"),
        f(v, "add_p99_ms")
    );
    println!(
        "  delete                p50 {:>7.3} ms  p99 {:>7.3} ms",
        f(v, "delete_p50_ms"),
        f(v, "delete_p99_ms")
    );
    println!(
        "  resident with every partition loaded {:.0} MB (whole process)",
        f(v, "resident_all_loaded_mb")
    );
}
