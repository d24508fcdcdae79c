//! The scope arrives through the one shared set of fields (`ScopeArgs`):
//! each tool's input schema shows user_id required and agent_id /
//! session_id optional, and a call naming an agent or a session narrows.

use std::collections::BTreeSet;

use memloop_mcp::rmcp::model::ClientConfig;
use memloop_mcp::rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::{ok, tool_error, Client};

async fn connect(dir: &std::path::Path) -> (Client, tokio::task::JoinHandle<()>) {
    let tools = crate::tools(dir);
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        let running = tools.serve(server_io).await.unwrap();
        running.waiting().await.unwrap();
    });
    (
        ClientConfig::default().serve(client_io).await.unwrap(),
        server,
    )
}

fn names(v: &Value) -> BTreeSet<String> {
    match v {
        Value::Array(a) => a.iter().map(|n| n.as_str().unwrap().to_string()).collect(),
        Value::Object(o) => o.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scoped_tool_shows_the_scope_fields_in_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    // The tool's own required arguments, besides user_id.
    for (tool, own) in [
        ("memory_search", &["query"][..]),
        ("memory_add", &["text"][..]),
        ("memory_remember", &["text"][..]),
        ("memory_forget", &[][..]),
        ("memory_sessions", &[][..]),
        ("memory_context", &["input", "session_id"][..]),
    ] {
        let t = tools
            .iter()
            .find(|t| t.name == tool)
            .unwrap_or_else(|| panic!("no {tool}"));
        let schema = Value::Object((*t.input_schema).clone());
        assert_eq!(schema["type"], "object", "{tool}: {schema}");
        let properties = &schema["properties"];
        for field in ["user_id", "agent_id", "session_id"] {
            let description = properties[field]["description"].as_str();
            assert!(
                description.is_some_and(|d| !d.is_empty()),
                "{tool}.{field}: {schema}"
            );
        }
        let mut want: BTreeSet<String> = own.iter().map(|s| s.to_string()).collect();
        want.insert("user_id".into());
        assert_eq!(names(&schema["required"]), want, "{tool}: {schema}");
        // Flattened, not nested: no `scope` object, no borrowed description.
        assert!(!names(properties).contains("scope"), "{tool}: {schema}");
        assert!(schema.get("description").is_none(), "{tool}: {schema}");
    }
    client.cancel().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_id_and_session_id_narrow_searches_and_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let c = client.peer();
    let user = "alice";
    for (text, agent, session) in [
        ("Alice drinks green tea", "barista", "s1"),
        ("Alice drinks black coffee", "barista", "s2"),
        ("Alice drinks orange juice", "waiter", "s1"),
    ] {
        ok(
            c,
            "memory_add",
            json!({"text": text, "user_id": user, "agent_id": agent, "session_id": session}),
        )
        .await;
    }
    let search = |args: Value| async move {
        let found = ok(c, "memory_search", args).await;
        let mut texts: Vec<String> = found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["memory"].as_str().unwrap().to_string())
            .collect();
        texts.sort();
        texts
    };
    let q = "what does Alice drink?";
    assert_eq!(search(json!({"query": q, "user_id": user})).await.len(), 3);
    assert_eq!(
        search(json!({"query": q, "user_id": user, "agent_id": "barista"})).await,
        ["Alice drinks black coffee", "Alice drinks green tea"]
    );
    assert_eq!(
        search(json!({"query": q, "user_id": user, "session_id": "s1"})).await,
        ["Alice drinks green tea", "Alice drinks orange juice"]
    );
    assert_eq!(
        search(json!({"query": q, "user_id": user, "agent_id": "barista", "session_id": "s1"}))
            .await,
        ["Alice drinks green tea"]
    );
    // The written memory carries the scope it was given.
    let got = search(json!({"query": q, "user_id": user, "agent_id": "waiter"})).await;
    assert_eq!(got, ["Alice drinks orange juice"]);

    // memory_context reads the session through the same conversion.
    let ctx = ok(
        c,
        "memory_context",
        json!({"input": q, "user_id": user, "session_id": "s2", "agent_id": "barista"}),
    )
    .await;
    assert!(ctx["system"].is_string(), "{ctx}");

    // Forget narrowed to one agent's session, then to one session.
    let forgot = ok(
        c,
        "memory_forget",
        json!({"user_id": user, "agent_id": "barista", "session_id": "s1"}),
    )
    .await;
    assert_eq!(forgot["memories_deleted"], 1, "{forgot}");
    let forgot = ok(
        c,
        "memory_forget",
        json!({"user_id": user, "session_id": "s2"}),
    )
    .await;
    assert_eq!(forgot["memories_deleted"], 1, "{forgot}");
    assert_eq!(
        search(json!({"query": q, "user_id": user})).await,
        ["Alice drinks orange juice"]
    );

    // A bad id in the shared fields is refused as before.
    let (code, _) = tool_error(
        c,
        "memory_search",
        json!({"query": q, "user_id": user, "session_id": " "}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    client.cancel().await.unwrap();
    server.await.unwrap();
}

/// `kind` is read as the library's `Kind`: an unknown one is refused with
/// the same message the REST body and the CLI give, and stores nothing.
#[tokio::test]
async fn an_unknown_kind_is_refused_with_the_librarys_message() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let c = client.peer();
    let (_, message) = tool_error(
        c,
        "memory_add",
        json!({"text": "Alice gossips", "user_id": "alice", "kind": "gossip"}),
    )
    .await;
    assert!(
        message.contains("unknown kind \"gossip\": use fact, episode or procedure"),
        "{message}"
    );
    let added = ok(
        c,
        "memory_add",
        json!({"text": "Alice keeps a diary", "user_id": "alice", "kind": "episode"}),
    )
    .await;
    assert_eq!(added["results"].as_array().unwrap().len(), 1, "{added}");
    let found = ok(
        c,
        "memory_search",
        json!({"query": "gossip diary", "user_id": "alice"}),
    )
    .await;
    let texts: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["memory"].as_str().unwrap())
        .collect();
    assert_eq!(texts, vec!["Alice keeps a diary"]);
    client.cancel().await.unwrap();
    server.await.unwrap();
}
