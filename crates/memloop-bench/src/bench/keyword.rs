//! The keyword index alone (`memloop bench --keyword-docs N`): N memories
//! of the synthetic corpus, as the store's figures write them, in one BM25
//! index, searched for as many candidates as a hybrid search asks of it.
//! It is the keyword half of a search in one large scope without SQLite
//! or the vector index around it, and builds in seconds where the store
//! of a million takes minutes, so a change to the index can be timed in
//! one run against the binary before it.

use std::sync::{Arc, RwLock};
use std::time::Instant;

use memloop::text::Analyzer;
use memloop::{Scope, SearchQuery};
use memloop_longterm::keyword::{KeywordIndex, Reach};
use serde_json::{json, Value};

use super::stats::{f, latency};
use crate::corpus::{sentence, sentences, Rng};
use crate::output::{progress_bar, Output};

pub fn bench_keyword(out: &Output, n: usize, queries: usize) -> anyhow::Result<Value> {
    let analyzer = Analyzer::default();
    let mut rng = Rng::new(17);
    let mut index = KeywordIndex::default();
    let bar = progress_bar(out, n as u64, &format!("keyword index {n}"));
    let t = Instant::now();
    for i in 0..n {
        // As `memloop bench`'s store figures write their memories.
        let text = format!("{} (note {i})", sentence(&mut rng));
        let terms = analyzer.terms(&text);
        index.insert_terms(
            i as i64,
            terms.iter().map(String::as_str),
            [].into_iter(),
            0.0,
            None,
        );
        if i % 10_000 == 0 {
            bar.set_position(i as u64);
        }
    }
    let build_s = t.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let candidates = SearchQuery::new(Scope::user("bench"), "").candidates;
    let common: Vec<Vec<String>> = sentences(99, queries)
        .iter()
        .map(|q| analyzer.terms(q))
        .collect();
    // The same words with one memory's note number: a term in one
    // memory beside terms in a tenth of them, as a name or a number
    // beside common words is in real queries.
    let mut pick = Rng::new(23);
    let rare: Vec<Vec<String>> = sentences(99, queries)
        .iter()
        .map(|q| analyzer.terms(&format!("{q} note {}", pick.below(n.max(1)))))
        .collect();
    // Behind a lock, as the store keeps it, so a large index's walk is
    // shared with the helper thread as a store search shares it.
    let shared = Arc::new(RwLock::new(index));
    let reach: Arc<dyn Reach> = shared.clone();
    let index = shared
        .read()
        .map_err(|_| anyhow::anyhow!("the keyword index's lock was poisoned"))?;
    let mut found = 0;
    let mut time = |qterms: &[Vec<String>]| {
        latency(queries, |i| {
            let hits =
                index.search_beside(&qterms[i], candidates, None, Some(reach.clone()), || ());
            found += hits.0.len();
            Ok(())
        })
    };
    let (p50, p99) = time(&common)?;
    let (rare_p50, rare_p99) = time(&rare)?;
    Ok(
        json!({"docs": n, "candidates": candidates, "build_s": build_s,
        "search_p50_ms": p50, "search_p99_ms": p99,
        "rare_search_p50_ms": rare_p50, "rare_search_p99_ms": rare_p99, "hits": found}),
    )
}

pub fn print_keyword(out: &Output, v: &Value) {
    if out.json {
        return;
    }
    println!(
        "keyword index alone, {} memories, {} candidates a query",
        v["docs"], v["candidates"]
    );
    println!(
        "  build {:.1} s   search p50 {:.3} ms  p99 {:.3} ms",
        f(v, "build_s"),
        f(v, "search_p50_ms"),
        f(v, "search_p99_ms")
    );
    println!(
        "  with a note's number  p50 {:.3} ms  p99 {:.3} ms",
        f(v, "rare_search_p50_ms"),
        f(v, "rare_search_p99_ms")
    );
}
