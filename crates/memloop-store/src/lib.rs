//! The embedded long-term store: one data directory, SQLite in WAL mode as the
//! source of truth, and per-partition vector and keyword indexes derived from
//! it in memory (HNSW indexes of large partitions are also saved to disk).
//!
//! # Durability
//! A write returns after its SQLite transaction commits. With
//! [`Durability::Full`] (the default) the WAL is fsynced at every commit, so an
//! acknowledged write survives a process kill and a power cut; with
//! [`Durability::Process`] it survives a process kill (the OS still holds the
//! data) but the last commits may be lost on power failure. The indexes are
//! never the truth: every change is also appended to `index_log` in the same
//! transaction, and an index catches up from that log before it answers, so a
//! crash between commit and index update loses nothing, and several processes
//! can share one directory.

mod keyword;
mod outbox;
mod partition;
mod read;
mod rows;
mod schema;
pub mod vector;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use memloop_core::text::Analyzer;
use memloop_core::{EmbedderInfo, Error, Result};
use rusqlite::{Connection, OptionalExtension};

pub use outbox::OutboxEntry;
pub use read::{Entity, ListQuery, SearchQuery, Stats, DEFAULT_VECTOR_WEIGHT};
pub use write::{ForgetReport, MemoryUpdate};

use partition::PartitionIndex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Durability {
    /// fsync at every commit: survives power loss.
    #[default]
    Full,
    /// No fsync at commit: survives a process crash, not a power cut. Faster writes.
    Process,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct StoreOptions {
    /// A partition with at least this many current memories gets an HNSW
    /// index; smaller ones are scanned exactly. At 5,000 the scan already
    /// takes 2.5 times an HNSW search (0.48 vs 0.19 ms; 0.79 vs 0.21 ms at
    /// 10,000) and reads 1.5 KB per memory per query, which caps concurrent
    /// searches; HNSW's recall@10 against the scan measured 0.99–1.00 there
    /// (docs/benchmarks.md).
    pub ann_threshold: usize,
    pub durability: Durability,
    /// Weight of a memory's context terms in BM25, relative to its own text.
    pub context_weight: f32,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            ann_threshold: 5_000,
            durability: Durability::Full,
            context_weight: 0.5,
        }
    }
}

impl StoreOptions {
    pub fn with_ann_threshold(mut self, n: usize) -> Self {
        self.ann_threshold = n;
        self
    }

    pub fn with_durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
}

pub struct EmbeddedStore {
    dir: PathBuf,
    conn: Mutex<Connection>,
    partitions: Mutex<HashMap<String, Arc<Mutex<PartitionIndex>>>>,
    embedder: EmbedderInfo,
    options: StoreOptions,
    analyzer: Analyzer,
}

pub(crate) fn sql_err(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Busy(e.to_string()),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Error::Corruption {
            dir: PathBuf::new(),
            reason: e.to_string(),
        },
        _ => Error::Storage(e.to_string()),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another thread cannot leave SQLite inconsistent (transactions
    // roll back), so a poisoned lock is still safe to use.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub const DB_FILE: &str = "memloop.db";

impl EmbeddedStore {
    /// Opens (creating if needed) the store in `dir` for vectors of `embedder`.
    /// Refuses a store written with another embedder (see `memloop reindex`).
    pub fn open(dir: &Path, embedder: EmbedderInfo, options: StoreOptions) -> Result<Self> {
        Self::open_inner(dir, embedder, options, false)
    }

    /// Opens a store whatever embedder wrote it, for `reindex` to re-embed it.
    pub fn open_for_reindex(
        dir: &Path,
        embedder: EmbedderInfo,
        options: StoreOptions,
    ) -> Result<Self> {
        Self::open_inner(dir, embedder, options, true)
    }

    fn open_inner(
        dir: &Path,
        embedder: EmbedderInfo,
        options: StoreOptions,
        allow_mismatch: bool,
    ) -> Result<Self> {
        let io = |e| Error::Io {
            path: dir.to_path_buf(),
            source: e,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::create_dir_all(dir.join("index")).map_err(io)?;
        let path = dir.join(DB_FILE);
        let mut conn = Connection::open(&path).map_err(|e| Error::Corruption {
            dir: dir.to_path_buf(),
            reason: format!("cannot open {}: {e}", path.display()),
        })?;
        let sync = match options.durability {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        };
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(sql_err)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; \
             PRAGMA secure_delete = ON; PRAGMA cache_size = -65536;"
        ))
        .map_err(|e| Error::Corruption {
            dir: dir.to_path_buf(),
            reason: format!("{} is not a usable SQLite database: {e}", path.display()),
        })?;
        schema::migrate(&mut conn)?;
        check_embedder(&conn, dir, &embedder, allow_mismatch)?;
        Ok(EmbeddedStore {
            dir: dir.to_path_buf(),
            conn: Mutex::new(conn),
            partitions: Mutex::new(HashMap::new()),
            embedder,
            options,
            analyzer: Analyzer::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn embedder(&self) -> &EmbedderInfo {
        &self.embedder
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    fn check_dims(&self, v: &[f32]) -> Result<()> {
        if v.len() != self.embedder.dimensions {
            return Err(Error::invalid(format!(
                "vector has {} dimensions, the store holds {}",
                v.len(),
                self.embedder.dimensions
            )));
        }
        Ok(())
    }
}

fn check_embedder(
    conn: &Connection,
    dir: &Path,
    embedder: &EmbedderInfo,
    allow_mismatch: bool,
) -> Result<()> {
    let stored: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'embedder'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql_err)?;
    let stored: Option<EmbedderInfo> = stored.and_then(|s| serde_json::from_str(&s).ok());
    let count: i64 = conn
        .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
        .map_err(sql_err)?;
    match stored {
        Some(s) if &s != embedder && count > 0 && !allow_mismatch => Err(Error::EmbedderMismatch {
            dir: dir.to_path_buf(),
            stored: s.to_string(),
            configured: embedder.to_string(),
        }),
        Some(s) if &s == embedder => Ok(()),
        // A new or empty store takes the configured embedder. With allow_mismatch
        // the record changes only when reindex has re-embedded everything.
        _ if allow_mismatch && count > 0 => Ok(()),
        _ => set_embedder(conn, embedder),
    }
}

pub(crate) fn set_embedder(conn: &Connection, embedder: &EmbedderInfo) -> Result<()> {
    let json = serde_json::to_string(embedder).map_err(|e| Error::Internal(e.to_string()))?;
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('embedder', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [json],
    )
    .map_err(sql_err)?;
    Ok(())
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        // Saving HNSW indexes only shortens the next open; failure loses nothing.
        let _ = self.flush();
    }
}
