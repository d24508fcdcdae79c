//! Every error status, with its `{"error":{"code","message"}}` body.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use axum::routing::get;
use axum::Router;
use serde_json::json;

use crate::*;

#[tokio::test]
async fn bad_input_is_400() {
    let s = server();
    let app = &s.app;
    let cases = [
        // No scope.
        (
            "POST",
            "/v1/memories",
            json!({"messages": "x", "infer": false}),
        ),
        // Blank text.
        (
            "POST",
            "/v1/memories",
            json!({"messages": "  ", "user_id": "u", "infer": false}),
        ),
        // Unknown role.
        (
            "POST",
            "/v1/memories",
            json!({"messages": [{"role": "robot", "content": "x"}], "user_id": "u"}),
        ),
        // Only a system message.
        (
            "POST",
            "/v1/memories",
            json!({"messages": [{"role": "system", "content": "x"}], "user_id": "u", "infer": false}),
        ),
        // infer without a user message.
        (
            "POST",
            "/v1/memories",
            json!({"messages": [{"role": "assistant", "content": "x"}], "user_id": "u"}),
        ),
        // Importance out of range.
        (
            "POST",
            "/v1/memories",
            json!({"messages": "x", "user_id": "u", "infer": false, "importance": 3.0}),
        ),
        // Text over 32 KiB.
        (
            "POST",
            "/v1/memories",
            json!({"messages": "a".repeat(33 * 1024), "user_id": "u", "infer": false}),
        ),
        // top_k over the limit, and zero.
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "user_id": "u", "top_k": 1001}),
        ),
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "user_id": "u", "limit": 0}),
        ),
        // Empty query, bad filter, bad threshold, no scope.
        (
            "POST",
            "/v1/memories/search",
            json!({"query": " ", "user_id": "u"}),
        ),
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "user_id": "u", "filters": "topic = "}),
        ),
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "user_id": "u", "filters": {"rating": {"near": 4}}}),
        ),
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "user_id": "u", "filters": 7}),
        ),
        (
            "POST",
            "/v1/memories/search",
            json!({"query": "x", "user_id": "u", "threshold": 2.0}),
        ),
        ("POST", "/v1/memories/search", json!({"query": "x"})),
        // The loop needs a session.
        ("POST", "/v1/context", json!({"input": "x", "user_id": "u"})),
        (
            "POST",
            "/v1/context",
            json!({"input": "", "user_id": "u", "run_id": "s"}),
        ),
        // Sessions: bad role, no messages.
        (
            "POST",
            "/v1/sessions/s1/messages",
            json!({"messages": [{"role": "robot", "content": "x"}]}),
        ),
        ("POST", "/v1/sessions/s1/messages", json!({"messages": []})),
    ];
    for (method, uri, body) in cases {
        let a = call(app, method, uri, Some(KEY_A), Some(body.clone())).await;
        assert_eq!(a.status, 400, "{method} {uri} {body}: {}", a.text);
        a.assert_error(400, a.code());
    }
    // Query strings.
    for uri in [
        "/v1/memories",
        "/v1/memories?user_id=u&limit=5000",
        "/v1/memories?user_id=u&kind=gossip",
        "/v1/memories?user_id=u&filter=topic%20%3D",
    ] {
        call(app, "GET", uri, Some(KEY_A), None)
            .await
            .assert_error(400, "invalid_input");
    }
    call(
        app,
        "GET",
        "/v1/memories?user_id=u&limit=many",
        Some(KEY_A),
        None,
    )
    .await
    .assert_error(400, "invalid_query");
    call(app, "DELETE", "/v1/memories", Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
    // Update with nothing to change.
    let ids = add_raw(app, KEY_A, "u", &["something to update"]).await;
    call(
        app,
        "PUT",
        &format!("/v1/memories/{}", ids[0]),
        Some(KEY_A),
        Some(json!({})),
    )
    .await
    .assert_error(400, "invalid_input");
    // Deleting twice.
    let uri = format!("/v1/memories/{}", ids[0]);
    call(app, "DELETE", &uri, Some(KEY_A), None).await.ok();
    call(app, "DELETE", &uri, Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
    // A session id with a control character.
    call(app, "GET", "/v1/sessions/a%0Ab", Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
}

#[tokio::test]
async fn malformed_bodies_are_400_415_422() {
    let s = server();
    let raw = |body: &'static str, content_type: Option<&str>| {
        let mut b = Request::builder()
            .method("POST")
            .uri("/v1/memories/search")
            .header("authorization", format!("Bearer {KEY_A}"));
        if let Some(ct) = content_type {
            b = b.header("content-type", ct);
        }
        b.body(Body::from(body)).unwrap()
    };
    send(&s.app, raw("{\"query\": ", Some("application/json")))
        .await
        .assert_error(400, "invalid_json");
    send(&s.app, raw("", Some("application/json")))
        .await
        .assert_error(400, "invalid_json");
    send(&s.app, raw("{\"query\": \"x\"}", None))
        .await
        .assert_error(415, "unsupported_media_type");
    send(&s.app, raw("{\"query\": \"x\"}", Some("text/plain")))
        .await
        .assert_error(415, "unsupported_media_type");
    for body in [
        json!({"query": 5, "user_id": "u"}),
        json!({"user_id": "u"}),
        json!({"query": "x", "user_id": "u", "top_k": -1}),
        json!({"query": "x", "user_id": ["u"]}),
        json!([1, 2, 3]),
    ] {
        call(
            &s.app,
            "POST",
            "/v1/memories/search",
            Some(KEY_A),
            Some(body),
        )
        .await
        .assert_error(422, "invalid_body");
    }
    for body in [
        json!({"messages": 5, "user_id": "u"}),
        json!({"messages": [{"role": "user"}], "user_id": "u"}),
        json!({"messages": "x", "user_id": "u", "infer": "yes"}),
        json!({"messages": "x", "user_id": "u", "metadata": [1]}),
        json!({"messages": "x", "user_id": "u", "kind": "gossip"}),
    ] {
        call(&s.app, "POST", "/v1/memories", Some(KEY_A), Some(body))
            .await
            .assert_error(422, "invalid_body");
    }
}

#[tokio::test]
async fn auth_failures_are_401() {
    let s = server();
    let a = call(&s.app, "GET", "/v1/memories?user_id=u", None, None).await;
    a.assert_error(401, "unauthorized");
    assert!(a.headers.contains_key("www-authenticate"));
    call(
        &s.app,
        "GET",
        "/v1/memories?user_id=u",
        Some("key-wrong-0123456789"),
        None,
    )
    .await
    .assert_error(401, "unauthorized");
    for header in [
        format!("Basic {KEY_A}"),
        KEY_A.to_string(),
        "Bearer".to_string(),
    ] {
        let mut req = request("GET", "/v1/memories?user_id=u", None, None);
        req.headers_mut()
            .insert("authorization", header.parse().unwrap());
        send(&s.app, req).await.assert_error(401, "unauthorized");
    }
    // Unknown routes too: nothing is revealed without a key.
    call(&s.app, "GET", "/v2/whatever", None, None)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn unknown_ids_and_routes_are_404_and_methods_405() {
    let s = server();
    for (method, uri, body) in [
        ("GET", "/v1/memories/no-such-id", None),
        ("PUT", "/v1/memories/no-such-id", Some(json!({"text": "x"}))),
        ("DELETE", "/v1/memories/no-such-id", None),
        ("GET", "/v1/memories/no-such-id/history", None),
    ] {
        call(&s.app, method, uri, Some(KEY_A), body)
            .await
            .assert_error(404, "not_found");
    }
    call(&s.app, "GET", "/v2/whatever", Some(KEY_A), None)
        .await
        .assert_error(404, "no_route");
    call(&s.app, "PATCH", "/v1/memories", Some(KEY_A), None)
        .await
        .assert_error(405, "method_not_allowed");
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let s = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            max_body_bytes: 1024,
            ..ServerConfig::default()
        },
        None,
    );
    let big = json!({"messages": "a".repeat(2000), "user_id": "u", "infer": false});
    call(&s.app, "POST", "/v1/memories", Some(KEY_A), Some(big))
        .await
        .assert_error(413, "body_too_large");
    // The default limit is 1 MiB.
    let s = server();
    let big = json!({"query": "a".repeat(1024 * 1024 + 1), "user_id": "u"});
    call(
        &s.app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(big),
    )
    .await
    .assert_error(413, "body_too_large");
}

