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
//!
//! # Several processes on one directory
//! Writes run in `BEGIN IMMEDIATE` transactions and wait for another
//! process's write lock for up to [`StoreOptions::busy_timeout_ms`] (trying
//! again every 0.1–0.6 ms: SQLite's own busy handler backs off to 100 ms
//! and can starve behind busy writers) before answering
//! [`Error::Busy`]. A deferred transaction that reads and then writes cannot
//! wait: if another writer committed since its read began, SQLite refuses the
//! upgrade at once (SQLITE_BUSY_SNAPSHOT), which is why no write here is
//! deferred. Opening creates and migrates the schema while holding an OS
//! lock on `memloop.lock` in the directory, so processes that open a new
//! directory at the same time initialise it once.

mod access;
mod dump;
mod expire;
mod fields;
mod graph;
mod keyword_file;
mod outbox;
mod partition;
mod purge;
mod read;
mod removed_file;
mod rows;
mod schema;
mod seam;
mod stored_terms;
mod valid_from;
pub mod vector;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use memloop_core::time::Clock;
use memloop_core::{EmbedderInfo, Error, Result, StoreError};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

pub use memloop_longterm::{
    Decay, Entity, ExpireReport, ForgetReport, GraphStore, ListQuery, LongTermStore, MemoryStore,
    MemoryUpdate, Outbox, OutboxEntry, SearchQuery, Stats, Upkeep, DEFAULT_VECTOR_WEIGHT,
};

use access::AccessLog;
/// The store's traits, to call their methods on a store: `use memloop_store::prelude::*`.
pub use memloop_longterm::prelude;
use partition::PartitionIndex;
pub use partition::{load_saved_graph, IndexStatus};

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
#[serde(default, deny_unknown_fields)]
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
    /// How long a write (or an open) waits for another connection's lock
    /// before answering busy, in milliseconds. A few seconds rides out the
    /// write bursts of several processes sharing a directory; a commit
    /// holds the lock for milliseconds.
    pub busy_timeout_ms: u64,
    /// The time writes are stamped with and expiry and decay are judged
    /// by: the system's unless a test sets a manual one.
    #[serde(skip)]
    pub clock: Clock,
    /// A PostgreSQL URL (`postgres://…`): the facade then keeps the
    /// long-term store there (crate memloop-pg) instead of in the data
    /// directory; this store ignores it. Also `--store` / `MEMLOOP_STORE`.
    pub url: Option<String>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            ann_threshold: 5_000,
            durability: Durability::Full,
            context_weight: 0.5,
            busy_timeout_ms: DEFAULT_BUSY_TIMEOUT_MS,
            clock: Clock::system(),
            url: None,
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

    pub fn with_busy_timeout_ms(mut self, ms: u64) -> Self {
        self.busy_timeout_ms = ms;
        self
    }

    /// The clock to stamp writes and judge expiry by (see [`Clock::manual`]).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn busy_timeout(&self) -> Duration {
        Duration::from_millis(self.busy_timeout_ms)
    }
}

/// The default of [`StoreOptions::busy_timeout_ms`].
pub const DEFAULT_BUSY_TIMEOUT_MS: u64 = 5_000;

pub struct EmbeddedStore {
    dir: PathBuf,
    conn: Mutex<Connection>,
    /// Searches read a partition's index together; catching up with the
    /// log and gc write it. Saving it to disk only reads it, so searches go
    /// on while a large HNSW graph is written.
    partitions: Mutex<HashMap<String, Arc<RwLock<PartitionIndex>>>>,
    /// Held while saving index files (one writer per file name at a time).
    saving: Mutex<()>,
    /// Searches waiting for a partition's index (`read_for_search`), which
    /// gc lets in between its slices of removals.
    searches_waiting: AtomicUsize,
    /// gc's chunk being committed, by partition (`expire.rs`): a search
    /// that finds exactly its log entries unapplied takes them as applied.
    gc_chunks: Mutex<HashMap<String, expire::ChunkInFlight>>,
    embedder: EmbedderInfo,
    options: StoreOptions,
    access: AccessLog,
    /// Rows' `valid_from`, for searches that rank by time (`valid_from.rs`).
    valid_from: valid_from::ValidFromCache,
}

