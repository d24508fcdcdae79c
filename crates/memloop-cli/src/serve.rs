//! `memloop serve`: the REST API (see docs/server.md).

use std::path::Path;

use clap::Args;
use memloop::Config;

use crate::LogFormat;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT (default 127.0.0.1:8420, or [server] addr).
    /// Without API keys (MEMLOOP_API_KEYS) only a loopback address is allowed.
    #[arg(long, env = "MEMLOOP_ADDR")]
    addr: Option<String>,
}

pub fn run(
    config: &Config,
    config_file: Option<&Path>,
    log_format: Option<LogFormat>,
    a: ServeArgs,
) -> anyhow::Result<()> {
    // A server logs every request: text lines on stderr unless asked for JSON.
    crate::init_logs(log_format.unwrap_or(LogFormat::Text));
    let mut server = memloop_server::ServerConfig::load(config_file)?;
    if let Some(addr) = a.addr {
        server.addr = addr;
    }
    memloop_server::run(config, server, Some(mcp_mount()))?;
    Ok(())
}

/// `/mcp`: the MCP tools over streamable HTTP, on the server's own loop and
/// writer, in the tenant the server's authentication put on the request.
fn mcp_mount() -> memloop_server::McpMount {
    Box::new(move |state: &memloop_server::AppState| {
        use memloop_mcp::{HttpOptions, MemoryTools, TenantResolver};
        // memory_context and memory_record_turn feed the inspector's Turns
        // view as the REST loop routes do.
        let keeper = state.clone();
        let tools =
            MemoryTools::new(state.memory_loop().clone()).with_trace_sink(std::sync::Arc::new(
                move |tenant, route, trace| keeper.keep_trace(tenant, route, trace),
            ));
        let tenant = TenantResolver::new(|parts| {
            parts
                .extensions
                .get::<memloop_server::Tenant>()
                .map(|t| t.0.clone())
                .ok_or_else(|| "this request carries no tenant: send an API key".to_string())
        });
        let options = HttpOptions {
            tenant,
            // The server's own Host check (loopback names, the bind address,
            // `[server] allowed_hosts`) guards `/mcp` before this router sees
            // it, with or without keys; a second, narrower list here would
            // refuse the names the operator allowed.
            allowed_hosts: Vec::new(),
            ..HttpOptions::default()
        };
        memloop_mcp::router(tools, options)
    })
}
