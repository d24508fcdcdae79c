//! Every route, answering as documented.

use std::sync::Arc;

use serde_json::json;

use crate::*;

#[tokio::test]
async fn memory_routes_round_trip() {
    let s = server();
    let app = &s.app;

    // Raw add: one memory per message, the role kept in metadata.
    let a = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({
            "messages": [
                {"role": "system", "content": "ignored"},
                {"role": "user", "content": "I am vegetarian and allergic to peanuts"},
                {"role": "assistant", "content": "Noted: no meat, no peanuts"}
            ],
            "user_id": "alice", "metadata": {"topic": "food"}, "infer": false
        })),
    )
    .await;
    let results = a.ok()["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 2, "{}", a.text);
    assert!(results.iter().all(|r| r["event"] == "ADD"));
    let id = results[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        results[0]["memory"],
        "I am vegetarian and allergic to peanuts"
    );

    // A plain string is one memory; the same text again is a NOOP.
    let a = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({"messages": "Emma starts school in September", "user_id": "alice", "infer": false})),
    )
    .await;
    assert_eq!(a.ok()["results"][0]["event"], "ADD");
    let again = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({"messages": "Emma starts school in September", "user_id": "alice", "infer": false})),
    )
    .await;
    assert_eq!(again.ok()["results"][0]["event"], "NOOP");

    // Get.
    let g = call(app, "GET", &format!("/v1/memories/{id}"), Some(KEY_A), None).await;
    let rec = g.ok();
    assert_eq!(rec["memory"], "I am vegetarian and allergic to peanuts");
    assert_eq!(rec["metadata"]["topic"], "food");
    assert_eq!(rec["metadata"]["role"], "user");
    assert_eq!(rec["user_id"], "alice");
    assert_eq!(rec["tenant"], "alpha");

    // Search, with a Mem0 filter and `limit`.
    let q = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(json!({"query": "am I allergic to anything?", "user_id": "alice", "limit": 5})),
    )
    .await;
    let hits = q.ok()["results"].as_array().unwrap();
    assert_eq!(hits[0]["id"], id.as_str(), "{}", q.text);
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    assert!(hits[0]["scores"].is_object());
    let q = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(json!({"query": "school", "filters": {"AND": [{"user_id": "alice"}, {"role": "assistant"}]}})),
    )
    .await;
    let hits = q.ok()["results"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{}", q.text);
    assert_eq!(hits[0]["memory"], "Noted: no meat, no peanuts");
    let q = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(
            json!({"query": "food", "user_id": "alice", "filters": "topic = \"food\"", "top_k": 1}),
        ),
    )
    .await;
    assert_eq!(q.ok()["results"].as_array().unwrap().len(), 1);

    // List.
    let l = call(app, "GET", "/v1/memories?user_id=alice", Some(KEY_A), None).await;
    assert_eq!(l.ok()["results"].as_array().unwrap().len(), 3, "{}", l.text);
    let l = call(
        app,
        "GET",
        "/v1/memories?user_id=alice&limit=1&offset=1&kind=fact",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(l.ok()["results"].as_array().unwrap().len(), 1);

    // Update text and metadata; the old text is in the answer and in history.
    let u = call(
        app,
        "PUT",
        &format!("/v1/memories/{id}"),
        Some(KEY_A),
        Some(json!({"text": "I am vegan and allergic to peanuts", "metadata": {"topic": "diet"}})),
    )
    .await;
    let r = &u.ok()["results"][0];
    assert_eq!(r["event"], "UPDATE");
    assert_eq!(
        r["previous_memory"],
        "I am vegetarian and allergic to peanuts"
    );
    let g = call(app, "GET", &format!("/v1/memories/{id}"), Some(KEY_A), None).await;
    assert_eq!(g.ok()["memory"], "I am vegan and allergic to peanuts");
    assert_eq!(g.body["metadata"], json!({"topic": "diet"}));

    // Delete, then history shows ADD, UPDATE, DELETE.
    let d = call(
        app,
        "DELETE",
        &format!("/v1/memories/{id}"),
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(d.ok()["results"][0]["event"], "DELETE");
    let h = call(
        app,
        "GET",
        &format!("/v1/memories/{id}/history"),
        Some(KEY_A),
        None,
    )
    .await;
    let events: Vec<&str> = h.ok()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["ADD", "UPDATE", "DELETE"]);
    let l = call(app, "GET", "/v1/memories?user_id=alice", Some(KEY_A), None).await;
    assert_eq!(l.ok()["results"].as_array().unwrap().len(), 2);
    let l = call(
        app,
        "GET",
        "/v1/memories?user_id=alice&include_superseded=true",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(l.ok()["results"].as_array().unwrap().len(), 3);

    // Forget the scope.
    let f = call(
        app,
        "DELETE",
        "/v1/memories?user_id=alice",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(f.ok()["memories_deleted"], 3, "{}", f.text);
    let l = call(app, "GET", "/v1/memories?user_id=alice", Some(KEY_A), None).await;
    assert!(l.ok()["results"].as_array().unwrap().is_empty());
}

/// `infer: true` runs the loop's gate on each user message, as the loop,
/// `memloop remember` and MCP do: a greeting is not distilled, and the
/// response says why.
#[tokio::test]
async fn infer_gates_each_user_message() {
    let s = server();
    let a = call(
        &s.app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({
            "messages": [
                {"role": "user", "content": "Hi there!"},
                {"role": "user", "content": "My sister Ana lives in Porto."}
            ],
            "user_id": "gated", "run_id": "s1"
        })),
    )
    .await;
    let body = a.ok();
    let results = body["results"].as_array().unwrap();
    assert!(
        results.iter().all(|r| r["memory"] != "Hi there!"),
        "{}",
        a.text
    );
    assert!(
        results
            .iter()
            .any(|r| r["memory"] == "My sister Ana lives in Porto."),
        "{}",
        a.text
    );
    let notes = body["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("a user message was not kept")),
        "{}",
        a.text
    );
}

#[tokio::test]
async fn search_takes_the_fusion_weights_and_superseded_memories() {
    let s = server();
    for text in ["I live in Paris.", "I moved to Berlin."] {
        let body = json!({"messages": text, "user_id": "alice", "run_id": text});
        call(&s.app, "POST", "/v1/memories", Some(KEY_A), Some(body))
            .await
            .ok();
    }
    let search = |extra: Value| {
        let mut body = json!({"query": "which city does she live in", "user_id": "alice"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        call(
            &s.app,
            "POST",
            "/v1/memories/search",
            Some(KEY_A),
            Some(body),
        )
    };
    let texts = |a: &Value| -> Vec<String> {
        a["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["memory"].as_str().unwrap().to_string())
            .collect()
    };
    let now = search(json!({})).await;
    assert!(!texts(now.ok()).contains(&"User lives in Paris".to_string()));
    let all = search(json!({"include_superseded": true})).await;
    assert!(
        texts(all.ok()).contains(&"User lives in Paris".to_string()),
        "{}",
        all.text
    );
    // Meaning alone ranks by the vector: every hit's keyword share is gone.
    let meaning = search(json!({"keyword_weight": 0.0})).await;
    let keywords = search(json!({"vector_weight": 0.0})).await;
    let fused = |a: &Value| a["results"][0]["scores"]["fused"].as_f64().unwrap();
    assert_ne!(fused(meaning.ok()), fused(keywords.ok()));
    for (bad, word) in [
        (
            json!({"vector_weight": 0.0, "keyword_weight": 0.0}),
            "both be 0",
        ),
        (json!({"vector_weight": 11.0}), "between 0 and 10"),
        (json!({"keyword_weight": -1.0}), "between 0 and 10"),
    ] {
        let a = search(bad).await;
        assert_eq!(a.status, 400, "{}", a.text);
        assert!(a.text.contains(word), "{}", a.text);
    }
}

#[tokio::test]
async fn infer_runs_the_write_pipeline() {
    let s = server();
    let a = call(
        &s.app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({
            "messages": [
                {"role": "assistant", "content": "What should I know about you?"},
                {"role": "user", "content": "I'm allergic to peanuts and I live in Lisbon."}
            ],
            "user_id": "alice", "run_id": "s1", "metadata": {"source": "intake", "role": "x", "fact": "x"}
        })),
    )
    .await;
    let results = a.ok()["results"].as_array().unwrap().clone();
    // The caller's metadata is on everything written; the write's own keys win.
    for r in &results {
        let id = r["id"].as_str().unwrap();
        let got = call(
            &s.app,
            "GET",
            &format!("/v1/memories/{id}"),
            Some(KEY_A),
            None,
        )
        .await;
        let meta = &got.ok()["metadata"];
        assert_eq!(meta["source"], "intake", "{}", got.text);
        if r["kind"] == "episode" {
            assert_eq!(meta["role"], "user", "{}", got.text);
        } else {
            assert!(meta["fact"].is_object(), "{}", got.text);
        }
    }
    // The episode as said, plus the facts the rules distilled.
    assert!(results.iter().any(|r| r["kind"] == "episode"), "{}", a.text);
    assert!(results.iter().any(|r| r["kind"] == "fact"), "{}", a.text);
    assert!(results.iter().all(|r| r["reason"].is_string()));
    // Sent again: the same turn, nothing new.
    let again = call(
        &s.app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({"messages": [{"role": "user", "content": "I'm allergic to peanuts and I live in Lisbon."}], "user_id": "alice", "run_id": "s1"})),
    )
    .await;
    assert!(
        again.ok()["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["event"] == "NOOP"),
        "{}",
        again.text
    );
    let q = call(
        &s.app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(json!({"query": "peanuts", "user_id": "alice"})),
    )
    .await;
    assert!(!q.ok()["results"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn loop_and_session_routes() {
    let llm: Arc<dyn memloop::Llm> = Arc::new(StubLlm::replying("Hello Alice!"));
    let s = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        Some(llm),
    );
    let app = &s.app;
    add_raw(app, KEY_A, "alice", &["Alice is allergic to peanuts"]).await;

    // Short-term: append, show.
    let a = call(
        app,
        "POST",
        "/v1/sessions/s1/messages",
        Some(KEY_A),
        Some(json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})),
    )
    .await;
    assert_eq!(a.ok()["turns"], 2);
    let a = call(
        app,
        "POST",
        "/v1/sessions/s1/messages",
        Some(KEY_A),
        Some(json!({"messages": "one more"})),
    )
    .await;
    assert_eq!(a.ok()["turns"], 3);
    let g = call(app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    let turns = g.ok()["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0]["role"], "user");
    assert_eq!(turns[1]["content"], "hello");
    assert!(turns[0]["at"].is_string());

    // Context: no LLM call, the memory in the prompt, the trace.
    let c = call(
        app,
        "POST",
        "/v1/context",
        Some(KEY_A),
        Some(json!({"input": "what am I allergic to?", "user_id": "alice", "run_id": "s1"})),
    )
    .await;
    let body = c.ok();
    assert!(
        body["system"].as_str().unwrap().contains("peanuts"),
        "{}",
        c.text
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "what am I allergic to?"
    );
    assert_eq!(messages.len(), 4);
    assert!(body["trace"]["retrieved"][0]["included"].as_bool().unwrap());
    assert!(body["max_tokens"].as_u64().unwrap() > 0);
    // Nothing was written: still three turns.
    let g = call(app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    assert_eq!(g.ok()["turns"].as_array().unwrap().len(), 3);

    // Turn: the reply, the trace, the session written.
    let t = call(
        app,
        "POST",
        "/v1/turn",
        Some(KEY_A),
        Some(json!({"query": "what am I allergic to?", "user_id": "alice", "session_id": "s1"})),
    )
    .await;
    assert_eq!(t.ok()["reply"], "Hello Alice!");
    assert_eq!(t.body["trace"]["session_id"], "s1");
    assert_eq!(t.body["trace"]["model"], "stub");
    let g = call(app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    assert_eq!(g.ok()["turns"].as_array().unwrap().len(), 5);

    // Clear.
    let d = call(app, "DELETE", "/v1/sessions/s1", Some(KEY_A), None).await;
    assert_eq!(d.ok()["turns"], 0);
    let g = call(app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    assert!(g.ok()["turns"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn operations_routes() {
    let s = server();
    let app = &s.app;
    // Probes and the document need no key.
    let h = call(app, "GET", "/healthz", None, None).await;
    assert_eq!(h.ok()["status"], "ok");
    let r = call(app, "GET", "/readyz", None, None).await;
    assert_eq!(r.ok()["status"], "ready");
    assert!(r.body["details"]["embedder"]
        .as_str()
        .unwrap()
        .contains("MiniLM"));
    let o = call(app, "GET", "/openapi.json", None, None).await;
    assert!(o.ok()["paths"].is_object());

    add_raw(app, KEY_A, "alice", &["one", "two"]).await;
    call(app, "GET", "/v1/memories/nope", Some(KEY_A), None).await;
    // Metrics need a key when keys are configured.
    call(app, "GET", "/metrics", None, None)
        .await
        .assert_error(401, "unauthorized");
    let m = call(app, "GET", "/metrics", Some(KEY_B), None).await;
    assert_eq!(m.status, 200);
    assert!(m.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = &m.text;
    for needle in [
        "# TYPE memloop_http_request_duration_seconds histogram",
        "memloop_http_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/memories\",le=\"+Inf\"} 1",
        "memloop_http_requests_total{method=\"GET\",route=\"/v1/memories/{id}\",status=\"404\"} 1",
        "memloop_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"401\"} 1",
        "memloop_memories{state=\"current\"} 2",
        "memloop_memories_by_kind{kind=\"fact\"} 2",
        "memloop_http_requests_in_flight 1",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
}

#[tokio::test]
async fn request_ids_are_echoed_or_made() {
    let s = server();
    let mut req = request("GET", "/healthz", None, None);
    req.headers_mut()
        .insert("x-request-id", "client-chosen-42".parse().unwrap());
    let a = send(&s.app, req).await;
    assert_eq!(a.headers["x-request-id"], "client-chosen-42");
    // Errors carry one too; a made-up one is a UUID.
    let a = call(&s.app, "GET", "/v1/memories", None, None).await;
    let id = a.headers["x-request-id"].to_str().unwrap();
    assert_eq!(id.len(), 36, "{id}");
    // An unreasonable one is replaced.
    let mut req = request("GET", "/healthz", None, None);
    req.headers_mut()
        .insert("x-request-id", "a b".parse().unwrap());
    let a = send(&s.app, req).await;
    assert_ne!(a.headers["x-request-id"], "a b");
}

#[tokio::test]
async fn keyless_mode_serves_the_default_tenant_on_loopback_names() {
    let s = server_with(ServerConfig::default(), None);
    let ids = add_raw(&s.app, "unused", "alice", &["Alice likes tea"]).await;
    let g = call(
        &s.app,
        "GET",
        &format!("/v1/memories/{}", ids[0]),
        None,
        None,
    )
    .await;
    assert_eq!(g.ok()["tenant"], "default");
    for host in [
        "localhost:8420",
        "127.0.0.1:8420",
        "[::1]:8420",
        "localhost",
    ] {
        let mut req = request("GET", "/v1/memories?user_id=alice", None, None);
        req.headers_mut().insert("host", host.parse().unwrap());
        assert_eq!(send(&s.app, req).await.status, 200, "{host}");
    }
    // A page on another name (DNS rebinding) is refused.
    let mut req = request("GET", "/v1/memories?user_id=alice", None, None);
    req.headers_mut()
        .insert("host", "evil.example:8420".parse().unwrap());
    send(&s.app, req).await.assert_error(403, "forbidden_host");
}

#[tokio::test]
async fn token_scheme_is_accepted() {
    let s = server();
    for header in [
        format!("Token {KEY_A}"),
        format!("bearer {KEY_A}"),
        format!("Bearer  {KEY_A} "),
    ] {
        let mut req = request("GET", "/v1/memories?user_id=alice", None, None);
        req.headers_mut()
            .insert("authorization", header.parse().unwrap());
        assert_eq!(send(&s.app, req).await.status, 200, "{header}");
    }
}

/// A search body's `now`, `time_mode` and `as_of`: the time the query names
/// is read against `now` and answered as `time`; a filter on a day without
/// memories finds none, the boost still finds them; `as_of` before any
/// memory finds none; bad values are 400s naming the field.
#[tokio::test]
async fn search_reads_the_query_time_against_now_and_takes_as_of() {
    let s = server();
    let app = &s.app;
    add_raw(app, KEY_A, "tess", &["Tess bought a red bicycle"]).await;
    let search =
        |body: serde_json::Value| call(app, "POST", "/v1/memories/search", Some(KEY_A), Some(body));
    let q = "what bicycle did Tess buy yesterday";
    let boosted = search(json!({"query": q, "user_id": "tess", "now": "2030-01-10"})).await;
    let v = boosted.ok();
    assert_eq!(
        v["results"].as_array().unwrap().len(),
        1,
        "{}",
        boosted.text
    );
    assert_eq!(v["time"]["phrase"], "yesterday");
    assert_eq!(v["time"]["start"], "2030-01-09T00:00:00.000Z");
    assert_eq!(v["time"]["end"], "2030-01-10T00:00:00.000Z");
    assert_eq!(v["time"]["mode"], "boost");
    let t = v["results"][0]["scores"]["time"].as_f64().unwrap();
    assert!(t > 0.0 && t < 1.0, "{t}");

    let filtered =
        search(json!({"query": q, "user_id": "tess", "now": "2030-01-10", "time_mode": "filter"}))
            .await;
    assert!(
        filtered.ok()["results"].as_array().unwrap().is_empty(),
        "{}",
        filtered.text
    );
    assert_eq!(filtered.ok()["time"]["mode"], "filter");

    let off = search(json!({"query": q, "user_id": "tess", "time_mode": "off"})).await;
    assert!(off.ok().get("time").is_none(), "{}", off.text);
    assert_eq!(off.ok()["results"].as_array().unwrap().len(), 1);

    let past = search(json!({"query": "bicycle", "user_id": "tess", "as_of": "2020-01-01"})).await;
    assert!(
        past.ok()["results"].as_array().unwrap().is_empty(),
        "{}",
        past.text
    );
    let present =
        search(json!({"query": "bicycle", "user_id": "tess", "as_of": "2099-01-01"})).await;
    assert_eq!(
        present.ok()["results"].as_array().unwrap().len(),
        1,
        "{}",
        present.text
    );

    for (body, field) in [
        (json!({"query": q, "user_id": "tess", "now": "soon"}), "now"),
        (
            json!({"query": q, "user_id": "tess", "time_mode": "strict"}),
            "time_mode",
        ),
        (
            json!({"query": q, "user_id": "tess", "as_of": "someday"}),
            "as_of",
        ),
    ] {
        let a = search(body).await;
        a.assert_error(400, "invalid_input");
        assert!(a.text.contains(field), "{}", a.text);
    }
}
