//! Listening, serving, and stopping gracefully.

use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use axum::extract::Request;
use axum::{Router, ServiceExt};
use memloop::{Config, Error, Result};
use tokio::net::TcpListener;
use tower::Layer;
use tower_http::normalize_path::NormalizePathLayer;

use crate::config::{ApiKeys, ServerConfig};
use crate::state::AppState;

/// Builds the router to mount at `/mcp` from the server's state (used by
/// `memloop serve` to add the MCP endpoint).
pub type McpMount = Box<dyn FnOnce(&AppState) -> Router + Send>;

/// Without API keys the server must stay on a loopback address: anyone who
/// could reach it would read and write every memory.
pub fn check_bind(addr: SocketAddr, keys: &ApiKeys) -> Result<()> {
    if keys.is_empty() && !addr.ip().is_loopback() {
        return Err(Error::invalid(format!(
            "refusing to listen on {addr} without API keys: anyone who can reach it would read and write every memory. \
             Set MEMLOOP_API_KEYS=\"KEY=TENANT\" (or [server.api_keys] in the config file), or listen on 127.0.0.1"
        )));
    }
    Ok(())
}

fn resolve(addr: &str) -> Result<SocketAddr> {
    let bad = |why: String| {
        Error::invalid(format!(
            "--addr {addr:?} is not an address to listen on ({why}): use HOST:PORT, e.g. 127.0.0.1:8420"
        ))
    };
    addr.to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("it resolves to nothing".into()))
}

/// Serves `app` on `listener` until `shutdown` completes, then stops
/// accepting and lets the requests in flight finish. A trailing slash is
/// ignored (`/v1/memories/` is `/v1/memories`, as Mem0 clients send it).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = NormalizePathLayer::trim_trailing_slash().layer(app);
    axum::serve(listener, ServiceExt::<Request>::into_make_service(app))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: no new connections; finishing the requests in flight");
}

/// `memloop serve`: opens the store, loads the model, listens on
/// `server.addr` and serves until Ctrl-C or SIGTERM; requests in flight then
/// get `shutdown_grace_secs` to finish.
pub fn run(config: &Config, server: ServerConfig, mcp: Option<McpMount>) -> Result<()> {
    let addr = resolve(&server.addr)?;
    check_bind(addr, &server.api_keys)?;
    let grace = Duration::from_secs(server.shutdown_grace_secs);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(server.blocking_threads.max(1))
        .thread_name("memloop-server")
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the async runtime: {e}")))?;
    let tenants = server.api_keys.tenants().join(", ");
    let keys = server.api_keys.len();
    let state = AppState::open(config, server)?;
    tracing::info!(data_dir = %config.data_dir.display(), "loading the embedding model");
    state.warm_up()?;
    runtime.block_on(async move {
        let app = crate::router_with_mcp(state.clone(), mcp.map(|m| m(&state)));
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            Error::invalid(format!(
                "cannot listen on {addr}: {e} (is another server on that port? choose one with --addr)"
            ))
        })?;
        let local = listener.local_addr().unwrap_or(addr);
        if keys == 0 {
            tracing::info!(%local, "listening without API keys (loopback only, default tenant)");
        } else {
            tracing::info!(%local, keys, tenants = %tenants, "listening");
        }
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let signal = async move {
            shutdown_signal().await;
            let _ = stop_tx.send(true);
        };
        let mut grace_rx = stop_rx.clone();
        let server = serve(listener, app, async move {
            let mut rx = stop_rx;
            let _ = rx.wait_for(|stop| *stop).await;
        });
        let deadline = async move {
            let _ = grace_rx.wait_for(|stop| *stop).await;
            tokio::time::sleep(grace).await;
        };
        tokio::spawn(signal);
        tokio::select! {
            r = server => r.map_err(|e| Error::Internal(format!("the server failed: {e}")))?,
            () = deadline => tracing::warn!(secs = grace.as_secs(), "requests still in flight after the grace period: exiting anyway"),
        }
        tracing::info!("stopped");
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyless_servers_stay_on_loopback() {
        let none = ApiKeys::new();
        let some = ApiKeys::parse("key-alpha-0123=alpha").unwrap();
        for ok in ["127.0.0.1:8420", "[::1]:8420", "localhost:8420"] {
            assert!(check_bind(resolve(ok).unwrap(), &none).is_ok(), "{ok}");
        }
        for public in ["0.0.0.0:8420", "[::]:8420", "192.0.2.7:8420"] {
            let err = check_bind(resolve(public).unwrap(), &none).unwrap_err();
            assert!(err.to_string().contains("MEMLOOP_API_KEYS"), "{err}");
            assert!(check_bind(resolve(public).unwrap(), &some).is_ok());
        }
        assert!(resolve("no-port").is_err());
    }
}
