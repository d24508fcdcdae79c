//! The routes Mem0's clients call besides the v1 ones: the key check, v3
//! add / search / list (scope inside `filters`, pages), entities.

use serde_json::json;

use crate::*;

#[tokio::test]
async fn ping_names_the_keys_tenant_and_needs_a_key() {
    let s = server();
    let p = call(&s.app, "GET", "/v1/ping", Some(KEY_B), None).await;
    assert_eq!(p.ok()["project_id"], "bravo");
    assert_eq!(p.body["org_id"], "memloop");
    call(&s.app, "GET", "/v1/ping", None, None)
        .await
        .assert_error(401, "unauthorized");
    call(&s.app, "GET", "/v1/ping", Some("not-a-key"), None)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn v3_add_search_and_list_as_mem0_sends_them() {
    let s = server();
    let app = &s.app;
    let a = call(
        app,
        "POST",
        "/v3/memories/add",
        Some(KEY_A),
        Some(json!({"messages": [{"role": "user", "content": "I like green tea"}], "user_id": "alice", "infer": false})),
    )
    .await;
    assert_eq!(a.ok()["results"][0]["event"], "ADD", "{}", a.text);
    add_raw(
        app,
        KEY_A,
        "alice",
        &[
            "Alice plays the cello",
            "Alice lives in Porto",
            "Alice has a dog named Rex",
        ],
    )
    .await;
    add_raw(app, KEY_A, "bob", &["Bob likes green tea too"]).await;

    // Search with the scope inside the filters, as v3 clients send it.
    let q = call(
        app,
        "POST",
        "/v3/memories/search",
        Some(KEY_A),
        Some(json!({"query": "what does she drink", "filters": {"user_id": "alice"}})),
    )
    .await;
    let hits = q.ok()["results"].as_array().unwrap();
    assert_eq!(hits[0]["memory"], "I like green tea", "{}", q.text);
    assert!(hits.iter().all(|h| h["user_id"] == "alice"), "{}", q.text);

    // Pages of two: count, next and previous.
    let p1 = page(app, 1).await;
    assert_eq!(p1.ok()["count"], 4, "{}", p1.text);
    assert_eq!(p1.body["results"].as_array().unwrap().len(), 2);
    assert_eq!(p1.body["next"], "/v3/memories?page=2&page_size=2");
    assert!(p1.body["previous"].is_null());
    let p2 = page(app, 2).await;
    assert_eq!(p2.ok()["results"].as_array().unwrap().len(), 2);
    assert!(p2.body["next"].is_null(), "{}", p2.text);
    assert_eq!(p2.body["previous"], "/v3/memories?page=1&page_size=2");
    let ids = |p: &Answer| -> Vec<String> {
        p.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (first, second) = (ids(&p1), ids(&p2));
    assert!(first.iter().all(|id| !second.contains(id)), "pages overlap");

    // Bad pages and a missing scope say what to do.
    page(app, 0).await.assert_error(400, "invalid_input");
    call(
        app,
        "POST",
        "/v3/memories",
        Some(KEY_A),
        Some(json!({"filters": {}})),
    )
    .await
    .assert_error(400, "invalid_input");
}

async fn page(app: &axum::Router, n: usize) -> Answer {
    let uri = format!("/v3/memories?page={n}&page_size=2");
    let body = json!({"filters": {"AND": [{"user_id": "alice"}]}});
    call(app, "POST", &uri, Some(KEY_A), Some(body)).await
}

#[tokio::test]
async fn entities_are_listed_per_tenant_and_deleted() {
    let s = server();
    let app = &s.app;
    add_raw(
        app,
        KEY_A,
        "alice",
        &["Alice plays the cello", "Alice lives in Porto"],
    )
    .await;
    add_raw(app, KEY_B, "carol", &["Carol runs marathons"]).await;
    let agent = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({"messages": "Always answer in French", "agent_id": "helper", "infer": false})),
    )
    .await;
    agent.ok();

    let e = call(app, "GET", "/v1/entities", Some(KEY_A), None).await;
    let listed: Vec<(String, String, i64)> = e.ok()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["type"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                r["total_memories"].as_i64().unwrap(),
            )
        })
        .collect();
    // Tenant bravo's carol is not there.
    assert_eq!(
        listed,
        vec![
            ("user".to_string(), "alice".to_string(), 2),
            ("agent".to_string(), "helper".to_string(), 1)
        ]
    );

    let d = call(app, "DELETE", "/v2/entities/user/alice", Some(KEY_A), None).await;
    assert_eq!(d.ok()["memories_deleted"], 2, "{}", d.text);
    call(app, "DELETE", "/v2/entities/run/r1", Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
    // Deleting bravo's carol with alpha's key deletes nothing of bravo's.
    let other = call(app, "DELETE", "/v2/entities/user/carol", Some(KEY_A), None).await;
    assert_eq!(other.ok()["memories_deleted"], 0);
    let e = call(app, "GET", "/v1/entities", Some(KEY_B), None).await;
    assert_eq!(e.ok()["results"][0]["name"], "carol");
    assert_eq!(e.body["results"][0]["total_memories"], 1);
    let e = call(app, "GET", "/v1/entities", Some(KEY_A), None).await;
    assert_eq!(e.ok()["count"], 1, "{}", e.text);
}
