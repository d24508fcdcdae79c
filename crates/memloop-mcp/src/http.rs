//! MCP over streamable HTTP, as a tower service or an axum router that a
//! server mounts behind its own authentication.
//!
//! The endpoint is stateless: every POST carries one JSON-RPC message and
//! gets one `application/json` answer; there are no sessions to keep, no
//! long-lived event streams to end at shutdown, and each request is
//! authenticated on its own. GET and DELETE answer 405, which the protocol
//! allows and clients expect from a stateless server.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::tenant::TenantResolver;
use crate::tools::MemoryTools;

/// The streamable-HTTP MCP endpoint as a tower service.
pub type McpHttpService = StreamableHttpService<MemoryTools, LocalSessionManager>;

/// How the HTTP endpoint decides tenants and which requests it accepts.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Each call's tenant. Default: [`TenantResolver::from_extension`], the
    /// [`crate::McpTenant`] an authentication middleware put on the request
    /// (a request without one gets a tool error, nothing is read).
    pub tenant: TenantResolver,
    /// `Host` header values accepted (names, or `name:port`), a guard
    /// against DNS rebinding. Default: localhost, 127.0.0.1 and ::1. A
    /// server reachable under other names lists them; empty accepts any
    /// host: only where the embedding server checks `Host` itself, as
    /// memloop-server's auth layer does on `/mcp` (loopback names, its
    /// listen address and `[server] allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// Largest request body accepted (413 above). Default 1 MiB: a memory's
    /// text is at most 32 KiB.
    pub max_body_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            tenant: TenantResolver::from_extension(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            max_body_bytes: 1024 * 1024,
        }
    }
}

/// The endpoint as a tower service, to mount where you like:
/// `axum::Router::new().nest_service("/mcp", http_service(tools, options))`.
pub fn http_service(tools: MemoryTools, options: HttpOptions) -> McpHttpService {
    let tools = tools.with_tenant(options.tenant);
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(options.max_body_bytes);
    config = if options.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(options.allowed_hosts)
    };
    StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// An axum router serving the endpoint at `/mcp`. Merge it into the
/// server's router *before* adding the authentication layer, so the layer
/// covers it and can insert [`crate::McpTenant`]:
///
/// ```ignore
/// let app = Router::new()
///     .route("/v1/memories/search", post(search))
///     .merge(memloop_mcp::router(tools, HttpOptions::default()))
///     .layer(middleware::from_fn_with_state(keys, authenticate)); // inserts McpTenant
/// ```
pub fn router(tools: MemoryTools, options: HttpOptions) -> axum::Router {
    axum::Router::new().route_service("/mcp", http_service(tools, options))
}