/// How a SQLite error reaches callers. A lock held by another connection is
/// busy (retry), never damage; a read-only file or directory is a permission
/// problem, never damage either. Paths are filled in by `Error::in_dir`.
pub(crate) fn sql_err(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Busy(e.to_string()),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Error::Corruption {
            dir: PathBuf::new(),
            reason: e.to_string(),
        },
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => Error::PermissionDenied {
            path: PathBuf::new(),
            reason: e.to_string(),
        },
        _ => Error::Storage(StoreError::from_source(e)),
    }
}

/// Starts a write transaction that takes the write lock at once, waiting
/// for it (up to the connection's busy timeout) instead of failing on the
/// upgrade from a read. It waits by trying again every 0.1 to 0.6 ms,
/// not through SQLite's busy handler: that one sleeps up to 100 ms between
/// tries, and behind several processes committing back to back it could
/// miss every moment the lock was free for the whole timeout (a writer
/// starved, answering busy, while the others went on).
pub(crate) fn write_tx(conn: &mut Connection) -> Result<Transaction<'_>> {
    let conn: &Connection = conn;
    let ms: u64 = conn
        .prepare_cached("PRAGMA busy_timeout")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(sql_err)?;
    conn.busy_timeout(Duration::ZERO).map_err(sql_err)?;
    // Each process sleeps a little differently, so waiters do not wake in step.
    let salt = u64::from(std::process::id());
    let began = retry_busy_with(
        Duration::from_millis(ms),
        |tries| Duration::from_micros(100 + (salt * 31 + u64::from(tries) * 7919) % 500),
        || Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(sql_err),
    );
    conn.busy_timeout(Duration::from_millis(ms))
        .map_err(sql_err)?;
    began
}

/// Runs `f` again while SQLite answers busy, sleeping with a growing
/// backoff, until `timeout` has passed. For the waits of an open that
/// SQLite's busy handler does not cover: the init lock, and switching the
/// journal mode (it takes an exclusive lock and may fail at once).
fn retry_busy<T>(timeout: Duration, f: impl FnMut() -> Result<T>) -> Result<T> {
    retry_busy_with(
        timeout,
        |tries| {
            (Duration::from_millis(5) * (1 << (tries - 1).min(5))).min(Duration::from_millis(100))
        },
        f,
    )
}

