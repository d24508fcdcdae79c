//! The scope arrives through the one shared set of fields (`ScopeFields`)
//! wherever a request carries it: `run_id` and its alias `session_id` in
//! JSON bodies and in query strings alike, and the same 400 when neither a
//! user nor an agent is named.

use serde_json::{json, Value};

use crate::*;

const NO_SCOPE: &str = "no scope: give user_id or agent_id (run_id narrows to a session)";

fn memories(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {v}"))
        .iter()
        .map(|m| m["memory"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn run_id_and_session_id_narrow_in_bodies_and_query_strings() {
    let s = server();
    let app = &s.app;
    // One memory per session, the first named through the alias.
    for body in [
        json!({"messages": "Alice drinks green tea", "user_id": "alice",
               "session_id": "s1", "infer": false}),
        json!({"messages": "Alice drinks black coffee", "user_id": "alice",
               "run_id": "s2", "agent_id": "barista", "infer": false}),
    ] {
        call(app, "POST", "/v1/memories", Some(KEY_A), Some(body))
            .await
            .ok();
    }
    let tea = vec!["Alice drinks green tea".to_string()];
    let coffee = vec!["Alice drinks black coffee".to_string()];

    // Search (JSON body): either name narrows to the session.
    for (field, session, expected) in [
        ("run_id", "s1", &tea),
        ("session_id", "s1", &tea),
        ("run_id", "s2", &coffee),
        ("session_id", "s2", &coffee),
    ] {
        let r = call(
            app,
            "POST",
            "/v1/memories/search",
            Some(KEY_A),
            Some(json!({"query": "what does Alice drink?", "user_id": "alice", field: session})),
        )
        .await;
        assert_eq!(&memories(r.ok()), expected, "search {field}={session}");
    }
    let r = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(json!({"query": "drink", "user_id": "alice", "agent_id": "barista"})),
    )
    .await;
    assert_eq!(memories(r.ok()), coffee, "search by agent");
    // The scope lifted out of Mem0 filters lands in the same fields.
    let r = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(
            json!({"query": "drink", "filters": {"AND": [{"user_id": "alice"}, {"run_id": "s1"}]}}),
        ),
    )
    .await;
    assert_eq!(memories(r.ok()), tea, "search scoped by filters");

    // List (query string): either name, next to numeric and boolean parameters.
    for (query, expected) in [
        ("user_id=alice&run_id=s1", &tea),
        ("user_id=alice&session_id=s1&limit=5&offset=0", &tea),
        (
            "session_id=s2&user_id=alice&include_superseded=false",
            &coffee,
        ),
        ("agent_id=barista&user_id=alice", &coffee),
    ] {
        let r = call(
            app,
            "GET",
            &format!("/v1/memories?{query}"),
            Some(KEY_A),
            None,
        )
        .await;
        assert_eq!(&memories(r.ok()), expected, "list ?{query}");
    }
    let all = call(app, "GET", "/v1/memories?user_id=alice", Some(KEY_A), None).await;
    assert_eq!(memories(all.ok()).len(), 2);

    // Mem0 v3 list (JSON body) takes the alias too.
    let r = call(
        app,
        "POST",
        "/v3/memories",
        Some(KEY_A),
        Some(json!({"user_id": "alice", "session_id": "s2"})),
    )
    .await;
    assert_eq!(memories(r.ok()), coffee, "v3 list");

    // The loop reads its session from either name.
    for field in ["run_id", "session_id"] {
        let r = call(
            app,
            "POST",
            "/v1/context",
            Some(KEY_A),
            Some(json!({"input": "tea?", "user_id": "alice", field: "s1"})),
        )
        .await;
        assert!(r.ok()["system"].is_string(), "context with {field}");
    }

    // Forget (query string) through the alias removes only that session.
    let r = call(
        app,
        "DELETE",
        "/v1/memories?user_id=alice&session_id=s1",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(r.ok()["memories_deleted"], 1, "{}", r.text);
    let left = call(app, "GET", "/v1/memories?user_id=alice", Some(KEY_A), None).await;
    assert_eq!(memories(left.ok()), coffee);
}

#[tokio::test]
async fn no_user_and_no_agent_is_the_same_400_everywhere() {
    let s = server();
    let app = &s.app;
    let bodies = [
        (
            "POST",
            "/v1/memories",
            json!({"messages": "hi", "infer": false}),
        ),
        (
            "POST",
            "/v1/memories",
            json!({"messages": "hi", "run_id": "s1", "infer": false}),
        ),
        ("POST", "/v1/memories/search", json!({"query": "x"})),
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "session_id": "s1", "user_id": null}),
        ),
        ("POST", "/v3/memories", json!({"run_id": "s1"})),
        (
            "POST",
            "/v1/context",
            json!({"input": "x", "session_id": "s1"}),
        ),
    ];
    for (method, uri, body) in bodies {
        let r = call(app, method, uri, Some(KEY_A), Some(body.clone())).await;
        r.assert_error(400, "invalid_input");
        assert_eq!(r.body["error"]["message"], NO_SCOPE, "{uri} {body}");
    }
    for (method, uri) in [
        ("GET", "/v1/memories"),
        ("GET", "/v1/memories?run_id=s1"),
        ("DELETE", "/v1/memories?session_id=s1"),
    ] {
        let r = call(app, method, uri, Some(KEY_A), None).await;
        r.assert_error(400, "invalid_input");
        assert_eq!(r.body["error"]["message"], NO_SCOPE, "{method} {uri}");
    }
}
