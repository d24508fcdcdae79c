//! The local embedding model, loaded directly: `memloop bench` and `memloop
//! eval` measure it, so they refuse a configured remote embedder instead of
//! timing the network.

use std::path::PathBuf;
use std::sync::Arc;

use memloop::{Config, EmbedderConfig, LocalEmbedder};
use memloop_embed::{locate_model, GemmPath, LocalModel};

/// Loads the configured local model (its name or folder) with the
/// configured threads; `command` names the caller in the error.
pub fn load(config: &Config, command: &str) -> anyhow::Result<Arc<LocalEmbedder>> {
    load_on(config, command, None)
}

/// The configured local model's folder, and its threads.
pub fn locate(config: &Config, command: &str) -> anyhow::Result<(PathBuf, Option<usize>)> {
    let EmbedderConfig::Local {
        model,
        model_dir,
        threads,
    } = &config.embedder
    else {
        anyhow::bail!(
            "{command} measures the local embedder; remove the remote embedder from the config"
        )
    };
    let model = model.as_deref().map(LocalModel::parse).transpose()?;
    Ok((locate_model(model_dir.as_deref(), model)?, *threads))
}

/// As `load`, its matrix products on `gemm` (None: the kernel timed fastest
/// at load, or the one `MEMLOOP_GEMM` names).
pub fn load_on(
    config: &Config,
    command: &str,
    gemm: Option<GemmPath>,
) -> anyhow::Result<Arc<LocalEmbedder>> {
    let (dir, threads) = locate(config, command)?;
    let mut e = match gemm {
        None => LocalEmbedder::load(&dir)?,
        Some(path) => LocalEmbedder::load_with_gemm(&dir, path)?,
    };
    if let Some(t) = threads {
        e = e.with_threads(t);
    }
    Ok(Arc::new(e))
}