/// Runs `f` again while it answers busy, sleeping `pause(tries)` after the
/// `tries`-th busy answer (1, 2, …), until `timeout` has passed.
fn retry_busy_with<T>(
    timeout: Duration,
    mut pause: impl FnMut(u32) -> Duration,
    mut f: impl FnMut() -> Result<T>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    let mut tries = 0u32;
    loop {
        match f() {
            Err(Error::Busy(_)) if Instant::now() < deadline => {
                tries = tries.saturating_add(1);
                std::thread::sleep(pause(tries));
            }
            other => return other,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another thread cannot leave SQLite inconsistent (transactions
    // roll back), so a poisoned lock is still safe to use.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Shared access to a partition's index (see `lock` on poisoning: an
/// index is derived state, caught up from the log whatever it holds).
fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|p| p.into_inner())
}

impl EmbeddedStore {
    /// A search's shared access to a partition's index. When it must wait
    /// (gc holds the lock), it is counted as waiting, so that gc, between
    /// two holds, lets it in instead of taking the lock again first: the
    /// lock wakes a waiting reader when released, but the releasing thread
    /// used to take it again before the reader ran, and a search waited
    /// for all of a chunk's 20,000 removals (7–28 ms, docs/forgetting.md).
    pub(crate) fn read_for_search<'a, T>(&self, m: &'a RwLock<T>) -> RwLockReadGuard<'a, T> {
        if let Ok(guard) = m.try_read() {
            return guard;
        }
        self.searches_waiting.fetch_add(1, Ordering::SeqCst);
        let guard = read(m);
        self.searches_waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Between two holds of an index's lock by maintenance: gives waiting
    /// searches the time to take it (at most a millisecond; a search
    /// waiting for another partition's index may be counted too).
    pub(crate) fn let_searches_in(&self) {
        let start = Instant::now();
        while self.searches_waiting.load(Ordering::SeqCst) > 0
            && start.elapsed() < Duration::from_millis(1)
        {
            std::thread::yield_now();
        }
    }

    /// A store over `dir` for a model of four dimensions, for unit tests.
    #[cfg(test)]
    pub(crate) fn for_test(dir: &Path) -> EmbeddedStore {
        let info = EmbedderInfo {
            model_id: "test".into(),
            dimensions: 4,
        };
        EmbeddedStore::open(dir, info, StoreOptions::default()).unwrap()
    }
}

pub const DB_FILE: &str = "memloop.db";
/// Held (an OS file lock) while a process creates or migrates the schema.
pub const LOCK_FILE: &str = "memloop.lock";

/// Opens (creating if needed) the embedded store in `dir` behind the
/// seam: what the facade holds. Refuses a store written with another
/// embedder (see `memloop reindex`).
pub fn open(
    dir: &Path,
    embedder: EmbedderInfo,
    options: StoreOptions,
) -> Result<Arc<dyn LongTermStore>> {
    Ok(Arc::new(EmbeddedStore::open(dir, embedder, options)?))
}

/// Opens the store in `dir` whatever embedder wrote it, for `reindex`.
pub fn open_for_reindex(
    dir: &Path,
    embedder: EmbedderInfo,
    options: StoreOptions,
) -> Result<Arc<dyn LongTermStore>> {
    Ok(Arc::new(EmbeddedStore::open_for_reindex(
        dir, embedder, options,
    )?))
}

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
        prepare_dir(dir)?;
        let timeout = options.busy_timeout();
        // Held until the schema is created and migrated: the first processes
        // on a new directory would otherwise race to create the same tables.
        let init_lock = InitLock::acquire(dir, timeout)?;
        let path = dir.join(DB_FILE);
        let located = |e: Error| e.in_dir(dir);
        let mut conn = Connection::open(&path).map_err(|e| {
            located(match sql_err(e) {
                Error::Storage(e) => {
                    Error::Storage(e.with_context(format!("cannot open {}", path.display())))
                }
                other => other,
            })
        })?;
        conn.busy_timeout(timeout)
            .map_err(sql_err)
            .map_err(located)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        retry_busy(timeout, || {
            // auto_vacuum and page_size take effect only on a new database
            // (before its first table), and setting auto_vacuum opens a
            // write transaction: on an existing store it would make every
            // open wait for the write lock behind other processes' writers.
            let new = if is_new_database(&conn)? {
                NEW_DATABASE_PRAGMAS
            } else {
                ""
            };
            conn.execute_batch(&format!(
                "{new}PRAGMA journal_mode = WAL; {}",
                connection_pragmas(&options)
            ))
            .map_err(sql_err)
        })
        .map_err(located)?;
        retry_busy(timeout, || schema::migrate(&mut conn)).map_err(located)?;
        retry_busy(timeout, || {
            check_embedder(&conn, dir, &embedder, allow_mismatch)
        })
        .map_err(located)?;
        drop(init_lock);
        retry_busy(timeout, || set_secure_delete(&conn)).map_err(located)?;
        let access = AccessLog::start(
            open_connection(dir, &options).map_err(located)?,
            options.clock.clone(),
        );
        Ok(EmbeddedStore {
            dir: dir.to_path_buf(),
            conn: Mutex::new(conn),
            partitions: Mutex::new(HashMap::new()),
            saving: Mutex::new(()),
            searches_waiting: AtomicUsize::new(0),
            gc_chunks: Mutex::new(HashMap::new()),
            embedder,
            options,
            access,
            valid_from: Default::default(),
        })
    }

    /// A second connection to the store's database, for `expire` and
    /// `compact`, which must not hold the shared connection (and so every
    /// search) for long. It does not checkpoint after each commit: its
    /// caller checkpoints once when done. It syncs as every connection
    /// does: a commit that left its frames unsynced would make the next
    /// writer's sync (an add holding the shared connection) write them.
    pub(crate) fn side_connection(&self) -> Result<Connection> {
        let conn = open_connection(&self.dir, &self.options)?;
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0;")
            .map_err(sql_err)?;
        Ok(conn)
    }

    /// Now, by the store's clock.
    fn now(&self) -> i64 {
        self.options.clock.now()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    fn check_dims(&self, v: &[f32]) -> Result<()> {
        memloop_longterm::checks::check_vector(&self.embedder, v)
    }
}

