//! memory_record_turn: an exchange run by the caller's own model, written
//! once per turn id, both sides in the episode, facts attributed by side.

use serde_json::json;

use crate::{ok, tool_error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_is_recorded_once_per_turn_id() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let c = client.peer();
    let args = json!({
        "user_id": "ana", "session_id": "s1", "turn_id": "hook-9",
        "messages": [
            {"role": "user", "content": "I work as a nurse in Porto."},
            {"role": "assistant", "content": "Noted. I can't eat peanuts either."}
        ]
    });
    let first = ok(c, "memory_record_turn", args.clone()).await;
    assert_eq!(first["turn_id"], "hook-9");
    assert_eq!(first["replayed"], false);
    let writes = first["writes"].as_array().unwrap();
    assert!(writes
        .iter()
        .any(|w| w["kind"] == "episode"
            && w["memory"].as_str().unwrap().contains("Assistant: Noted.")));
    let facts: Vec<_> = writes.iter().filter(|w| w["kind"] == "fact").collect();
    assert!(!facts.is_empty(), "{first}");
    assert!(facts.iter().all(|f| f["role"] == "user"), "{facts:?}");
    let again = ok(c, "memory_record_turn", args).await;
    assert_eq!(again["replayed"], true);
    assert!(again["writes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["event"] == "NOOP"));
    let (code, message) = tool_error(
        c,
        "memory_record_turn",
        json!({"user_id": "ana", "session_id": "s1", "messages": []}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(message.contains("at least one message"), "{message}");
    client.cancel().await.unwrap();
    server.await.unwrap();
}

/// A turn in which the agent called tools, one failing then one working,
/// in either API's shape: the user's task becomes a procedure whose
/// pitfall names the failure and what worked instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_in_a_recorded_turn_become_a_procedure_with_its_pitfall() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let c = client.peer();
    let openai = json!({
        "user_id": "dev", "session_id": "s1", "turn_id": "t1",
        "messages": [
            {"role": "user", "content": "deploy the web app to staging"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "shell", "arguments": "{\"command\":\"npm run deploy\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "EACCES: permission denied", "is_error": true},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function",
                "function": {"name": "shell", "arguments": "{\"command\":\"sudo -u deploy npm run deploy\"}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "deployed"},
            {"role": "assistant", "content": "Deployed to staging."}
        ]
    });
    let first = ok(c, "memory_record_turn", openai).await;
    let p = first["writes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "procedure")
        .unwrap_or_else(|| panic!("no procedure in {first}"))
        .clone();
    assert_eq!(p["event"], "ADD", "{first}");
    let anthropic = json!({
        "user_id": "dev", "session_id": "s2", "turn_id": "t2",
        "messages": [
            {"role": "user", "content": "deploy the web app to staging again"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "shell",
                "input": {"command": "sudo -u deploy npm run deploy"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "deployed"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
        ]
    });
    let second = ok(c, "memory_record_turn", anthropic).await;
    assert!(
        second["writes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "procedure" && w["event"] == "UPDATE"),
        "the second run merges into the procedure: {second}"
    );
    let found = ok(
        c,
        "memory_search_procedures",
        json!({"query": "deploy to staging", "user_id": "dev"}),
    )
    .await;
    let hit = &found["results"][0];
    assert_eq!(hit["procedure"]["successes"], 2, "{found}");
    let pitfall = hit["pitfalls"][0].as_str().unwrap_or_default();
    assert!(
        pitfall.contains("npm run deploy") && pitfall.contains("sudo -u deploy"),
        "{found}"
    );
    client.cancel().await.unwrap();
    server.await.unwrap();
}

/// Search hits are sized for a model: compact by default, the whole record
/// on request. Prints the tokens per hit of both (o200k).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_hits_are_compact_unless_full_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let c = client.peer();
    for text in [
        "I live in Paris and work as a nurse.",
        "I moved to Berlin last month.",
        "My sister Anna plays the cello.",
    ] {
        ok(
            c,
            "memory_remember",
            json!({"text": text, "user_id": "carol"}),
        )
        .await;
    }
    let query = json!({"query": "where does carol live", "user_id": "carol"});
    let compact = ok(c, "memory_search", query.clone()).await;
    let mut full_query = query;
    full_query["full"] = json!(true);
    let full = ok(c, "memory_search", full_query).await;
    let hits = compact["results"].as_array().unwrap();
    assert_eq!(hits.len(), full["results"].as_array().unwrap().len());
    for h in hits {
        let keys: Vec<&str> = h.as_object().unwrap().keys().map(String::as_str).collect();
        for k in &keys {
            assert!(
                ["id", "memory", "score", "kind", "date", "superseded_by"].contains(k),
                "{k} in {h}"
            );
        }
        assert_eq!(h["date"].as_str().unwrap().len(), 10, "{h}");
    }
    // The stale Paris episode says what replaced it, in both forms.
    let stale = hits
        .iter()
        .find(|h| h["memory"].as_str().unwrap().contains("Paris"))
        .unwrap();
    assert!(
        stale["superseded_by"]["memory"]
            .as_str()
            .unwrap()
            .contains("Berlin"),
        "{stale}"
    );
    assert!(full["results"][0]["content_hash"].is_string());
    let counter = memloop::TokenCounter::new(memloop::Encoding::O200k).unwrap();
    let per_hit = |v: &serde_json::Value| {
        let hits = v["results"].as_array().unwrap();
        hits.iter()
            .map(|h| counter.count(&h.to_string()))
            .sum::<usize>()
            / hits.len()
    };
    let (small, big) = (per_hit(&compact), per_hit(&full));
    println!(
        "tokens per hit: compact {small}, full {big} ({:.1}x)",
        big as f64 / small as f64
    );
    assert!(small * 2 < big, "compact {small} vs full {big}");
    client.cancel().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_traces_go_to_the_trace_sink_with_tenant_and_route() {
    use std::sync::{Arc, Mutex};
    type Kept = Arc<Mutex<Vec<(String, &'static str, serde_json::Value)>>>;
    let dir = tempfile::tempdir().unwrap();
    let kept: Kept = Arc::default();
    let sink = Arc::clone(&kept);
    let tools = crate::tools(dir.path()).with_trace_sink(Arc::new(move |tenant, route, trace| {
        sink.lock()
            .unwrap()
            .push((tenant.to_string(), route, trace.clone()));
    }));
    let (client, server) = crate::connect_to(tools).await;
    let c = client.peer();
    let recorded = ok(
        c,
        "memory_record_turn",
        json!({
            "user_id": "ana", "session_id": "s1", "turn_id": "t1",
            "messages": [
                {"role": "user", "content": "I work as a nurse in Porto."},
                {"role": "assistant", "content": "Noted."}
            ]
        }),
    )
    .await;
    let context = ok(
        c,
        "memory_context",
        json!({"user_id": "ana", "session_id": "s1", "input": "where do I work?"}),
    )
    .await;
    // A search is not a loop turn, and a failed call keeps nothing.
    ok(
        c,
        "memory_search",
        json!({"user_id": "ana", "query": "work"}),
    )
    .await;
    tool_error(
        c,
        "memory_context",
        json!({"user_id": "", "session_id": "s1", "input": "x"}),
    )
    .await;
    let kept = kept.lock().unwrap().clone();
    let routes: Vec<&str> = kept.iter().map(|(_, r, _)| *r).collect();
    assert_eq!(routes, ["record", "context"]);
    assert!(kept.iter().all(|(t, _, _)| t == "default"));
    // The same trace the tool answered with (scores compared after the
    // answer's trip through JSON text would differ in the last digit).
    for ((_, _, trace), answer) in kept.iter().zip([&recorded, &context]) {
        assert!(answer["trace"]["turn_id"].is_string(), "{answer}");
        assert_eq!(trace["turn_id"], answer["trace"]["turn_id"]);
        assert_eq!(
            trace["retrieved"].as_array().map(Vec::len),
            answer["trace"]["retrieved"].as_array().map(Vec::len)
        );
    }
    client.cancel().await.unwrap();
    server.await.unwrap();
}
