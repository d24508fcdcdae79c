use std::path::PathBuf;

/// What kind of failure an error is, so front ends map it in one place
/// (exit codes, HTTP statuses) without matching on every variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    InvalidInput,
    NotFound,
    /// Worth retrying: a network hiccup, a busy database.
    Transient,
    /// Stored data is damaged or does not match the configuration.
    Corruption,
    Internal,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("no memory with id {0}: check the id with `memloop list`")]
    NotFound(String),
    #[error(
        "the store at {dir} was embedded with {stored}, but the configured embedder is {configured}: \
         run `memloop reindex` to re-embed every memory with the configured model, or configure {stored} again"
    )]
    EmbedderMismatch {
        dir: PathBuf,
        stored: String,
        configured: String,
    },
    #[error("embedding model not found (looked in: {searched}): run `scripts/fetch-model.sh` from the repository, or set MEMLOOP_MODEL_DIR to a folder holding model.safetensors, tokenizer.json and config.json")]
    ModelMissing { searched: String },
    #[error("embedding model at {path} is unusable: {reason}")]
    ModelInvalid { path: PathBuf, reason: String },
    #[error("embedding failed: {0}")]
    Embedding(String),
    #[error("remote service failed (retry may help): {0}")]
    Remote(String),
    #[error("remote service refused the request: {0}")]
    RemoteRejected(String),
    #[error("storage error: {0}")]
    Storage(String),
    #[error("the database is busy (another process holds the write lock); retry: {0}")]
    Busy(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("store at {dir} is damaged: {reason}")]
    Corruption { dir: PathBuf, reason: String },
    #[error("store schema version {found} is newer than this memloop understands ({supported}): upgrade memloop")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::InvalidInput(_) => ErrorClass::InvalidInput,
            Error::NotFound(_) => ErrorClass::NotFound,
            Error::Remote(_) | Error::Busy(_) => ErrorClass::Transient,
            Error::RemoteRejected(_) => ErrorClass::InvalidInput,
            Error::EmbedderMismatch { .. }
            | Error::Corruption { .. }
            | Error::SchemaTooNew { .. }
            | Error::ModelMissing { .. }
            | Error::ModelInvalid { .. } => ErrorClass::Corruption,
            Error::Embedding(_) | Error::Storage(_) | Error::Io { .. } | Error::Internal(_) => {
                ErrorClass::Internal
            }
        }
    }

    /// A short stable code for machine-readable error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid_input",
            Error::NotFound(_) => "not_found",
            Error::EmbedderMismatch { .. } => "embedder_mismatch",
            Error::ModelMissing { .. } => "model_missing",
            Error::ModelInvalid { .. } => "model_invalid",
            Error::Embedding(_) => "embedding_failed",
            Error::Remote(_) => "remote_unavailable",
            Error::RemoteRejected(_) => "remote_rejected",
            Error::Storage(_) => "storage_error",
            Error::Busy(_) => "busy",
            Error::Io { .. } => "io_error",
            Error::Corruption { .. } => "corruption",
            Error::SchemaTooNew { .. } => "schema_too_new",
            Error::Internal(_) => "internal",
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
