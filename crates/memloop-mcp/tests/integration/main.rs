//! The MCP tools driven by rmcp's real client: over an in-process byte
//! stream (what stdio carries) and over streamable HTTP on a socket. The CLI
//! crate's tests/mcp.rs does the same against the `memloop mcp` binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod deleted;
mod http;
mod procedures;
mod record;
mod scope;
mod search;
mod stream;
mod timeline;
mod ttl;

use std::sync::{Arc, OnceLock};

use memloop::{
    Embedder, InProcessBuffer, LocalEmbedder, LoopConfig, Memory, MemoryLoop, StoreOptions,
};
use memloop_mcp::rmcp::model::{CallToolRequestParams, CallToolResult};
use memloop_mcp::rmcp::service::{RoleClient, RunningService, ServerSink};
use memloop_mcp::MemoryTools;
use serde_json::{json, Value};

pub type Client = RunningService<RoleClient, memloop_mcp::rmcp::model::ClientConfig>;

/// The real local model, loaded once per test binary.
pub fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<LocalEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(LocalEmbedder::locate_and_load(None).expect("run scripts/fetch-model.sh"))
    })
    .clone()
}

/// Tools over a fresh store in `dir`, offline (rules extraction).
pub fn tools(dir: &std::path::Path) -> MemoryTools {
    let memory = Memory::with_embedder(dir, embedder(), StoreOptions::default()).unwrap();
    let lp = MemoryLoop::new(
        Arc::new(memory),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    MemoryTools::new(lp)
}

pub async fn call(client: &ServerSink, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{tool}: the call itself failed: {e}"))
}

/// The structured result of a call that must have succeeded.
pub async fn ok(client: &ServerSink, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args.clone()).await;
    assert_ne!(r.is_error, Some(true), "{tool} {args} failed: {r:?}");
    let v = r.structured_content.clone().expect("structured content");
    // The text content carries the same JSON, for clients that read only text.
    let text = r.content[0].as_text().expect("text content").text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    v
}

/// The message of a call that must have failed as a tool error.
pub async fn tool_error(client: &ServerSink, tool: &str, args: Value) -> (String, String) {
    let r = call(client, tool, args.clone()).await;
    assert_eq!(r.is_error, Some(true), "{tool} {args} should fail: {r:?}");
    let e = &r.structured_content.as_ref().expect("structured error")["error"];
    let text = r.content[0].as_text().expect("text content").text.clone();
    assert!(text.starts_with(e["code"].as_str().unwrap()), "{text}");
    (
        e["code"].as_str().unwrap().to_string(),
        e["message"].as_str().unwrap().to_string(),
    )
}

pub const TOOLS: [&str; 13] = [
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
    "memory_sessions",
];

