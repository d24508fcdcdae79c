//! memloop over HTTP: Mem0-style REST routes for the long-term store, the
//! loop (`/v1/context`, `/v1/turn`), short-term sessions, health, metrics
//! and an OpenAPI document generated from the handlers.
//!
//! Every request is answered for one tenant: the one its API key is bound to
//! (or the default tenant when no keys are configured, which is allowed on a
//! loopback address only). The tenant is passed into every store call, so a
//! key never reaches another tenant's memories, sessions or ids.
//!
//! The router is built by a plain function, so tests drive it in process:
//!
//! ```no_run
//! # async fn demo(state: memloop_server::AppState) -> std::io::Result<()> {
//! let app = memloop_server::router(state);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8420").await?;
//! memloop_server::serve(listener, app, memloop_server::shutdown_signal()).await
//! # }
//! ```
//!
//! See docs/server.md for the routes, limits and error codes.

mod auth;
mod body;
mod config;
mod error;
mod metrics;
mod openapi;
mod routes;
mod run;
mod state;
mod telemetry;
mod traces;
mod ui;

pub use auth::Tenant;
pub use config::{ApiKeys, ServerConfig, DEFAULT_ADDR};
pub use error::ApiError;
pub use run::{check_bind, run, serve, serve_with, shutdown_signal, ConnLimits, McpMount};
pub use state::AppState;

use axum::Router;

/// The HTTP API: every route, behind request ids, metrics, panic capture,
/// authentication and the per-key concurrency limit.
pub fn router(state: AppState) -> Router {
    router_with_mcp(state, None)
}

/// The HTTP API with an extra router merged in before the layers, so its
/// routes get the same authentication, tenant, request id, metrics and
/// limits as ours. This is where the MCP endpoint is mounted:
/// `memloop-mcp` builds a `Router` serving `/mcp` and passes it here; its
/// handlers read the caller's tenant from the request's extensions
/// ([`Tenant`]).
pub fn router_with_mcp(state: AppState, mcp: Option<Router>) -> Router {
    routes::build(state, mcp)
}
