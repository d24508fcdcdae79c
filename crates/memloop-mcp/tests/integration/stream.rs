//! The server on an in-process byte stream: the framing stdio carries,
//! without a process in between.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_over_a_byte_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(info.server_info.as_ref().unwrap().name, "memloop");
    assert!(info
        .instructions
        .as_deref()
        .unwrap()
        .contains("memory_search"));

    crate::exercise(client.peer(), "alice").await;

    client.cancel().await.unwrap();
    server.await.unwrap();
}

/// Ids that cannot be memloop's (5,000 bytes, a NUL) are the caller's
/// error, answered before the store is asked, with a short escaped echo
/// rather than the whole id; an unknown id's not-found echoes it the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_ids_are_invalid_input_with_a_short_message() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = crate::connect(dir.path()).await;
    let c = client.peer();

    let long = "x".repeat(5000);
    for tool in ["memory_get", "memory_history"] {
        for id in [long.as_str(), "abc\u{0}def"] {
            let (code, message) = crate::tool_error(c, tool, serde_json::json!({ "id": id })).await;
            assert_eq!(code, "invalid_input", "{tool}: {message}");
            assert!(
                message.len() < 300,
                "{tool}: {} bytes: {message}",
                message.len()
            );
            assert!(message.contains("not a memory id"), "{message}");
            assert!(!message.contains('\0'), "{message:?}");
        }
    }
    let (_, message) = crate::tool_error(c, "memory_get", serde_json::json!({ "id": long })).await;
    assert!(message.contains("(5000 bytes)"), "{message}");
    let (_, message) =
        crate::tool_error(c, "memory_get", serde_json::json!({ "id": "abc\u{0}def" })).await;
    assert!(message.contains(r#""abc\0def""#), "{message}");

    // Valid but unknown, and long: not found, still echoed short.
    let unknown = "y".repeat(256);
    let (code, message) =
        crate::tool_error(c, "memory_get", serde_json::json!({ "id": unknown })).await;
    assert_eq!(code, "not_found");
    assert!(message.len() < 300, "{message}");
    assert!(message.contains("(256 bytes)"), "{message}");

    client.cancel().await.unwrap();
    server.await.unwrap();
}