#[tokio::test]
async fn too_many_in_flight_is_429() {
    let (stub, hold) = StubLlm::holding("slow reply");
    let s = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            max_in_flight_per_key: 1,
            ..ServerConfig::default()
        },
        Some(Arc::new(stub)),
    );
    let app = s.app.clone();
    let first = tokio::spawn(async move {
        call(
            &app,
            "POST",
            "/v1/turn",
            Some(KEY_A),
            Some(json!({"input": "hello", "user_id": "u", "run_id": "s"})),
        )
        .await
    });
    let entered = hold.entered;
    tokio::task::spawn_blocking(move || entered.recv_timeout(std::time::Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("the turn reached the LLM");
    // Key A has its one request in flight; key B is not affected.
    let a = call(&s.app, "GET", "/v1/memories?user_id=u", Some(KEY_A), None).await;
    a.assert_error(429, "rate_limited");
    assert_eq!(a.headers["retry-after"], "1");
    assert_eq!(
        call(&s.app, "GET", "/v1/memories?user_id=u", Some(KEY_B), None)
            .await
            .status,
        200
    );
    hold.release.send(()).unwrap();
    assert_eq!(first.await.unwrap().ok()["reply"], "slow reply");
    // The permit is back.
    assert_eq!(
        call(&s.app, "GET", "/v1/memories?user_id=u", Some(KEY_A), None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn turn_without_an_llm_is_503_and_llm_failures_map() {
    let s = server();
    let body = json!({"input": "hello", "user_id": "u", "run_id": "s"});
    let a = call(&s.app, "POST", "/v1/turn", Some(KEY_A), Some(body.clone())).await;
    a.assert_error(503, "llm_not_configured");
    assert!(a.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1/context"));
    assert!(!a.headers.contains_key("retry-after"));

    // The provider down (after its retries): 503, retry later.
    let down = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        Some(Arc::new(StubLlm::failing(|| {
            memloop::Error::Remote("connection refused".into())
        }))),
    );
    let a = call(
        &down.app,
        "POST",
        "/v1/turn",
        Some(KEY_A),
        Some(body.clone()),
    )
    .await;
    a.assert_error(503, "remote_unavailable");
    assert_eq!(a.headers["retry-after"], "1");

    // The provider refusing our request (a bad provider key): 502.
    let refused = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        Some(Arc::new(StubLlm::failing(|| {
            memloop::Error::RemoteRejected("401 invalid x-api-key".into())
        }))),
    );
    call(&refused.app, "POST", "/v1/turn", Some(KEY_A), Some(body))
        .await
        .assert_error(502, "remote_rejected");
}

#[tokio::test]
async fn a_panic_is_a_500_with_a_body_and_the_server_goes_on() {
    let s = server();
    // The MCP mount point takes any router; this one panics.
    let extra = Router::new().route(
        "/mcp/boom",
        get(|| async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
            "unreachable"
        }),
    );
    let app = memloop_server::router_with_mcp(s.state.clone(), Some(extra));
    let a = call(&app, "GET", "/mcp/boom", Some(KEY_A), None).await;
    a.assert_error(500, "internal");
    assert!(a.headers.contains_key("x-request-id"));
    assert_eq!(call(&app, "GET", "/healthz", None, None).await.status, 200);
    // The mounted route is behind the same auth.
    call(&app, "GET", "/mcp/boom", None, None)
        .await
        .assert_error(401, "unauthorized");
}
