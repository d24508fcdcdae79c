//! Streamable HTTP on a real socket, mounted as `memloop serve` mounts it:
//! `router()` merged under an auth middleware that turns an API key into
//! an `McpTenant` extension.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use memloop_mcp::rmcp::model::ClientConfig;
use memloop_mcp::rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use memloop_mcp::rmcp::transport::StreamableHttpClientTransport;
use memloop_mcp::rmcp::ServiceExt;
use memloop_mcp::{HttpOptions, McpTenant, MemoryTools, TenantResolver};
use serde_json::json;

use crate::{ok, tool_error, Client};

/// Keys `key-a` and `key-b` name tenants `a` and `b`; a request without a
/// known key passes with no tenant, to show the endpoint fails closed.
async fn authenticate(mut req: Request, next: Next) -> Response {
    let tenant = match req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    {
        Some("Bearer key-a") => Some("a"),
        Some("Bearer key-b") => Some("b"),
        _ => None,
    };
    if let Some(t) = tenant {
        req.extensions_mut().insert(McpTenant(t.into()));
    }
    next.run(req).await
}

async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn connect(addr: SocketAddr, key: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"));
    if let Some(k) = key {
        config = config.auth_header(k);
    }
    ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn app(tools: MemoryTools) -> axum::Router {
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .merge(memloop_mcp::router(tools, HttpOptions::default()))
        .layer(middleware::from_fn(authenticate))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(app(crate::tools(dir.path()))).await;
    let client = connect(addr, Some("key-a")).await;
    crate::exercise(client.peer(), "alice").await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_come_from_the_auth_layer_and_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(app(crate::tools(dir.path()))).await;
    let a = connect(addr, Some("key-a")).await;
    let b = connect(addr, Some("key-b")).await;

    let added = ok(
        a.peer(),
        "memory_add",
        json!({"text": "The launch code is tulip", "user_id": "alice"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();

    // The same user id in tenant b is another person: nothing found, and
    // tenant a's id is unknown there.
    let found = ok(
        b.peer(),
        "memory_search",
        json!({"query": "launch code", "user_id": "alice"}),
    )
    .await;
    assert_eq!(found["results"], json!([]));
    let (code, _) = tool_error(b.peer(), "memory_get", json!({"id": id})).await;
    assert_eq!(code, "not_found");
    let (code, _) = tool_error(b.peer(), "memory_history", json!({"id": id})).await;
    assert_eq!(code, "not_found");
    let forgot = ok(b.peer(), "memory_forget", json!({"user_id": "alice"})).await;
    assert_eq!(forgot["memories_deleted"], 0);
    let got = ok(a.peer(), "memory_get", json!({"id": id})).await;
    assert_eq!(got["tenant"], "a");

    // No key: the auth layer set no tenant, so nothing is read or written.
    let anonymous = connect(addr, None).await;
    let (code, message) = tool_error(
        anonymous.peer(),
        "memory_search",
        json!({"query": "launch code", "user_id": "alice"}),
    )
    .await;
    assert_eq!(code, "unauthorized");
    assert!(message.contains("tenant"), "{message}");

    for c in [a, b, anonymous] {
        c.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolver_can_read_headers_and_hosts_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions {
        tenant: TenantResolver::new(|parts| {
            parts
                .headers
                .get("x-tenant")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
                .ok_or_else(|| "send X-Tenant".to_string())
        }),
        ..HttpOptions::default()
    };
    let addr = serve(memloop_mcp::router(crate::tools(dir.path()), options)).await;

    let mut headers = std::collections::HashMap::new();
    headers.insert(
        http::HeaderName::from_static("x-tenant"),
        http::HeaderValue::from_static("t9"),
    );
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"))
        .custom_headers(headers);
    let client = ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    let added = ok(
        client.peer(),
        "memory_add",
        json!({"text": "Prefers window seats", "user_id": "u"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap();
    let got = ok(client.peer(), "memory_get", json!({"id": id})).await;
    assert_eq!(got["tenant"], "t9");
    client.cancel().await.unwrap();

    // A Host the endpoint was not told about is refused (DNS rebinding guard),
    // and GET (no event stream on a stateless endpoint) is not allowed.
    let http = raw_get(addr, "evil.example").await;
    assert!(http.starts_with("HTTP/1.1 403"), "{http}");
    let http = raw_get(addr, &format!("127.0.0.1:{}", addr.port())).await;
    assert!(http.starts_with("HTTP/1.1 405"), "{http}");
}

/// A raw HTTP/1.1 GET of /mcp with the given Host header; the status line and headers.
async fn raw_get(addr: SocketAddr, host: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}
