use std::path::{Path, PathBuf};

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
    /// Holds the id as given; the message shows it quoted, escaped and cut
    /// short (`shown_value`), since the id may be anything a caller sent.
    #[error("no memory with id {}: check the id with `memloop list`", shown_value(.0))]
    NotFound(String),
    /// No current memory of the scope (none true at the moment asked)
    /// names this entity; holds the name as given.
    #[error(
        "no memory of this user names the entity {}: list those that do with `memloop entities` (REST: GET /v1/entities?user_id=…; MCP: memory_entities)",
        shown_value(.0)
    )]
    EntityNotFound(String),
    /// The memory exists but is no longer current: deleted, superseded
    /// by `superseded_by`, or expired at `expired_at` (its TTL passed; gc
    /// has not yet deleted it). A read by id answers this (class not
    /// found) unless it asks for deleted memories too; the id is kept as given.
    #[error("{}", not_current_message(id, superseded_by.as_deref(), *expired_at))]
    NotCurrent {
        id: String,
        superseded_by: Option<String>,
        expired_at: Option<i64>,
    },
    #[error(
        "the store at {dir} was embedded with {stored}, but the configured embedder is {configured}: \
         run `memloop reindex` to re-embed every memory with the configured model, or configure {stored} again"
    )]
    EmbedderMismatch {
        dir: PathBuf,
        stored: String,
        configured: String,
    },
    #[error("embedding model {model} not found (looked in: {searched}): run `{fetch}` from the repository, or set MEMLOOP_MODEL_DIR to a folder holding it")]
    ModelMissing {
        model: String,
        searched: String,
        fetch: String,
    },
    #[error("embedding model at {path} is unusable: {reason}: run scripts/fetch-model.sh again (it checks every file's sha256 and replaces a damaged or truncated one), or set MEMLOOP_MODEL_DIR to a good copy")]
    ModelInvalid { path: PathBuf, reason: String },
    #[error("embedding failed: {0}")]
    Embedding(String),
    #[error("remote service failed (retry may help): {0}")]
    Remote(String),
    #[error("remote service refused the request: {0}")]
    RemoteRejected(String),
    #[error("storage error: {0}")]
    Storage(#[source] StoreError),
    #[error("the database is busy (another process held a lock it needs for the whole busy timeout, `busy_timeout_ms` under [store]); retry: {0}")]
    Busy(String),
    /// The data directory (or a file in it) cannot be written: a read-only
    /// mount, a directory owned by someone else. Not damage: nothing is wrong
    /// with the data, only with where it is.
    #[error("cannot write to {path} ({reason}): make it writable or choose another --data-dir")]
    PermissionDenied { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}", corruption_message(dir, reason))]
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
            Error::NotFound(_) | Error::EntityNotFound(_) | Error::NotCurrent { .. } => {
                ErrorClass::NotFound
            }
            Error::Remote(_) | Error::Busy(_) => ErrorClass::Transient,
            Error::RemoteRejected(_) => ErrorClass::InvalidInput,
            Error::EmbedderMismatch { .. }
            | Error::Corruption { .. }
            | Error::SchemaTooNew { .. }
            | Error::ModelMissing { .. }
            | Error::ModelInvalid { .. } => ErrorClass::Corruption,
            // No class of its own yet (front ends match every class): the
            // `permission_denied` code tells it apart from other internal errors.
            Error::Embedding(_)
            | Error::Storage(_)
            | Error::Io { .. }
            | Error::PermissionDenied { .. }
            | Error::Internal(_) => ErrorClass::Internal,
        }
    }

    /// A short stable code for machine-readable error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid_input",
            // Mem0 answers a deleted memory as not found; the message says why.
            Error::NotFound(_) | Error::EntityNotFound(_) | Error::NotCurrent { .. } => "not_found",
            Error::EmbedderMismatch { .. } => "embedder_mismatch",
            Error::ModelMissing { .. } => "model_missing",
            Error::ModelInvalid { .. } => "model_invalid",
            Error::Embedding(_) => "embedding_failed",
            Error::Remote(_) => "remote_unavailable",
            Error::RemoteRejected(_) => "remote_rejected",
            Error::Storage(_) => "storage_error",
            Error::Busy(_) => "busy",
            Error::Io { .. } => "io_error",
            Error::PermissionDenied { .. } => "permission_denied",
            Error::Corruption { .. } => "corruption",
            Error::SchemaTooNew { .. } => "schema_too_new",
            Error::Internal(_) => "internal",
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }
}

