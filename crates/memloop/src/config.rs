//! Configuration: defaults, then a TOML file, then environment variables.

use std::path::{Path, PathBuf};

use memloop_core::{Error, Result};
use memloop_embed::OpenAiEmbedderConfig;
use memloop_store::StoreOptions;
use serde::{Deserialize, Serialize};

/// Which embedder turns text into vectors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum EmbedderConfig {
    /// all-MiniLM-L6-v2 in process (the default): no network, no key.
    Local {
        #[serde(default)]
        model_dir: Option<PathBuf>,
        #[serde(default)]
        threads: Option<usize>,
    },
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Openai(OpenAiEmbedderConfig),
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig::Local {
            model_dir: None,
            threads: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub data_dir: PathBuf,
    pub embedder: EmbedderConfig,
    pub store: StoreOptions,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: default_data_dir(),
            embedder: EmbedderConfig::default(),
            store: StoreOptions::default(),
        }
    }
}

/// The platform data directory (`~/.local/share/memloop` on Linux), or
/// `./memloop-data` where the platform has none.
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir().map_or_else(|| PathBuf::from("memloop-data"), |d| d.join("memloop"))
}

impl Config {
    /// Defaults, overridden by `file` (TOML) when given, then by `MEMLOOP_DATA_DIR`.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        let mut cfg = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
                    path: path.to_path_buf(),
                    source: e,
                })?;
                toml::from_str(&text).map_err(|e| {
                    Error::invalid(format!("config file {} is not valid: {e}", path.display()))
                })?
            }
            None => Config::default(),
        };
        if let Some(dir) = std::env::var_os("MEMLOOP_DATA_DIR") {
            cfg.data_dir = PathBuf::from(dir);
        }
        Ok(cfg)
    }

    pub fn with_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = dir.into();
        self
    }
}
