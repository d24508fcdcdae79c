//! memory_record_turn: an exchange run by the caller's own model, written
//! once per turn id, both sides in the episode, facts attributed by side.

use memloop_mcp::rmcp::model::ClientConfig;
use memloop_mcp::rmcp::ServiceExt;
use serde_json::json;

use crate::{ok, tool_error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_is_recorded_once_per_turn_id() {
    let dir = tempfile::tempdir().unwrap();
    let tools = crate::tools(dir.path());
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        let running = tools.serve(server_io).await.unwrap();
        running.waiting().await.unwrap();
    });
    let client = ClientConfig::default().serve(client_io).await.unwrap();
    let c = client.peer();
    let args = json!({
        "user_id": "ana", "session_id": "s1", "turn_id": "hook-9",
        "messages": [
            {"role": "user", "content": "I work as a nurse in Porto."},
            {"role": "assistant", "content": "Noted. I can't eat peanuts either."}
        ]
    });
    let first = ok(c, "memory_record_turn", args.clone()).await;
    assert_eq!(first["turn_id"], "hook-9");
    assert_eq!(first["replayed"], false);
    let writes = first["writes"].as_array().unwrap();
    assert!(writes
        .iter()
        .any(|w| w["kind"] == "episode"
            && w["memory"].as_str().unwrap().contains("Assistant: Noted.")));
    let facts: Vec<_> = writes.iter().filter(|w| w["kind"] == "fact").collect();
    assert!(!facts.is_empty(), "{first}");
    assert!(facts.iter().all(|f| f["role"] == "user"), "{facts:?}");
    let again = ok(c, "memory_record_turn", args).await;
    assert_eq!(again["replayed"], true);
    assert!(again["writes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["event"] == "NOOP"));
    let (code, message) = tool_error(
        c,
        "memory_record_turn",
        json!({"user_id": "ana", "session_id": "s1", "messages": []}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(message.contains("at least one message"), "{message}");
    client.cancel().await.unwrap();
    server.await.unwrap();
}
