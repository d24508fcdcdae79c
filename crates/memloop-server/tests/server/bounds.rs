//! The short-term buffer's bounds as `memloop serve` without Redis shows
//! them: a long session trimmed, an idle one expired, the budget keeping
//! the total, each in `/metrics`. The clock is moved, never waited on.

use std::sync::Arc;

use memloop::time::Clock;
use memloop::{InProcessBuffer, LoopConfig, Memory, MemoryLoop, ShortTermLimits, StoreOptions};
use memloop_server::{AppState, ServerConfig};
use serde_json::json;

use crate::{call, embedder, keys_ab, KEY_A, KEY_B};

fn server(limits: ShortTermLimits, clock: &Clock) -> (axum::Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let memory =
        Arc::new(Memory::with_embedder(dir.path(), embedder(), StoreOptions::default()).unwrap());
    let buffer = InProcessBuffer::with_limits(limits).with_clock(clock.clone());
    let lp = MemoryLoop::new(memory, Arc::new(buffer), LoopConfig::default()).unwrap();
    let state = AppState::new(
        lp,
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
    );
    (memloop_server::router(state), dir)
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_long_session_is_trimmed_and_an_idle_one_expires() {
    let clock = Clock::manual(1_800_000_000_000);
    let limits = ShortTermLimits {
        max_turns_stored: 20,
        ttl_secs: 2,
        max_bytes: 1 << 20,
    };
    let (app, _dir) = server(limits, &clock);
    for i in 0..50 {
        let a = call(
            &app,
            "POST",
            "/v1/sessions/s1/messages",
            Some(KEY_A),
            Some(json!({"messages": format!("message {i}"), "user_id": "alice"})),
        )
        .await;
        assert_eq!(a.ok()["turns"], (i + 1).min(20));
    }
    let g = call(&app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    let body = g.ok();
    assert_eq!(body["turns"].as_array().unwrap().len(), 20);
    assert_eq!(body["turns"][0]["content"], "message 30");
    assert_eq!(body["turns_dropped"], 30);
    // Another tenant's session of the same id is its own.
    let other = call(&app, "GET", "/v1/sessions/s1", Some(KEY_B), None).await;
    assert!(other.ok()["turns"].as_array().unwrap().is_empty());

    let m = call(&app, "GET", "/metrics", Some(KEY_A), None).await;
    assert_eq!(metric(&m.text, "memloop_short_term_sessions"), 1);
    assert_eq!(metric(&m.text, "memloop_short_term_turns"), 20);
    assert_eq!(
        metric(&m.text, "memloop_short_term_trimmed_turns_total"),
        30
    );
    assert!(metric(&m.text, "memloop_short_term_bytes") > 20 * 10);

    // ttl_secs = 2, then 2 s idle: gone, and counted.
    clock.advance(2_000).unwrap();
    let g = call(&app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    assert!(g.ok()["turns"].as_array().unwrap().is_empty());
    assert!(g.body["summary"].is_null());
    let m = call(&app, "GET", "/metrics", Some(KEY_A), None).await;
    assert_eq!(metric(&m.text, "memloop_short_term_sessions"), 0);
    assert_eq!(metric(&m.text, "memloop_short_term_bytes"), 0);
    assert_eq!(metric(&m.text, "memloop_short_term_expirations_total"), 1);
    assert_eq!(metric(&m.text, "memloop_short_term_evictions_total"), 0);
}

#[tokio::test]
async fn the_byte_budget_holds_under_many_sessions() {
    let clock = Clock::manual(1_800_000_000_000);
    let limits = ShortTermLimits {
        max_turns_stored: 200,
        ttl_secs: 0,
        max_bytes: 1 << 20,
    };
    let (app, _dir) = server(limits, &clock);
    let kb = "k".repeat(1_000);
    for s in 0..300 {
        clock.advance(1).unwrap();
        let messages: Vec<_> = (0..10)
            .map(|i| json!({"role": "user", "content": format!("{s} {i} {kb}")}))
            .collect();
        call(
            &app,
            "POST",
            &format!("/v1/sessions/s{s}/messages"),
            Some(KEY_A),
            Some(json!({ "messages": messages })),
        )
        .await
        .ok();
    }
    let m = call(&app, "GET", "/metrics", Some(KEY_A), None).await;
    let bytes = metric(&m.text, "memloop_short_term_bytes");
    assert!(bytes <= 1 << 20, "{bytes}");
    let evicted = metric(&m.text, "memloop_short_term_evictions_total");
    let held = metric(&m.text, "memloop_short_term_sessions");
    assert_eq!(evicted + held, 300);
    assert!(evicted > 0);
    // The newest session stays whole; the oldest went.
    let newest = call(&app, "GET", "/v1/sessions/s299", Some(KEY_A), None).await;
    assert_eq!(newest.ok()["turns"].as_array().unwrap().len(), 10);
    let oldest = call(&app, "GET", "/v1/sessions/s0", Some(KEY_A), None).await;
    assert!(oldest.ok()["turns"].as_array().unwrap().is_empty());
}
