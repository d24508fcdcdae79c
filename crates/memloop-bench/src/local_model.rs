//! The local embedding model, loaded directly: `memloop bench` and `memloop
//! eval` measure it, so they refuse a configured remote embedder instead of
//! timing the network.

use std::sync::Arc;

use memloop::{Config, EmbedderConfig, LocalEmbedder};
use memloop_embed::GemmPath;

/// Loads all-MiniLM-L6-v2 from the configured model directory with the
/// configured threads; `command` names the caller in the error.
pub fn load(config: &Config, command: &str) -> anyhow::Result<Arc<LocalEmbedder>> {
    load_on(config, command, None)
}

/// As `load`, its matrix products on `gemm` (None: the kernel timed fastest at load, or
/// the one `MEMLOOP_GEMM` names).
pub fn load_on(
    config: &Config,
    command: &str,
    gemm: Option<GemmPath>,
) -> anyhow::Result<Arc<LocalEmbedder>> {
    let (dir, threads) = match &config.embedder {
        EmbedderConfig::Local { model_dir, threads } => (model_dir.clone(), *threads),
        _ => anyhow::bail!(
            "{command} measures the local embedder; remove the remote embedder from the config"
        ),
    };
    let mut e = match gemm {
        None => LocalEmbedder::locate_and_load(dir.as_deref())?,
        Some(path) => {
            LocalEmbedder::load_with_gemm(&memloop::locate_model_dir(dir.as_deref())?, path)?
        }
    };
    if let Some(t) = threads {
        e = e.with_threads(t);
    }
    Ok(Arc::new(e))
}
