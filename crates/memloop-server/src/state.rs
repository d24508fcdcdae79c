//! What every handler shares: the store, the loop (with its gate and
//! long-term writer), the keys and limits, the metrics.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memloop::{Config, Memory, MemoryLoop, Result};
use tokio::sync::Semaphore;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::traces::TraceRing;

/// The server's shared state. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    memory: Arc<Memory>,
    memory_loop: MemoryLoop,
    has_llm: bool,
    config: ServerConfig,
    /// One semaphore per API key (one in all for the keyless mode).
    in_flight: Vec<Arc<Semaphore>>,
    metrics: Metrics,
    embedder_ready: AtomicBool,
    traces: TraceRing,
}

impl AppState {
    /// A server over a loop (its store, sessions, LLM, gate and writer).
    pub fn new(memory_loop: MemoryLoop, config: ServerConfig) -> AppState {
        let limit = match config.max_in_flight_per_key {
            0 => Semaphore::MAX_PERMITS,
            n => n.min(Semaphore::MAX_PERMITS),
        };
        let in_flight = (0..config.api_keys.len().max(1))
            .map(|_| Arc::new(Semaphore::new(limit)))
            .collect();
        let traces = TraceRing::new(config.trace_ring);
        AppState {
            inner: Arc::new(Inner {
                memory: memory_loop.shared_memory(),
                has_llm: memory_loop.has_llm(),
                memory_loop,
                config,
                in_flight,
                metrics: Metrics::default(),
                embedder_ready: AtomicBool::new(false),
                traces,
            }),
        }
    }

    /// The loop that `config` names (`MemoryLoop::open`). A Redis that
    /// does not answer does not stop the start: the routes that need it
    /// answer 503 until it does.
    pub fn open(config: &Config, server: ServerConfig) -> Result<AppState> {
        Ok(AppState::new(MemoryLoop::open(config)?, server))
    }

    pub fn memory(&self) -> &Arc<Memory> {
        &self.inner.memory
    }

    pub fn memory_loop(&self) -> &MemoryLoop {
        &self.inner.memory_loop
    }

    pub fn has_llm(&self) -> bool {
        self.inner.has_llm
    }

    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The last loop turns of each tenant (`GET /v1/traces`).
    pub(crate) fn traces(&self) -> &TraceRing {
        &self.inner.traces
    }

    /// Keeps a loop turn's trace in `tenant`'s ring for the inspector, when
    /// the server keeps any (`[server] trace_ring`); `route` says what ran
    /// it (`turn`, `context`, `record`). The REST loop routes call it, and
    /// `memloop serve` hands it to the MCP tools it mounts at `/mcp`.
    pub fn keep_trace(&self, tenant: &str, route: &'static str, trace: &serde_json::Value) {
        if self.traces().enabled() {
            self.traces().push(tenant, route, trace.clone());
        }
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn in_flight(&self, key: usize) -> Option<&Arc<Semaphore>> {
        self.inner.in_flight.get(key)
    }

    /// Loads the embedding model now (blocking) instead of on the first
    /// request; `/readyz` reports ready once it has.
    pub fn warm_up(&self) -> Result<()> {
        self.inner.memory.embedder().embed("memloop warm-up")?;
        self.inner.embedder_ready.store(true, Ordering::Release);
        Ok(())
    }

    pub(crate) fn embedder_ready(&self) -> bool {
        self.inner.embedder_ready.load(Ordering::Acquire)
    }
}

/// Runs blocking work (SQLite, embedding, LLM calls) off the async threads,
/// inside the request's span so its logs carry the request id.
pub(crate) async fn blocking<T, F>(f: F) -> std::result::Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let span = tracing::Span::current();
    match tokio::task::spawn_blocking(move || span.in_scope(f)).await {
        Ok(r) => r.map_err(ApiError::from),
        Err(e) if e.is_panic() => {
            let p = e.into_panic();
            Err(crate::error::panic_api_error(p))
        }
        Err(_) => Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry",
        )),
    }
}