/// What a read of a memory that is no longer current says: which it was,
/// what to read instead, and how to read it anyway (each front end's way).
fn not_current_message(id: &str, superseded_by: Option<&str>, expired_at: Option<i64>) -> String {
    let id = shown_value(id);
    let anyway = "read it anyway with --include-deleted (REST ?include_deleted=true, MCP include_deleted: true)";
    match (superseded_by, expired_at) {
        (Some(new), _) => format!(
            "memory {id} was superseded by {}: read that one for what holds now, or {anyway}; its changes are in its history",
            shown_value(new)
        ),
        (None, Some(at)) => format!(
            "memory {id} expired at {} (its TTL passed) and gc will delete it: add it again to keep it, or {anyway} until then",
            crate::time::to_rfc3339(at)
        ),
        (None, None) => format!(
            "memory {id} was deleted and is kept only as history: {anyway}, or its changes with `memloop history`"
        ),
    }
}

/// What a damaged store says: where it is and what to do about it. The
/// directory is empty when the error was raised below the store's open (a
/// statement deep in a query); the facade fills it in before it reaches a user.
fn corruption_message(dir: &Path, reason: &str) -> String {
    if dir.as_os_str().is_empty() {
        return format!(
            "the store's database is damaged: {reason}: restore memloop.db from a backup, or move it aside (with memloop.db-wal and memloop.db-shm) to start an empty store"
        );
    }
    let db = dir.join("memloop.db");
    format!(
        "store at {} is damaged: {reason}: restore {} from a backup, or move it aside (with its -wal and -shm files) to start an empty store",
        dir.display(),
        db.display()
    )
}

impl Error {
    /// Fills in the data directory of errors raised without it (a SQLite
    /// error deep in a statement knows nothing of paths), so every message
    /// names the store it is about.
    pub fn in_dir(self, dir: &Path) -> Error {
        match self {
            Error::Corruption { dir: d, reason } if d.as_os_str().is_empty() => Error::Corruption {
                dir: dir.to_path_buf(),
                reason,
            },
            Error::PermissionDenied { path, reason } if path.as_os_str().is_empty() => {
                Error::PermissionDenied {
                    path: dir.to_path_buf(),
                    reason,
                }
            }
            Error::Storage(e) => Error::Storage(e.at(&dir.display().to_string())),
            Error::Busy(m) => Error::Busy(format!("store at {}: {m}", dir.display())),
            other => other,
        }
    }
}

/// A storage engine failed (SQLite, PostgreSQL, Redis): where, what was
/// being done, and the engine's own error as the `source`, so a caller can
/// still inspect it (`std::error::Error::source`) instead of a string.
#[derive(Debug)]
pub struct StoreError {
    /// The store it is about: a data directory or a server URL. Empty only
    /// below a store's boundary, which names itself (`Error::in_dir`).
    pub location: String,
    /// What was being done, when it adds to the source's own words.
    pub context: Option<String>,
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl StoreError {
    /// An engine error, not yet located.
    pub fn from_source(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
        StoreError {
            location: String::new(),
            context: None,
            source: Some(Box::new(e)),
        }
    }

    /// A failure the engine did not raise (stored data that does not parse).
    pub fn message(context: impl Into<String>) -> StoreError {
        StoreError {
            location: String::new(),
            context: Some(context.into()),
            source: None,
        }
    }

    pub fn with_context(mut self, context: impl Into<String>) -> StoreError {
        self.context = Some(context.into());
        self
    }

    /// Names the store, unless it already is named.
    pub fn at(mut self, location: &str) -> StoreError {
        if self.location.is_empty() {
            self.location = location.to_string();
        }
        self
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.location.is_empty() {
            write!(f, "store at {}: ", self.location)?;
        }
        match (&self.context, &self.source) {
            (Some(c), Some(s)) => write!(f, "{c}: {s}"),
            (Some(c), None) => f.write_str(c),
            (None, Some(s)) => write!(f, "{s}"),
            (None, None) => f.write_str("unknown failure"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// At most this many characters of a caller's value are echoed back.
const SHOWN_CHARS: usize = 40;

/// A caller-supplied value as an error message may show it: quoted, escaped
/// (control characters and quotes cannot forge log lines or JSON), and cut
/// to its first few characters with the full length said, so a 5 MB id
/// does not come back as a 5 MB message.
pub fn shown_value(value: &str) -> String {
    let chars = value.chars().count();
    let head: String = value.chars().take(SHOWN_CHARS).collect();
    if chars <= SHOWN_CHARS {
        format!("{head:?}")
    } else {
        format!("{head:?}… ({} bytes)", value.len())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
