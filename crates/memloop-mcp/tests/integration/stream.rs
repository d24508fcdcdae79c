//! The server on an in-process byte stream: the framing stdio carries,
//! without a process in between.

use memloop_mcp::rmcp::model::ClientConfig;
use memloop_mcp::rmcp::ServiceExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_over_a_byte_stream() {
    let dir = tempfile::tempdir().unwrap();
    let tools = crate::tools(dir.path());
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        let running = tools.serve(server_io).await.unwrap();
        running.waiting().await.unwrap();
    });
    let client = ClientConfig::default().serve(client_io).await.unwrap();
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
