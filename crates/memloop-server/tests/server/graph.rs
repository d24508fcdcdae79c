//! The entity graph and the search's switches over REST: a user's
//! entities and one entity's links (per tenant and user), `expand` and
//! `hops`, and a reranker on loopback speaking text-embeddings-inference's
//! wire format, with its report and positions in the answer.

use std::time::Duration;

use memloop::rerank::{RerankConfig, RerankFormat, RerankKind};
use memloop_teststub::{Response, StubServer};
use serde_json::{json, Value};

use crate::*;

async fn write(app: &Router, key: &str, user: &str, texts: &[&str]) {
    for t in texts {
        let body = json!({"messages": t, "user_id": user, "infer": false});
        call(app, "POST", "/v1/memories", Some(key), Some(body))
            .await
            .ok();
    }
}

fn names(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn entities_and_links_are_per_tenant_and_user() {
    let s = server();
    let app = &s.app;
    write(
        app,
        KEY_A,
        "ann",
        &[
            "Anna is my sister",
            "Anna works at Globex",
            "I visited Lisbon",
        ],
    )
    .await;
    write(app, KEY_B, "ann", &["Boris lives in Oslo"]).await;

    let a = call(app, "GET", "/v1/entities?user_id=ann", Some(KEY_A), None).await;
    let got = names(a.ok());
    assert!(
        got.contains(&"Anna".to_string()) && got.contains(&"Globex".to_string()),
        "{got:?}"
    );
    assert!(
        !got.contains(&"Boris".to_string()),
        "another tenant's entity: {got:?}"
    );
    assert_eq!(got[0], "Anna", "most mentioned first: {got:?}");
    assert_eq!(a.ok()["results"][0]["memories"], 2);
    assert_eq!(a.ok()["count"].as_u64().unwrap() as usize, got.len());

    // Without a scope the route is Mem0's users list, as before.
    let users = call(app, "GET", "/v1/entities", Some(KEY_A), None).await;
    assert_eq!(users.ok()["results"][0]["type"], "user", "{}", users.text);

    let l = call(
        app,
        "GET",
        "/v1/entities/anna/links?user_id=ann",
        Some(KEY_A),
        None,
    )
    .await;
    let links = l.ok();
    assert_eq!(links["entity"]["name"], "Anna");
    let relations: Vec<(String, String)> = links["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["relation"].as_str().unwrap().into(),
                r["object"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        relations.contains(&("sister_of".into(), "user".into())),
        "{relations:?}"
    );
    assert_eq!(links["memories"].as_array().unwrap().len(), 2);

    // A name with a space, URL-encoded; another user's and tenant's: 404.
    write(app, KEY_A, "ann", &["I joined Acme Corp in May"]).await;
    let acme = call(
        app,
        "GET",
        "/v1/entities/acme%20corp/links?user_id=ann",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(acme.ok()["entity"]["name"], "Acme Corp");
    call(
        app,
        "GET",
        "/v1/entities/Anna/links?user_id=bob",
        Some(KEY_A),
        None,
    )
    .await
    .assert_error(404, "not_found");
    call(
        app,
        "GET",
        "/v1/entities/Anna/links?user_id=ann",
        Some(KEY_B),
        None,
    )
    .await
    .assert_error(404, "not_found");
    call(app, "GET", "/v1/entities/Anna/links", Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
    call(app, "GET", "/v1/entities?user_id=ann", None, None)
        .await
        .assert_error(401, "unauthorized");
}

/// A later employer ends the earlier one (both memories stay current:
/// written as given, with their facts' structure), and `as_of` reads the
/// graph as it was; a bad `as_of` is a 400 that says what to send.
#[tokio::test]
async fn links_hold_for_a_time_and_read_as_of() {
    let s = server();
    let app = &s.app;
    for (at, org) in [("2026-01-10", "Acme"), ("2026-01-20", "Globex")] {
        let body = json!({
            "messages": format!("Anna works at {org}"), "user_id": "rel", "infer": false,
            "timestamp": at,
            "metadata": {"fact": {"subject": "anna", "attribute": "works_at", "value": org}},
        });
        call(app, "POST", "/v1/memories", Some(KEY_A), Some(body))
            .await
            .ok();
    }
    let works = |v: &Value| -> Vec<(String, Value)> {
        v["relations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["relation"] == "works_at")
            .map(|r| {
                (
                    r["object"].as_str().unwrap().into(),
                    r["valid_until"].clone(),
                )
            })
            .collect()
    };
    let links = |query: &'static str| call(app, "GET", query, Some(KEY_A), None);
    let now = links("/v1/entities/Anna/links?user_id=rel").await;
    assert_eq!(
        works(now.ok()),
        [("Globex".into(), Value::Null)],
        "{}",
        now.text
    );
    let then = links("/v1/entities/Anna/links?user_id=rel&as_of=2026-01-15").await;
    let jan20 = memloop::filter::parse_date("2026-01-20").unwrap();
    assert_eq!(
        works(then.ok()),
        [("Acme".into(), json!(jan20))],
        "{}",
        then.text
    );
    let before = links("/v1/entities?user_id=rel&as_of=2026-01-05").await;
    assert!(names(before.ok()).is_empty(), "{}", before.text);
    let mid = links("/v1/entities?user_id=rel&as_of=2026-01-15").await;
    assert!(
        names(mid.ok()).contains(&"Acme".to_string()),
        "{}",
        mid.text
    );
    let bad = links("/v1/entities/Anna/links?user_id=rel&as_of=soon").await;
    bad.assert_error(400, "invalid_input");
    assert!(bad.text.contains("as_of"), "{}", bad.text);
}

#[tokio::test]
async fn a_search_expands_through_entities_when_asked() {
    let s = server();
    let app = &s.app;
    write(
        app,
        KEY_A,
        "ann",
        &["Anna is my sister", "Anna works at Globex"],
    )
    .await;
    for t in [
        "My brother works at Initech",
        "My cousin works at Hooli",
        "My friend works at Vandelay",
        "My neighbour works at Soylent",
        "My uncle works at Cyberdyne",
    ] {
        write(app, KEY_A, "ann", &[t]).await;
    }
    let search = |extra: Value| {
        let mut body = json!({"query": "where does my sister work", "user_id": "ann", "top_k": 2});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let texts = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["memory"].as_str().unwrap().into())
            .collect()
    };
    let on = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(search(json!({"expand": true, "hops": 1}))),
    )
    .await;
    let on = on.ok().clone();
    let linked = on["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["memory"] == "Anna works at Globex")
        .unwrap_or_else(|| panic!("expansion reaches Globex: {on}"));
    assert!(
        linked["scores"]["graph"].as_f64().unwrap() > 0.0 || linked["scores"]["bm25"].is_number()
    );
    let off = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(search(json!({"expand": false}))),
    )
    .await;
    assert!(
        off.ok()["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["scores"]["graph"] == 0.0),
        "{}",
        off.text
    );
    assert_ne!(texts(&on), Vec::<String>::new());
    for bad in [
        json!({"hops": 0}),
        json!({"hops": 4}),
        json!({"rerank": true}),
        json!({"rerank_top_n": 5}),
    ] {
        call(
            app,
            "POST",
            "/v1/memories/search",
            Some(KEY_A),
            Some(search(bad.clone())),
        )
        .await
        .assert_error(400, "invalid_input");
    }
}

#[tokio::test]
async fn a_configured_reranker_reorders_and_reports_or_steps_aside() {
    // Scores rising with the index; a query holding "slow" waits past the timeout.
    let tei = StubServer::start(|_, req| {
        let n = req.body["texts"].as_array().map_or(0, Vec::len);
        let list: Vec<Value> = (0..n)
            .map(|i| json!({"index": i, "score": i as f64}))
            .collect();
        let delay = if req.body["query"].as_str().unwrap_or("").contains("slow") {
            800
        } else {
            0
        };
        Response::new(200, Value::Array(list)).after(Duration::from_millis(delay))
    });
    let cfg = RerankConfig {
        kind: RerankKind::Http,
        url: Some(tei.base_url()),
        format: RerankFormat::Tei,
        top_n: 3,
        timeout_ms: Some(300),
        ..RerankConfig::default()
    };
    let stage = cfg.build(None).unwrap();
    let s = server_from(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        None,
        move |m| m.with_reranker(stage),
    );
    let app = &s.app;
    write(
        app,
        KEY_A,
        "ann",
        &[
            "My dog Rex likes the beach",
            "The dog park opens at nine",
            "I walk the dog before work",
        ],
    )
    .await;
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap().into())
            .collect()
    };
    let body = |q: &str, extra: Value| {
        let mut b = json!({"query": q, "user_id": "ann", "top_k": 3});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let fused = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(body("dog", json!({"rerank": false}))),
    )
    .await;
    assert!(fused.ok().get("rerank").is_none(), "{}", fused.text);
    let fused = ids(fused.ok());

    let r = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(body("dog", json!({}))),
    )
    .await;
    let v = r.ok();
    assert_eq!(v["rerank"]["status"], "reranked", "{}", r.text);
    assert_eq!(v["rerank"]["candidates"], 3);
    assert!(v["rerank"]["reranker"]
        .as_str()
        .unwrap()
        .starts_with("http tei "));
    let mut reversed = fused.clone();
    reversed.reverse();
    assert_eq!(ids(v), reversed);
    assert_eq!(
        v["results"][0]["scores"]["rerank"],
        json!({"score": 2.0, "fused_position": 3, "position": 1})
    );

    let slow = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(body("slow dog", json!({}))),
    )
    .await;
    let v = slow.ok();
    assert_eq!(v["rerank"]["status"], "timed_out", "{}", slow.text);
    assert!(v["rerank"]["error"].as_str().unwrap().contains("300 ms"));
    assert!(v["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["scores"].get("rerank").is_none()));

    call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(body("dog", json!({"rerank_top_n": 201}))),
    )
    .await
    .assert_error(400, "invalid_input");
}
