//! memory_add takes a TTL: the memory's expiry is set from it, and a bad
//! one is a tool error saying what to write; once it passes (a manual
//! clock), memory_get answers as for a deleted memory.

use std::sync::Arc;

use memloop::time::Clock;
use memloop::{InProcessBuffer, LoopConfig, Memory, MemoryLoop, StoreOptions};
use memloop_mcp::MemoryTools;
use serde_json::json;

use crate::{ok, tool_error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_get_answers_an_expired_memory_as_not_found_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(1_772_323_200_000);
    let options = StoreOptions::default().with_clock(clock.clone());
    let memory = Memory::with_embedder(dir.path(), crate::embedder(), options).unwrap();
    let lp = MemoryLoop::new(
        Arc::new(memory),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let (client, server) = crate::connect_to(MemoryTools::new(lp)).await;
    let added = ok(
        client.peer(),
        "memory_add",
        json!({"text": "The hotel wifi password is tulip42", "user_id": "carol", "ttl": "1d"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        ok(client.peer(), "memory_get", json!({"id": id})).await["status"],
        "current"
    );
    clock.advance(86_400_000).unwrap();
    let (code, message) = tool_error(client.peer(), "memory_get", json!({"id": id})).await;
    assert_eq!(code, "not_found");
    assert!(message.contains("expired at"), "{message}");
    assert!(message.contains("include_deleted"), "{message}");
    let got = ok(
        client.peer(),
        "memory_get",
        json!({"id": id, "include_deleted": true}),
    )
    .await;
    assert_eq!(got["status"], "expired", "{got}");
    client.cancel().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_add_sets_the_ttl_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let before = memloop::now_millis();
    let added = ok(
        client.peer(),
        "memory_add",
        json!({"text": "The hotel wifi password is tulip42", "user_id": "carol", "ttl": "2d"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap();
    let got = ok(client.peer(), "memory_get", json!({"id": id})).await;
    let at = memloop::filter::parse_date(got["expires_at"].as_str().unwrap()).unwrap();
    let two_days = 2 * 86_400_000;
    assert!(
        (before + two_days..=memloop::now_millis() + two_days).contains(&at),
        "{got}"
    );
    // Without one, a fact is kept.
    let added = ok(
        client.peer(),
        "memory_add",
        json!({"text": "Carol is allergic to peanuts", "user_id": "carol"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap();
    let got = ok(client.peer(), "memory_get", json!({"id": id})).await;
    assert!(got["expires_at"].is_null(), "{got}");
    let (code, message) = tool_error(
        client.peer(),
        "memory_add",
        json!({"text": "x y z", "user_id": "carol", "ttl": "6 months"}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(
        message.contains("ttl") && message.contains("7d"),
        "{message}"
    );
    client.cancel().await.unwrap();
    server.await.unwrap();
}
