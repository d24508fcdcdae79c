//! Past conversations written with a `timestamp` (memory_add,
//! memory_remember) and listed on the time axis by memory_sessions.

use serde_json::json;

use crate::{ok, tool_error};

/// 2023-05-08T00:00:00Z in Unix seconds.
const MAY_8: i64 = 1_683_504_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamped_writes_are_listed_by_memory_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let c = client.peer();
    // Newest first; Unix seconds and RFC 3339 dates.
    let added = ok(
        c,
        "memory_add",
        json!({"text": "We booked the ferry to Capri", "user_id": "dora",
               "session_id": "s2", "timestamp": MAY_8 + 7 * 86_400}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    let got = ok(c, "memory_get", json!({"id": id})).await;
    assert_eq!(got["valid_from"], "2023-05-15T00:00:00.000Z", "{got}");
    let remembered = ok(
        c,
        "memory_remember",
        json!({"text": "I work as a pharmacist in Turin.", "user_id": "dora",
               "session_id": "s1", "timestamp": "2023-05-08", "skip_gate": true}),
    )
    .await;
    let events = remembered["results"].as_array().unwrap();
    assert!(!events.is_empty(), "{remembered}");
    for e in events {
        let got = ok(c, "memory_get", json!({"id": e["id"]})).await;
        assert_eq!(got["valid_from"], "2023-05-08T00:00:00.000Z", "{got}");
    }
    let listed = ok(c, "memory_sessions", json!({"user_id": "dora"})).await;
    let sessions = listed["sessions"].as_array().unwrap();
    let got: Vec<(&str, u64, &str)> = sessions
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap(),
                s["ordinal"].as_u64().unwrap(),
                s["started_at"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("s2", 2, "2023-05-15T00:00:00.000Z"),
            ("s1", 1, "2023-05-08T00:00:00.000Z"),
        ],
        "{listed}"
    );
    assert_eq!(sessions[0]["memories"], 1);
    assert_eq!(
        sessions[1]["memories"].as_u64().unwrap() as usize,
        events.len()
    );
    let other = ok(c, "memory_sessions", json!({"user_id": "someone-else"})).await;
    assert_eq!(other["sessions"], json!([]));
    let (code, message) = tool_error(
        c,
        "memory_add",
        json!({"text": "x y z", "user_id": "dora", "timestamp": "next friday"}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(message.contains("timestamp"), "{message}");
    client.cancel().await.unwrap();
    server.await.unwrap();
}
