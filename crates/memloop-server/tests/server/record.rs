//! `POST /v1/turn/record`: an exchange run by the caller's own model,
//! written once per turn id, both sides kept, facts attributed by side;
//! and `POST /v1/turn` naming each side's gate and writes.

use std::sync::Arc;

use memloop_server::ServerConfig;
use serde_json::json;

use crate::{call, keys_ab, server, server_with, StubLlm, KEY_A, KEY_B};

#[tokio::test]
async fn an_exchange_is_recorded_once_per_turn_id_in_the_callers_tenant() {
    let s = server();
    let body = json!({
        "user_id": "ana", "run_id": "s1", "turn_id": "hook-1",
        "timestamp": "2026-11-30T09:15:00Z",
        "messages": [
            {"role": "user", "content": "I moved to Porto last week."},
            {"role": "assistant", "content": "Porto is lovely; I can't eat peanuts either."}
        ]
    });
    let a = call(
        &s.app,
        "POST",
        "/v1/turn/record",
        Some(KEY_A),
        Some(body.clone()),
    )
    .await;
    let r = a.ok();
    assert_eq!(r["turn_id"], "hook-1");
    assert_eq!(r["replayed"], false);
    assert_eq!(r["gate"]["persist"], true, "{r}");
    let writes = r["writes"].as_array().unwrap();
    let episode = writes.iter().find(|w| w["kind"] == "episode").unwrap();
    assert!(episode["memory"]
        .as_str()
        .unwrap()
        .contains("Assistant: Porto is lovely"));
    assert!(
        episode.get("role").is_none(),
        "the episode holds both sides"
    );
    let facts: Vec<_> = writes.iter().filter(|w| w["kind"] == "fact").collect();
    assert!(!facts.is_empty(), "{r}");
    assert!(facts.iter().all(|f| f["role"] == "user"), "{facts:?}");
    assert!(!facts
        .iter()
        .any(|f| f["memory"].as_str().unwrap().contains("peanuts")));
    let gates = r["trace"]["gates"].as_array().unwrap();
    assert_eq!(gates[0]["role"], "user");
    assert_eq!(gates[1]["role"], "assistant");
    assert_eq!(r["trace"]["recorded"], true);
    // The episode keeps the caller's time.
    let id = episode["id"].as_str().unwrap();
    let got = call(
        &s.app,
        "GET",
        &format!("/v1/memories/{id}"),
        Some(KEY_A),
        None,
    )
    .await;
    assert!(
        got.ok()["valid_from"]
            .as_str()
            .unwrap()
            .starts_with("2026-11-30T09:15"),
        "{}",
        got.text
    );

    // A retried hook: nothing written twice.
    let again = call(
        &s.app,
        "POST",
        "/v1/turn/record",
        Some(KEY_A),
        Some(body.clone()),
    )
    .await;
    let r = again.ok();
    assert_eq!(r["replayed"], true);
    assert!(
        r["writes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["event"] == "NOOP"),
        "{r}"
    );
    let session = call(&s.app, "GET", "/v1/sessions/s1", Some(KEY_A), None).await;
    assert_eq!(session.ok()["turns"].as_array().unwrap().len(), 2);

    // Another tenant's same ids are its own: nothing of alpha's is seen.
    let b = call(&s.app, "POST", "/v1/turn/record", Some(KEY_B), Some(body)).await;
    assert_eq!(b.ok()["replayed"], false);
    let list = call(&s.app, "GET", "/v1/memories?user_id=ana", Some(KEY_B), None).await;
    let n_b = list.ok()["results"].as_array().unwrap().len();
    assert_eq!(n_b, writes.len(), "{}", list.text);
}

#[tokio::test]
async fn bad_exchanges_say_what_to_send() {
    let s = server();
    for (body, says) in [
        (
            json!({"user_id": "u", "messages": [{"role": "user", "content": "hi"}]}),
            "run_id",
        ),
        (
            json!({"user_id": "u", "run_id": "s", "messages": []}),
            "at least one message",
        ),
        (
            json!({"user_id": "u", "run_id": "s", "messages": [{"role": "robot", "content": "x"}]}),
            "unknown role",
        ),
        (
            json!({"user_id": "u", "run_id": "s", "timestamp": "yesterday",
                "messages": [{"role": "user", "content": "x"}]}),
            "timestamp",
        ),
        (
            json!({"user_id": "u", "run_id": "s", "turn_id": "a\u{0}b",
                "messages": [{"role": "user", "content": "x"}]}),
            "turn id",
        ),
    ] {
        let a = call(&s.app, "POST", "/v1/turn/record", Some(KEY_A), Some(body)).await;
        a.assert_error(400, "invalid_input");
        let msg = a.body["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{msg}");
    }
}

#[tokio::test]
async fn a_turn_names_each_sides_gate() {
    let s = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        Some(Arc::new(StubLlm::replying("Glad to hear it."))),
    );
    let body = json!({"input": "I adopted a cat named Miso.", "user_id": "u", "run_id": "s"});
    let a = call(&s.app, "POST", "/v1/turn", Some(KEY_A), Some(body)).await;
    let trace = &a.ok()["trace"];
    let gates = trace["gates"].as_array().unwrap();
    assert_eq!(gates.len(), 2, "{trace}");
    assert_eq!(
        (gates[0]["role"].as_str(), gates[0]["persist"].as_bool()),
        (Some("user"), Some(true))
    );
    assert_eq!(gates[1]["role"], "assistant");
    let episode = trace["writes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "episode")
        .unwrap();
    assert_eq!(
        episode["memory"],
        "User: I adopted a cat named Miso.\nAssistant: Glad to hear it."
    );
}
