//! Listening, serving, and stopping gracefully.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use memloop::{Config, Error, Memory, Result};
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

/// Connection-level limits, applied before a request reaches the router.
#[derive(Debug, Clone)]
pub struct ConnLimits {
    /// Time to send a request's headers; an idle keep-alive connection is
    /// closed after it too (zero: no limit).
    pub header_read_timeout: Duration,
    /// Open connections per client IP; more are refused (0: no limit).
    pub max_connections_per_ip: usize,
}

impl ConnLimits {
    pub fn from_config(config: &ServerConfig) -> ConnLimits {
        ConnLimits {
            header_read_timeout: config.header_read_timeout,
            max_connections_per_ip: config.max_connections_per_ip,
        }
    }
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits::from_config(&ServerConfig::default())
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then stops
/// accepting and lets the requests in flight finish. A trailing slash is
/// ignored (`/v1/memories/` is `/v1/memories`, as Mem0 clients send it).
/// Connections get the default [`ConnLimits`].
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, shutdown, ConnLimits::default()).await
}

/// Open connections per client IP. A slot is given back when its
/// connection ends, whichever way.
#[derive(Clone, Default)]
struct PerIp(Arc<Mutex<HashMap<IpAddr, usize>>>);

struct IpSlot {
    table: PerIp,
    ip: IpAddr,
}

impl PerIp {
    fn take(&self, ip: IpAddr, max: usize) -> Option<IpSlot> {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = t.entry(ip).or_insert(0);
        if max > 0 && *n >= max {
            return None;
        }
        *n += 1;
        Some(IpSlot {
            table: self.clone(),
            ip,
        })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut t = self.table.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = t.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                t.remove(&self.ip);
            }
        }
    }
}

/// What a client over its connection limit reads before the socket closes:
/// our usual error body, by hand, since no request was parsed.
fn too_many_connections() -> String {
    let message = "this client IP has too many open connections (max_connections_per_ip): reuse or close some, then retry";
    let body = serde_json::json!({
        "error": {"code": "too_many_connections", "message": message},
        "detail": message,
    })
    .to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// [`serve`] with explicit connection limits. Our own accept loop (rather
/// than `axum::serve`) because axum gives no way to set hyper's header read
/// timeout or to count connections per client.
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ConnLimits,
) -> std::io::Result<()> {
    let app = NormalizePathLayer::trim_trailing_slash().layer(app);
    // `stop` tells connections to finish their request and close; every
    // connection task holds a clone of `open`, so `closed()` on its sender
    // completes when the last one has ended.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    let per_ip = PerIp::default();
    let refusal = too_many_connections();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: the listener
                    // stays good, so wait a little instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        let ip = peer.ip().to_canonical();
        let Some(slot) = per_ip.take(ip, limits.max_connections_per_ip) else {
            // Best effort and never blocking: the accept loop must not wait
            // on a client that is hoarding connections.
            let _ = stream.try_write(refusal.as_bytes());
            tracing::debug!(%ip, "connection refused: too many open connections from this IP");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stop = stop_rx.clone();
        let open = open_rx.clone();
        let header_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new());
            builder.header_read_timeout((!header_timeout.is_zero()).then_some(header_timeout));
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let mut stopping = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    _ = stop.wait_for(|s| *s), if !stopping => {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(slot);
            drop(open);
        });
    }
    // Closing the listener refuses new connections at once.
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
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

/// Saves the indexes that changed since their last save every `every`
/// (`[server] save_indexes_secs`), so a start after a crash loads them
/// rather than building them again; searches go on meanwhile.
pub fn spawn_save_indexes(memory: Arc<Memory>, every: Duration) -> tokio::task::JoinHandle<()> {
    spawn_every(every, "saving the indexes", move || memory.flush())
}

