//! `memloop demo`: a scripted run on the embedded default. Stores a few
//! memories for two users, searches each user's memories, and shows that a
//! user never sees the other's. Runs in the "demo" tenant of the data
//! directory, which it clears first, so it never touches your own memories.

use std::time::Instant;

use memloop::{Config, Memory, NewMemory, Scope, SearchQuery};

use crate::output::Output;

const ALICE: &[&str] = &[
    "I'm vegetarian and allergic to peanuts",
    "My daughter Emma starts school in September",
    "I always book a window seat when I fly",
    "I work night shifts as a nurse at the city hospital",
    "My favourite programming language is Rust",
];
const BOB: &[&str] = &[
    "Bob lives in Berlin and goes to techno clubs on weekends",
    "Bob is training for the Berlin marathon in April",
    "Bob drinks his coffee black, no sugar",
];
const QUERIES: &[(&str, &str)] = &[
    ("alice", "what should I cook for dinner tonight?"),
    ("alice", "which seat should I pick on the plane?"),
    ("alice", "when am I usually at work?"),
    ("bob", "what sport is he preparing for?"),
    ("bob", "does he have any food allergies?"),
];

pub fn run(config: &Config, out: &Output) -> anyhow::Result<()> {
    let t = Instant::now();
    let memory = Memory::open_with(config)?;
    let scope = |user: &str| Scope::user(user).with_tenant("demo");
    let (mut added, mut searches) = (Vec::new(), Vec::new());
    for (user, texts) in [("alice", ALICE), ("bob", BOB)] {
        memory.forget(&scope(user), true)?;
        let t = Instant::now();
        let written = memory.add_batch(
            &scope(user),
            texts.iter().map(|s| NewMemory::text(*s)).collect(),
        )?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if !out.json {
            println!(
                "stored {} memories for {user} in {ms:.1} ms (embedding + durable commit)",
                written.len()
            );
        }
        added.push(serde_json::json!({"user": user, "results": written}));
    }
    for (user, query) in QUERIES {
        let mut q = SearchQuery::new(scope(user), *query);
        q.top_k = 3;
        let t = Instant::now();
        let hits = memory.search(&q)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if out.json {
            let results: Vec<_> = hits
                .iter()
                .map(|h| serde_json::json!({"id": h.record.id, "memory": h.record.text, "score": h.score, "scores": h.scores}))
                .collect();
            searches.push(
                serde_json::json!({"user": user, "query": query, "results": results, "ms": ms}),
            );
            continue;
        }
        println!("\n{user} asks: {query}   ({ms:.1} ms)");
        for h in &hits {
            let v = h.scores.vector.map_or("-".into(), |v| format!("{v:.3}"));
            let k = h.scores.bm25.map_or("-".into(), |v| format!("{v:.2}"));
            println!(
                "  {:.3}  (cosine {v}, bm25 {k})  {}",
                h.score, h.record.text
            );
        }
    }
    if out.json {
        return out.json_value(&serde_json::json!({"added": added, "searches": searches}));
    }
    println!(
        "\nEach user's memories live in their own partition: bob's search never reads alice's vectors.\n\
         Data directory: {} (tenant \"demo\"); total {:.1} s.",
        config.data_dir.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