/// Prepared statements each connection keeps: the store's own (about
/// thirty) and the record reads' padded lists (`read.rs`), so that none
/// of them is evicted and prepared again (rusqlite keeps 16).
const STATEMENT_CACHE: usize = 64;

/// Another connection to an open store's database, set up as the first.
fn open_connection(dir: &Path, options: &StoreOptions) -> Result<Connection> {
    let conn = Connection::open(dir.join(DB_FILE)).map_err(sql_err)?;
    conn.busy_timeout(options.busy_timeout()).map_err(sql_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch(&connection_pragmas(options))
        .map_err(sql_err)?;
    set_secure_delete(&conn)?;
    Ok(conn)
}

/// What only a new database takes.
///
/// - Incremental auto-vacuum: a purge can give every free page back
///   (`purge.rs`).
/// - Pages of 16 KiB rather than SQLite's 4 KiB. A memory's row is about
///   1.5 KiB (its vector alone 0.8 KiB), so a 4 KiB page held two or
///   three and large writes moved many small pages: gc deleting 100,000
///   of 200,000 memories commits and checkpoints every page of the table
///   once, and at 4 KiB those four times as many frames cost it a fifth
///   of its time (docs/forgetting.md). A single durable write pays more
///   for its larger pages: about 0.09 ms in a small partition, about 1 ms
///   at a million memories in one.
///
/// A store created before keeps the page size it has: WAL mode fixes it.
const NEW_DATABASE_PRAGMAS: &str = "PRAGMA page_size = 16384; PRAGMA auto_vacuum = INCREMENTAL; ";

/// Whether the database file holds nothing yet (no page written).
fn is_new_database(conn: &Connection) -> Result<bool> {
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .map_err(sql_err)?;
    Ok(pages == 0)
}

/// How deleted content is erased. A purge promises that no deleted text
/// lingers in the file. In a database with incremental auto-vacuum (every
/// one created since) a purge ends by removing every free page from the
/// file (`purge.rs`), so deletes need only zero what they rewrite anyway
/// (`FAST`): a gc that frees 50,000 pages does not write 200 MB of zeros.
/// In an older database free pages stay in the file, so they are zeroed
/// as they are freed (`ON`).
fn set_secure_delete(conn: &Connection) -> Result<()> {
    let mode = if incremental_vacuum(conn)? {
        "FAST"
    } else {
        "ON"
    };
    conn.execute_batch(&format!("PRAGMA secure_delete = {mode};"))
        .map_err(sql_err)
}

/// Whether the database can give its free pages back (`auto_vacuum =
/// INCREMENTAL`).
pub(crate) fn incremental_vacuum(conn: &Connection) -> Result<bool> {
    let mode: i64 = conn
        .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
        .map_err(sql_err)?;
    Ok(mode == 2)
}

/// The settings of every connection to the database. `secure_delete` on
/// every one (made `FAST` by `set_secure_delete` where a purge vacuums):
/// a purge promises that no deleted text lingers in free pages, whichever
/// connection freed them. The first 256 MiB of the file are read through
/// a memory map (a cold partition's pages without a pread each, see
/// docs/benchmarks.md); no more, because mapped pages count in the
/// process's resident memory.
fn connection_pragmas(options: &StoreOptions) -> String {
    let sync = match options.durability {
        Durability::Full => "FULL",
        Durability::Process => "NORMAL",
    };
    format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; \
         PRAGMA secure_delete = ON; PRAGMA cache_size = -65536; PRAGMA mmap_size = 268435456;"
    )
}

