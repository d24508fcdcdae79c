//! memloop over the Model Context Protocol: memory tools for MCP clients
//! (Claude Code, Cursor, OpenClaw, any agent with an MCP client).
//!
//! Tools: `memory_search`, `memory_add`, `memory_remember`, `memory_get`,
//! `memory_forget`, `memory_history`, `memory_context` (see docs/mcp.md).
//!
//! Two transports:
//! - stdio: [`serve_stdio`] (async) or [`run_stdio`] (builds its own
//!   runtime), what `memloop mcp` runs. Calls act in the default tenant.
//! - streamable HTTP: [`router`] / [`http_service`], mounted by
//!   `memloop serve` at `/mcp`; each call's tenant comes from the request
//!   (by default the [`McpTenant`] extension the server's auth layer sets).
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = memloop_mcp::MemoryTools::open(&memloop::Config::load(None)?)?;
//! let app = memloop_mcp::router(tools, memloop_mcp::HttpOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! The store is blocking (SQLite, an embedding model on the CPU): every
//! tool call runs on tokio's blocking pool, never on the async workers.

mod args;
mod engine;
mod http;
mod tenant;
mod tools;

use std::time::Duration;

use rmcp::ServiceExt;

pub use crate::http::{http_service, router, HttpOptions, McpHttpService};
pub use crate::tenant::{McpTenant, TenantResolver};
pub use crate::tools::{MemoryTools, TraceSink};
/// The MCP SDK this crate is built on, for callers that need its types.
pub use rmcp;

/// Why serving over stdio stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store could not be opened or configured.
    #[error(transparent)]
    Memloop(#[from] memloop::Error),
    /// The MCP connection failed (the client sent no valid handshake, or
    /// the runtime could not start).
    #[error("MCP over stdio failed: {0}")]
    Transport(String),
}

/// Serves `tools` on stdin/stdout until the client closes stdin. Nothing
/// else may write to stdout meanwhile: it carries the protocol.
pub async fn serve_stdio(tools: MemoryTools) -> Result<(), ServeError> {
    let running = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    Ok(())
}

/// `memloop mcp`: opens the configured store and serves it on stdio in a
/// runtime of its own. The embedding model loads in the background while
/// the client connects.
pub fn run_stdio(cfg: &memloop::Config) -> Result<(), ServeError> {
    let tools = MemoryTools::open(cfg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ServeError::Transport(format!("cannot start the async runtime: {e}")))?;
    let warm = tools.clone();
    runtime.spawn_blocking(move || {
        if let Err(e) = warm.warm_up() {
            // Each call will report it too; say it once where the user looks.
            tracing::warn!(error = %e, "the embedding model could not be loaded");
            eprintln!("memloop mcp: {e}");
        }
    });
    let served = runtime.block_on(serve_stdio(tools));
    // A blocking read of stdin cannot be cancelled; do not wait on it.
    runtime.shutdown_timeout(Duration::from_secs(2));
    served
}
