//! A key reaches only its tenant, in process: every by-id route answers 404
//! for another tenant's id, and scope routes see only their own tenant.

use serde_json::json;

use crate::*;

#[tokio::test]
async fn another_tenants_ids_and_memories_are_invisible() {
    let s = server();
    let app = &s.app;
    // The same user name in both tenants.
    let a_ids = add_raw(
        app,
        KEY_A,
        "alice",
        &["Alice's secret: the vault code is 1234"],
    )
    .await;
    add_raw(app, KEY_B, "alice", &["Bravo's alice likes tea"]).await;
    let id = &a_ids[0];

    for (method, uri, body) in [
        ("GET", format!("/v1/memories/{id}"), None),
        ("GET", format!("/v1/memories/{id}/history"), None),
        (
            "PUT",
            format!("/v1/memories/{id}"),
            Some(json!({"text": "overwritten"})),
        ),
        (
            "PUT",
            format!("/v1/memories/{id}"),
            Some(json!({"metadata": {"x": 1}})),
        ),
        ("DELETE", format!("/v1/memories/{id}"), None),
    ] {
        let a = call(app, method, &uri, Some(KEY_B), body.clone()).await;
        a.assert_error(404, "not_found");
        // Reported exactly as an unknown id is.
        let unknown = call(
            app,
            method,
            &uri.replace(id.as_str(), "no-such-id"),
            Some(KEY_B),
            body,
        )
        .await;
        assert_eq!(
            a.body["error"]["message"]
                .as_str()
                .unwrap()
                .replace(id.as_str(), "ID"),
            unknown.body["error"]["message"]
                .as_str()
                .unwrap()
                .replace("no-such-id", "ID"),
        );
    }

    // Search and list in tenant B see only B's alice.
    let q = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_B),
        Some(json!({"query": "vault code secret", "user_id": "alice"})),
    )
    .await;
    let hits = q.ok()["results"].as_array().unwrap();
    assert!(hits.iter().all(|h| h["tenant"] == "bravo"), "{}", q.text);
    assert!(!q.text.contains("vault"), "{}", q.text);
    let l = call(app, "GET", "/v1/memories?user_id=alice", Some(KEY_B), None).await;
    assert_eq!(l.ok()["results"].as_array().unwrap().len(), 1);
    assert!(!l.text.contains("vault"));

    // Forgetting B's alice leaves A's untouched; A's memory was never changed.
    let f = call(
        app,
        "DELETE",
        "/v1/memories?user_id=alice&purge=true",
        Some(KEY_B),
        None,
    )
    .await;
    assert_eq!(f.ok()["memories_deleted"], 1);
    let g = call(app, "GET", &format!("/v1/memories/{id}"), Some(KEY_A), None).await;
    assert_eq!(g.ok()["memory"], "Alice's secret: the vault code is 1234");
    assert!(g.body["valid_until"].is_null());
    let h = call(
        app,
        "GET",
        &format!("/v1/memories/{id}/history"),
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(h.ok()["results"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn sessions_are_per_tenant() {
    let s = server();
    let app = &s.app;
    call(
        app,
        "POST",
        "/v1/sessions/shared-id/messages",
        Some(KEY_A),
        Some(json!({"messages": "alpha's private turn"})),
    )
    .await
    .ok();
    let g = call(app, "GET", "/v1/sessions/shared-id", Some(KEY_B), None).await;
    assert!(g.ok()["turns"].as_array().unwrap().is_empty());
    // B clearing its session of that name leaves A's.
    call(app, "DELETE", "/v1/sessions/shared-id", Some(KEY_B), None)
        .await
        .ok();
    let g = call(app, "GET", "/v1/sessions/shared-id", Some(KEY_A), None).await;
    assert_eq!(g.ok()["turns"].as_array().unwrap().len(), 1);
}