/// Runs `job` on a blocking thread every `every`, the first time one
/// interval after the start; a failure is logged and tried again at the
/// next interval, and a run longer than the interval delays the next one
/// (none piles up).
fn spawn_every<F>(every: Duration, what: &'static str, job: F) -> tokio::task::JoinHandle<()>
where
    F: Fn() -> Result<()> + Send + Sync + 'static,
{
    let job = Arc::new(job);
    tokio::spawn(async move {
        let start = tokio::time::Instant::now() + every;
        let mut ticks = tokio::time::interval_at(start, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let job = job.clone();
            match tokio::task::spawn_blocking(move || job()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "{what} failed; it runs again at the next interval")
                }
                Err(e) => tracing::warn!(error = %e, "{what} stopped before it finished"),
            }
        }
    })
}

/// `memloop serve`: opens the store, loads the model, listens on
/// `server.addr` and serves until Ctrl-C or SIGTERM; requests in flight then
/// get `shutdown_grace_secs` to finish. The store's handle sweeps every
/// `[forgetting] gc_interval` meanwhile (queued writes replayed, expired
/// memories deleted: `Memory::open_with`), on a thread of its own.
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
    let limits = ConnLimits::from_config(&server);
    let save_every = server.save_indexes_secs;
    // The loop's events carry ids, scores and counts; texts only when asked.
    memloop::TurnTrace::set_log_texts(server.log_texts);
    if server.log_texts {
        tracing::warn!("log_texts is on: memory texts and queries will be written to the log");
    }
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
        let saves = (save_every > 0)
            .then(|| spawn_save_indexes(state.memory().clone(), Duration::from_secs(save_every)));
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
        let server = serve_with(
            listener,
            app,
            async move {
                let mut rx = stop_rx;
                let _ = rx.wait_for(|stop| *stop).await;
            },
            limits,
        );
        let deadline = async move {
            let _ = grace_rx.wait_for(|stop| *stop).await;
            tokio::time::sleep(grace).await;
        };
        tokio::spawn(signal);
        tokio::select! {
            r = server => r.map_err(|e| Error::Internal(format!("the server failed: {e}")))?,
            () = deadline => tracing::warn!(secs = grace.as_secs(), "requests still in flight after the grace period: exiting anyway"),
        }
        if let Some(task) = saves {
            task.abort();
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

    /// The save task writes a changed index once an interval has passed,
    /// not before (a partition past the HNSW threshold, never saved).
    #[tokio::test(start_paused = true)]
    async fn indexes_are_saved_once_per_interval() {
        use memloop::{LocalEmbedder, NewMemory, Scope, SearchQuery, StoreOptions};
        let dir = tempfile::tempdir().unwrap();
        let embedder = Arc::new(LocalEmbedder::locate_and_load(None).unwrap());
        let options = StoreOptions::default().with_ann_threshold(40);
        let memory = Arc::new(Memory::with_embedder(dir.path(), embedder, options).unwrap());
        let scope = Scope::user("dana");
        let texts: Vec<String> = (0..60).map(|i| format!("garden note {i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = memory.embed_all(&refs).unwrap();
        let batch = texts
            .iter()
            .zip(vectors)
            .map(|(t, v)| (NewMemory::text(t.clone()), v.vector))
            .collect();
        memory.store().insert(&scope, batch).unwrap();
        let query = SearchQuery::new(scope.clone(), "garden note 7");
        let probe = memory
            .embed_all(&["garden note 7"])
            .unwrap()
            .remove(0)
            .vector;
        assert!(!memory.store().search(&query, &probe).unwrap().is_empty());
        let graphs = || {
            std::fs::read_dir(dir.path().join("index"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "usearch"))
                        .count()
                })
                .unwrap_or(0)
        };
        let task = spawn_save_indexes(memory.clone(), Duration::from_secs(600));
        tokio::time::sleep(Duration::from_secs(599)).await;
        assert_eq!(graphs(), 0, "saved before the first interval");
        let mut waited = 0;
        while graphs() == 0 {
            assert!(waited < 1000, "not saved after an interval");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 1;
        }
        task.abort();
    }
}
