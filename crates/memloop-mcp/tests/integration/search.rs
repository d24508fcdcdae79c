//! memory_search's ranking arguments: the fusion's weights, superseded
//! memories on request, and bounds refused with what was wrong.

use serde_json::{json, Value};

use crate::{connect, ok, tool_error};

fn texts(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["memory"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_superseded_memories_and_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let c = client.peer();
    for text in ["I live in Paris", "I moved to Berlin last month"] {
        ok(
            c,
            "memory_remember",
            json!({"text": text, "user_id": "dana"}),
        )
        .await;
    }
    ok(
        c,
        "memory_add",
        json!({"text": "Dana's sister lives near the sea", "user_id": "dana"}),
    )
    .await;
    let search = |extra: Value| {
        let mut args = json!({"query": "where does Dana live", "user_id": "dana", "full": true});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    // The fact distilled from the first turn was superseded by the second
    // (the turns themselves stay, as episodes).
    let paris_fact = |v: &Value| {
        texts(v)
            .iter()
            .any(|t| t.starts_with("User lives in Paris"))
    };
    let now = ok(c, "memory_search", search(json!({}))).await;
    assert!(!paris_fact(&now), "{now}");
    let all = ok(
        c,
        "memory_search",
        search(json!({"include_superseded": true})),
    )
    .await;
    assert!(paris_fact(&all), "{all}");

    // A signal of weight 0 is not computed: meaning alone reports no
    // keyword score, keywords alone no vector score.
    let meaning = ok(c, "memory_search", search(json!({"keyword_weight": 0.0}))).await;
    let keywords = ok(c, "memory_search", search(json!({"vector_weight": 0.0}))).await;
    let all_hits = |v: &Value, signal: &str, present: bool| {
        let hits = v["results"].as_array().unwrap();
        !hits.is_empty()
            && hits
                .iter()
                .all(|h| h["scores"][signal].is_null() != present)
    };
    assert!(all_hits(&meaning, "bm25", false), "{meaning}");
    assert!(all_hits(&meaning, "vector", true), "{meaning}");
    assert!(all_hits(&keywords, "vector", false), "{keywords}");

    for (bad, words) in [
        (
            json!({"vector_weight": 0.0, "keyword_weight": 0.0}),
            "both be 0",
        ),
        (json!({"vector_weight": 11.0}), "between 0 and 10"),
        (
            json!({"top_k": 0}),
            "top_k must be between 1 and 1000 (got 0)",
        ),
        (json!({"top_k": 5000}), "(got 5000)"),
        (
            json!({"min_score": 1.5}),
            "min_score must be between 0 and 1",
        ),
    ] {
        let (code, message) = tool_error(c, "memory_search", search(bad.clone())).await;
        assert_eq!(code, "invalid_input", "{bad}: {message}");
        assert!(message.contains(words), "{bad}: {message}");
    }
    client.cancel().await.unwrap();
    server.await.unwrap();
}