/// Makes sure `dir` is a directory this process can write, creating it if
/// needed, with errors that say what to do about it.
fn prepare_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::invalid(format!(
            "data directory {} is a file, not a directory; choose another --data-dir",
            dir.display()
        )));
    }
    for d in [dir.to_path_buf(), dir.join("index")] {
        std::fs::create_dir_all(&d).map_err(|e| io_err(&d, e))?;
    }
    // SQLite must create memloop.db-wal and -shm here even to read, and
    // when it cannot it says only "unable to open database file": try
    // creating a file first, so a read-only directory is named as such.
    // One fixed name: processes probing at once only truncate and remove
    // each other's empty file, and a crash leaves at most this one behind.
    let probe = dir.join(".memloop-write-probe");
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .map_err(|e| io_err(dir, e))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// An I/O error on `path`, classed by what the user can do about it.
pub(crate) fn io_err(path: &Path, e: std::io::Error) -> Error {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => Error::PermissionDenied {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
        ErrorKind::NotADirectory | ErrorKind::AlreadyExists => Error::invalid(format!(
            "{} cannot be created: a part of it is a file, not a directory ({e}); choose another --data-dir",
            path.display()
        )),
        _ => Error::Io {
            path: path.to_path_buf(),
            source: e,
        },
    }
}

/// An exclusive OS lock on `memloop.lock`, released on drop (or when the
/// process dies: the kernel drops it, so a crash never leaves it stuck).
struct InitLock(std::fs::File);

impl InitLock {
    fn acquire(dir: &Path, timeout: Duration) -> Result<InitLock> {
        let path = dir.join(LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        retry_busy(timeout, || {
            match file.try_lock() {
            Ok(()) => Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Busy(format!(
                "another process kept {} locked while opening the store for longer than the busy timeout",
                path.display()
            ))),
            // A file system without locks (some network mounts): go on
            // without it; the exclusive transaction around each migration
            // step still keeps the schema whole.
            Err(std::fs::TryLockError::Error(_)) => Ok(()),
        }
        })?;
        Ok(InitLock(file))
    }
}

impl Drop for InitLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first only makes
        // it prompt. Failure to unlock cannot corrupt anything.
        let _ = self.0.unlock();
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
        // Saving HNSW indexes only shortens the next open; failure loses
        // nothing. Retrieval counts are written here at the latest.
        let _ = self.flush();
        self.access.stop();
    }
}

#[cfg(test)]
mod tests {
    use memloop_core::{NewMemory, Scope};

    use super::*;

    fn page_size(dir: &Path) -> i64 {
        let conn = Connection::open(dir.join(DB_FILE)).unwrap();
        conn.query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap()
    }

    /// A new store takes 16 KiB pages; one created with SQLite's 4 KiB
    /// keeps them (WAL mode fixes the size) and works as before.
    #[test]
    fn a_new_store_has_16_kib_pages_and_an_older_one_keeps_its_own() {
        let new = tempfile::tempdir().unwrap();
        drop(EmbeddedStore::for_test(new.path()));
        assert_eq!(page_size(new.path()), 16_384);

        let old = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(old.path().join(DB_FILE)).unwrap();
            conn.execute_batch("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL;")
                .unwrap();
        }
        let store = EmbeddedStore::for_test(old.path());
        let scope = Scope::user("u");
        let items = vec![(
            NewMemory::text("kept on small pages"),
            vec![1.0, 0.0, 0.0, 0.0],
        )];
        let added = store.insert(&scope, items).unwrap();
        assert_eq!(
            store.get("default", &added[0].0.id).unwrap().text,
            "kept on small pages"
        );
        drop(store);
        assert_eq!(page_size(old.path()), 4096);
    }
}