/// Every tool once, over whatever transport `client` speaks: list, add then
/// search, remember (ADD then UPDATE), get and history, context, errors,
/// forget. `user` keeps runs sharing a store apart.
pub async fn exercise(client: &ServerSink, user: &str) {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, TOOLS);

    // Raw add, then search finds it first.
    let added = ok(
        client,
        "memory_add",
        json!({"text": "I'm vegetarian and allergic to peanuts", "user_id": user,
               "metadata": {"topic": "food"}}),
    )
    .await;
    let peanut_id = added["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(added["results"][0]["event"], "ADD");
    ok(
        client,
        "memory_add",
        json!({"text": "Emma starts school in September", "user_id": user}),
    )
    .await;
    let found = ok(
        client,
        "memory_search",
        json!({"query": "what food should I avoid?", "user_id": user, "top_k": 5}),
    )
    .await;
    assert_eq!(found["results"][0]["id"], peanut_id.as_str(), "{found}");
    assert_eq!(
        found["results"][0]["memory"],
        "I'm vegetarian and allergic to peanuts"
    );
    let filtered = ok(
        client,
        "memory_search",
        json!({"query": "school", "user_id": user, "filters": {"topic": "food"}}),
    )
    .await;
    let ids: Vec<&str> = filtered["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [peanut_id.as_str()], "the filter keeps only food");
    let other = ok(
        client,
        "memory_search",
        json!({"query": "peanuts", "user_id": format!("{user}-other")}),
    )
    .await;
    assert_eq!(other["results"], json!([]), "another user sees nothing");

    // The entity graph: Emma is named, linked to her memory, and no one
    // else's; the search switches reach the facade.
    let entities = ok(client, "memory_entities", json!({"user_id": user})).await;
    assert!(
        entities["entities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "Emma"),
        "{entities}"
    );
    let links = ok(
        client,
        "memory_links",
        json!({"entity": "emma", "user_id": user}),
    )
    .await;
    assert_eq!(links["entity"]["name"], "Emma", "{links}");
    assert_eq!(
        links["memories"][0]["memory"],
        "Emma starts school in September"
    );
    let (code, _) = tool_error(
        client,
        "memory_links",
        json!({"entity": "Emma", "user_id": format!("{user}-other")}),
    )
    .await;
    assert_eq!(code, "not_found", "another user's entity is not found");
    let none = ok(
        client,
        "memory_entities",
        json!({"user_id": format!("{user}-other")}),
    )
    .await;
    assert_eq!(none["entities"], json!([]));
    // The graph as it was before anything was said: empty; a bad moment
    // is refused with what to send.
    let past = ok(
        client,
        "memory_entities",
        json!({"user_id": user, "as_of": "2001-01-01"}),
    )
    .await;
    assert_eq!(past["entities"], json!([]), "{past}");
    let (code, message) = tool_error(
        client,
        "memory_links",
        json!({"entity": "Emma", "user_id": user, "as_of": "soon"}),
    )
    .await;
    assert_eq!(code, "invalid_input", "{message}");
    let expanded = ok(
        client,
        "memory_search",
        json!({"query": "school", "user_id": user, "expand": true, "hops": 2}),
    )
    .await;
    assert!(!expanded["results"].as_array().unwrap().is_empty());
    for bad in [json!({"hops": 9}), json!({"rerank": true})] {
        let mut args = json!({"query": "school", "user_id": user});
        args.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let (code, message) = tool_error(client, "memory_search", args).await;
        assert_eq!(code, "invalid_input", "{bad}: {message}");
    }

    // The write pipeline: a fact added, then superseded.
    let paris = ok(
        client,
        "memory_remember",
        json!({"text": "I live in Paris", "user_id": user}),
    )
    .await;
    assert_eq!(paris["persisted"], true, "{paris}");
    let fact = paris["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "fact")
        .unwrap_or_else(|| panic!("no fact in {paris}"))
        .clone();
    assert_eq!(fact["event"], "ADD");
    assert_eq!(fact["memory"], "User lives in Paris");
    let fact_id = fact["id"].as_str().unwrap().to_string();
    let moved = ok(
        client,
        "memory_remember",
        json!({"text": "I moved to Berlin last month", "user_id": user}),
    )
    .await;
    let update = moved["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "fact")
        .unwrap_or_else(|| panic!("no fact in {moved}"))
        .clone();
    assert_eq!(update["event"], "UPDATE", "{moved}");
    assert!(update["memory"].as_str().unwrap().contains("Berlin"));
    assert_eq!(update["previous_memory"], "User lives in Paris");
    let hi = ok(
        client,
        "memory_remember",
        json!({"text": "Hi there!", "user_id": user}),
    )
    .await;
    assert_eq!(hi["persisted"], false, "small talk is not kept: {hi}");
    assert_eq!(hi["results"], json!([]));

    // get and history.
    let got = ok(client, "memory_get", json!({"id": peanut_id})).await;
    assert_eq!(got["memory"], "I'm vegetarian and allergic to peanuts");
    assert_eq!(got["user_id"], user);
    assert_eq!(got["metadata"]["topic"], "food");
    let history = ok(client, "memory_history", json!({"id": fact_id})).await;
    let events: Vec<&str> = history["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events[0], "ADD", "{history}");
    assert!(events.len() >= 2, "the move is in the history: {history}");

    // The assembled context carries the memories in the system prompt.
    let ctx = ok(
        client,
        "memory_context",
        json!({"input": "Which foods should I avoid?", "user_id": user,
               "session_id": "s1"}),
    )
    .await;
    let system = ctx["system"].as_str().unwrap();
    assert!(system.contains("allergic to peanuts"), "{system}");
    let messages = ctx["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "Which foods should I avoid?"
    );
    assert!(ctx["trace"]["retrieved"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["id"] == peanut_id.as_str() && m["included"] == true));

    // Errors come back as tool errors with the reason, not as a failed call.
    let (code, message) = tool_error(client, "memory_get", json!({"id": "no-such-id"})).await;
    assert_eq!(code, "not_found");
    assert!(
        message.contains("no memory with id \"no-such-id\""),
        "{message}"
    );
    let (code, _) = tool_error(client, "memory_history", json!({"id": "no-such-id"})).await;
    assert_eq!(code, "not_found");
    let (code, message) = tool_error(
        client,
        "memory_add",
        json!({"text": "x", "user_id": user, "metadata": [1, 2]}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(message.contains("metadata"), "{message}");
    let (code, _) = tool_error(
        client,
        "memory_search",
        json!({"query": "x", "user_id": user, "top_k": 0}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    let (code, _) = tool_error(
        client,
        "memory_search",
        json!({"query": "x", "user_id": user, "filters": "topic = = food"}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    // Filters nested past the parser's depth are refused, and the server
    // keeps serving (they used to overflow its stack and abort the process).
    let mut nested_json = json!({"topic": "food"});
    for _ in 0..100 {
        nested_json = json!({ "NOT": nested_json });
    }
    for filters in [
        json!(format!(
            "{}topic = food{}",
            "(".repeat(1_600),
            ")".repeat(1_600)
        )),
        json!(format!("{}topic = food", "NOT ".repeat(4_000))),
        nested_json,
    ] {
        let (code, message) = tool_error(
            client,
            "memory_search",
            json!({"query": "x", "user_id": user, "filters": filters}),
        )
        .await;
        assert_eq!(code, "invalid_input");
        assert!(message.contains("nests more than 32 levels"), "{message}");
    }
    let (code, _) = tool_error(client, "memory_add", json!({"text": "x", "user_id": " "})).await;
    assert_eq!(code, "invalid_input");
    // Arguments that do not fit the schema are refused by the SDK before memloop.
    let bad = client
        .call_tool(
            CallToolRequestParams::new("memory_search")
                .with_arguments(json!({"user_id": user}).as_object().unwrap().clone()),
        )
        .await;
    let bad = bad.unwrap();
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    let text = &bad.content[0].as_text().unwrap().text;
    assert!(text.contains("query"), "{text}");

    // Forget the user: everything gone from search and get.
    let forgot = ok(client, "memory_forget", json!({"user_id": user})).await;
    assert!(
        forgot["memories_deleted"].as_u64().unwrap() >= 4,
        "{forgot}"
    );
    let after = ok(
        client,
        "memory_search",
        json!({"query": "peanuts", "user_id": user}),
    )
    .await;
    assert_eq!(after["results"], json!([]));
}

/// The tools over a store in `dir`, served on an in-process byte stream,
/// and a client connected to them; the handle ends when the client cancels.
pub async fn connect(dir: &std::path::Path) -> (Client, tokio::task::JoinHandle<()>) {
    connect_to(tools(dir)).await
}

/// A client connected to `tools`, and the task serving them.
pub async fn connect_to(tools: MemoryTools) -> (Client, tokio::task::JoinHandle<()>) {
    use memloop_mcp::rmcp::ServiceExt;
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        let running = tools.serve(server_io).await.unwrap();
        running.waiting().await.unwrap();
    });
    (
        memloop_mcp::rmcp::model::ClientConfig::default()
            .serve(client_io)
            .await
            .unwrap(),
        server,
    )
}
