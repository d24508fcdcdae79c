#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `memloop mcp`: the real binary as an MCP client starts it (a child
//! process on stdin/stdout), driven by rmcp's client; and stdout checked to
//! carry nothing but JSON-RPC.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::ServerSink;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_memloop");

fn command(dir: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(dir)
        .arg("mcp")
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("MEMLOOP_SHORT_TERM")
        .env_remove("MEMLOOP_LLM_PROVIDER");
    cmd
}

async fn call(client: &ServerSink, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap()
}

async fn ok(client: &ServerSink, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args.clone()).await;
    assert_ne!(r.is_error, Some(true), "{tool} {args} failed: {r:?}");
    r.structured_content.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_every_tool_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let client = ClientConfig::default()
        .serve(TokioChildProcess::new(command(dir.path())).unwrap())
        .await
        .unwrap();
    let c = client.peer();

    let mut names: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "memory_add",
            "memory_context",
            "memory_entities",
            "memory_forget",
            "memory_get",
            "memory_history",
            "memory_links",
            "memory_record_procedure",
            "memory_record_turn",
            "memory_remember",
            "memory_search",
            "memory_search_procedures",
            "memory_sessions"
        ]
    );

    let added = ok(
        c,
        "memory_add",
        json!({"text": "I'm vegetarian and allergic to peanuts", "user_id": "alice"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    let found = ok(
        c,
        "memory_search",
        json!({"query": "what food should I avoid?", "user_id": "alice"}),
    )
    .await;
    assert_eq!(found["results"][0]["id"], id.as_str(), "{found}");

    let paris = ok(
        c,
        "memory_remember",
        json!({"text": "I live in Paris", "user_id": "alice"}),
    )
    .await;
    assert!(
        paris["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "ADD" && e["memory"] == "User lives in Paris"),
        "{paris}"
    );

    let got = ok(c, "memory_get", json!({"id": id})).await;
    assert_eq!(got["memory"], "I'm vegetarian and allergic to peanuts");
    let history = ok(c, "memory_history", json!({"id": id})).await;
    assert_eq!(history["results"][0]["event"], "ADD");

    let ctx = ok(
        c,
        "memory_context",
        json!({"input": "Which foods should I avoid?", "user_id": "alice", "session_id": "s1"}),
    )
    .await;
    assert!(
        ctx["system"]
            .as_str()
            .unwrap()
            .contains("allergic to peanuts"),
        "{ctx}"
    );

    let missing = call(c, "memory_get", json!({"id": "no-such-id"})).await;
    assert_eq!(missing.is_error, Some(true));
    let text = &missing.content[0].as_text().unwrap().text;
    assert!(
        text.contains("not_found") && text.contains("no-such-id"),
        "{text}"
    );

    let forgot = ok(c, "memory_forget", json!({"user_id": "alice"})).await;
    assert!(
        forgot["memories_deleted"].as_u64().unwrap() >= 2,
        "{forgot}"
    );
    let after = ok(
        c,
        "memory_search",
        json!({"query": "peanuts", "user_id": "alice"}),
    )
    .await;
    assert_eq!(after["results"], json!([]));

    client.cancel().await.unwrap();
}

/// A loopback port where nothing listens (bound, then released).
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// With the configured Redis down, `memloop mcp` still starts and serves
/// the long-term tools; `memory_context`, which needs the short-term
/// buffer, is a tool error naming Redis and its address, not its password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_starts_and_serves_without_redis() {
    let dir = tempfile::tempdir().unwrap();
    let port = dead_port();
    let mut cmd = command(dir.path());
    cmd.env(
        "MEMLOOP_SHORT_TERM",
        format!("redis://:hunter2-secret@127.0.0.1:{port}/0"),
    );
    let client = ClientConfig::default()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .expect("memloop mcp starts while Redis is down");
    let c = client.peer();

    let added = ok(
        c,
        "memory_add",
        json!({"text": "I'm vegetarian and allergic to peanuts", "user_id": "alice"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    let found = ok(
        c,
        "memory_search",
        json!({"query": "what food should I avoid?", "user_id": "alice"}),
    )
    .await;
    assert_eq!(found["results"][0]["id"], id.as_str(), "{found}");

    // Twice: the second call falls in the window where the failure is
    // remembered rather than retried, and must read the same.
    for _ in 0..2 {
        let r = call(
            c,
            "memory_context",
            json!({"input": "Which foods should I avoid?", "user_id": "alice", "session_id": "s1"}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        let e = &r.structured_content.as_ref().unwrap()["error"];
        assert_eq!(e["code"], "remote_unavailable", "{e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("Redis at redis://127.0.0.1:{port}/0")),
            "{message}"
        );
        let text = &r.content[0].as_text().unwrap().text;
        assert!(
            !text.contains("hunter2") && !message.contains("hunter2"),
            "{text}"
        );
    }

    // The long-term store kept working throughout.
    let got = ok(c, "memory_get", json!({"id": id})).await;
    assert_eq!(got["memory"], "I'm vegetarian and allergic to peanuts");

    client.cancel().await.unwrap();
}

/// A client that reads stdout line by line gets JSON-RPC and nothing else,
/// and closing stdin ends the server cleanly.
#[test]
fn stdout_carries_only_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .arg("mcp")
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let send = |stdin: &mut std::process::ChildStdin, v: Value| writeln!(stdin, "{v}").unwrap();
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"))
    };

    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    let init = read();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "memloop");
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_add", "arguments": {"text": "Likes green tea", "user_id": "u"}}}),
    );
    let added = read();
    assert_eq!(added["id"], 2);
    assert_eq!(
        added["result"]["structuredContent"]["results"][0]["event"],
        "ADD"
    );
    drop(stdin);

    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "nothing after the replies: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}
