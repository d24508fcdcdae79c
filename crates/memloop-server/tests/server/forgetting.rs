//! TTLs through REST: `ttl` ("30d") or `expires_at` in an add body, each
//! kind's default TTL otherwise, expiry seen by search, get and every
//! count at once, and the sweeper's runs in `/metrics`. The store runs on
//! a manual clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memloop::time::Clock;
use memloop::{InProcessBuffer, LoopConfig, Memory, MemoryLoop, StoreOptions};
use memloop_server::{AppState, ServerConfig};
use serde_json::json;

use crate::*;

const DAY: i64 = 86_400_000;
/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

fn server_at(clock: &Clock) -> (Router, tempfile::TempDir) {
    server_sweeping(clock, None)
}

/// A server whose store sweeps every `sweep` (None: never).
fn server_sweeping(clock: &Clock, sweep: Option<Duration>) -> (Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default().with_clock(clock.clone());
    let mut memory = Memory::with_embedder(dir.path(), embedder(), options).unwrap();
    if let Some(every) = sweep {
        memory = memory.with_sweeper(every).unwrap();
    }
    let memory = Arc::new(memory);
    let lp = MemoryLoop::new(
        memory,
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let state = AppState::new(lp, ServerConfig::default());
    (memloop_server::router(state), dir)
}

async fn add(app: &Router, body: serde_json::Value) -> Answer {
    call(app, "POST", "/v1/memories", None, Some(body)).await
}

async fn expires_at(app: &Router, id: &str) -> serde_json::Value {
    let got = call(app, "GET", &format!("/v1/memories/{id}"), None, None).await;
    got.ok()["expires_at"].clone()
}

#[tokio::test]
async fn an_add_sets_its_ttl_or_gets_its_kinds_default() {
    let clock = Clock::manual(T0);
    let (app, _dir) = server_at(&clock);
    let a = add(
        &app,
        json!({"messages": "The hotel wifi password is tulip42", "user_id": "carol",
               "infer": false, "ttl": "2d"}),
    )
    .await;
    let short = a.ok()["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(expires_at(&app, &short).await, "2026-03-03T00:00:00.000Z");
    let a = add(
        &app,
        json!({"messages": "Carol's passport expires in June", "user_id": "carol",
               "infer": false, "expires_at": "2026-06-30T00:00:00Z"}),
    )
    .await;
    let id = a.ok()["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(expires_at(&app, &id).await, "2026-06-30T00:00:00.000Z");
    let a = add(
        &app,
        json!({"messages": "We chatted about the weather", "user_id": "carol",
               "infer": false, "kind": "episode"}),
    )
    .await;
    let id = a.ok()["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(expires_at(&app, &id).await, "2026-08-28T00:00:00.000Z");
    let a = add(
        &app,
        json!({"messages": "Carol is allergic to peanuts", "user_id": "carol", "infer": false}),
    )
    .await;
    let id = a.ok()["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(expires_at(&app, &id).await, serde_json::Value::Null);

    // Expired: search no longer finds it, at once.
    let search = json!({"query": "wifi password", "user_id": "carol"});
    let found = call(
        &app,
        "POST",
        "/v1/memories/search",
        None,
        Some(search.clone()),
    )
    .await;
    assert_eq!(found.ok()["results"][0]["id"], short.as_str());
    clock.advance(2 * DAY).unwrap();
    let found = call(&app, "POST", "/v1/memories/search", None, Some(search)).await;
    let results = found.ok()["results"].as_array().unwrap();
    assert!(
        results.iter().all(|r| r["id"] != short.as_str()),
        "{}",
        found.text
    );
}

#[tokio::test]
async fn bad_ttls_are_refused_saying_what_to_send() {
    let clock = Clock::manual(T0);
    let (app, _dir) = server_at(&clock);
    for (body, words) in [
        (
            json!({"messages": "x y z", "user_id": "c", "infer": false, "ttl": "6 months"}),
            "ttl",
        ),
        (
            json!({"messages": "x y z", "user_id": "c", "infer": false, "ttl": "1d",
                   "expires_at": "2026-06-30T00:00:00Z"}),
            "not both",
        ),
    ] {
        let a = add(&app, body.clone()).await;
        a.assert_error(400, "invalid_input");
        let message = a.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{body}: {message}");
    }
}

#[tokio::test]
async fn a_ttl_with_infer_reaches_the_episode_and_every_fact() {
    let clock = Clock::manual(T0);
    let (app, _dir) = server_at(&clock);
    let a = add(
        &app,
        json!({"messages": "I live in Paris and work as a nurse.", "user_id": "carol",
               "session_id": "trip", "ttl": "3d"}),
    )
    .await;
    let results = a.ok()["results"].as_array().unwrap().clone();
    let kinds: Vec<&str> = results.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"episode") && kinds.contains(&"fact"),
        "{}",
        a.text
    );
    for r in &results {
        let id = r["id"].as_str().unwrap();
        assert_eq!(
            expires_at(&app, id).await,
            "2026-03-04T00:00:00.000Z",
            "{r}"
        );
    }
    // Past it, none of them is found.
    clock.advance(3 * DAY).unwrap();
    let found = call(
        &app,
        "POST",
        "/v1/memories/search",
        None,
        Some(json!({"query": "where does carol live", "user_id": "carol"})),
    )
    .await;
    assert_eq!(found.ok()["results"], json!([]), "{}", found.text);
}

/// The one line of `/metrics` that starts with `name ` (or `name{…} `).
fn metric(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .map(|l| l[name.len() + 1..].to_string())
}

#[tokio::test]
async fn an_expired_memory_is_a_404_until_asked_for_and_no_count_holds_it() {
    let clock = Clock::manual(T0);
    let (app, _dir) = server_at(&clock);
    let a = add(
        &app,
        json!({"messages": "The hotel wifi password is tulip42", "user_id": "carol",
               "infer": false, "ttl": "1d"}),
    )
    .await;
    let short = a.ok()["results"][0]["id"].as_str().unwrap().to_string();
    add(
        &app,
        json!({"messages": "Carol keeps bees", "user_id": "carol", "infer": false}),
    )
    .await
    .ok();
    clock.advance(DAY).unwrap();

    let got = call(&app, "GET", &format!("/v1/memories/{short}"), None, None).await;
    got.assert_error(404, "not_found");
    let message = got.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("expired at"), "{message}");
    let past = call(
        &app,
        "GET",
        &format!("/v1/memories/{short}?include_deleted=true"),
        None,
        None,
    )
    .await;
    assert_eq!(past.ok()["status"], "expired", "{}", past.text);

    let listed = call(&app, "GET", "/v1/memories?user_id=carol", None, None).await;
    let results = listed.ok()["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{}", listed.text);
    let page = call(
        &app,
        "POST",
        "/v3/memories?page=1&page_size=10",
        None,
        Some(json!({"filters": {"user_id": "carol"}})),
    )
    .await;
    assert_eq!(page.ok()["count"], 1, "{}", page.text);
    let users = call(&app, "GET", "/v1/entities", None, None).await;
    assert_eq!(
        users.ok()["results"][0]["total_memories"],
        1,
        "{}",
        users.text
    );
    let metrics = call(&app, "GET", "/metrics", None, None).await;
    assert_eq!(
        metric(&metrics.text, "memloop_memories{state=\"current\"}").as_deref(),
        Some("1")
    );
    assert_eq!(
        metric(&metrics.text, "memloop_memories{state=\"expired\"}").as_deref(),
        Some("1")
    );
    // No sweeper in this server: no sweep figures.
    assert!(
        !metrics.text.contains("memloop_long_term_sweep"),
        "{}",
        metrics.text
    );
}

#[tokio::test]
async fn the_sweep_deletes_what_expired_and_metrics_show_when_and_how_many() {
    let clock = Clock::manual(T0);
    let (app, _dir) = server_sweeping(&clock, Some(Duration::from_millis(20)));
    for text in ["The gate code is 7781", "The locker code is 1234"] {
        add(
            &app,
            json!({"messages": text, "user_id": "carol", "infer": false, "ttl": "1d"}),
        )
        .await
        .ok();
    }
    clock.advance(DAY).unwrap();
    let start = Instant::now();
    let text = loop {
        let metrics = call(&app, "GET", "/metrics", None, None).await;
        if metric(&metrics.text, "memloop_long_term_sweep_expired_total").as_deref() == Some("2") {
            break metrics.text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no sweep: {}",
            metrics.text
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let last = (T0 + DAY) / 1000;
    assert_eq!(
        metric(&text, "memloop_long_term_sweep_last_run_timestamp_seconds"),
        Some(last.to_string()),
        "{text}"
    );
    assert_eq!(
        metric(&text, "memloop_long_term_sweep_interval_seconds").as_deref(),
        Some("0.02")
    );
    assert_eq!(
        metric(&text, "memloop_long_term_sweep_failures_total").as_deref(),
        Some("0")
    );
    assert_eq!(
        metric(&text, "memloop_memories{state=\"expired\"}").as_deref(),
        Some("0")
    );
}
