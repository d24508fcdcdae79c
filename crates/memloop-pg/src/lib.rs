//! memloop's long-term store on PostgreSQL with pgvector: the same record
//! model, history, supersession, provenance, outbox and tenants as the
//! embedded store (`memloop-store`), behind the same `LongTermStore` seam,
//! so any number of servers can share one database.
//!
//! # How it keeps the seam's promises
//! - **Acknowledged means durable**: every write method is one PostgreSQL
//!   transaction; it returns after COMMIT. Every handle on the database
//!   reads the committed rows, so a write through one server is found
//!   through another on its next request.
//! - **Tenants are walls, kept by the database**: every table holding a
//!   tenant's data has row-level security (forced, so the table owner is
//!   bound too) keyed by the transaction's `memloop.tenant` setting; each
//!   transaction sets it first. A query that forgot its tenant sees nothing.
//!   A role that bypasses row-level security (a superuser) is refused.
//! - **Supersession is atomic and single**: the old row is locked
//!   (`SELECT … FOR UPDATE`) before it is checked, so of two concurrent
//!   supersessions the second waits, then finds it no longer current.
//! - **Idempotent inserts** hold a transaction-level advisory lock on the
//!   (partition, content hash) they insert, so two servers inserting the
//!   same text at once store it once.
//! - **Search** fuses pgvector (HNSW, inner product on unit vectors: the
//!   cosine) with BM25 computed from the analyser's terms stored as a
//!   `tsvector`, using per-partition statistics a trigger keeps, through
//!   the same `memloop_core::fusion` as the embedded store: the scores are
//!   comparable. BM25 runs in this process's copy of the partition's
//!   keyword index, brought to the search's snapshot from a change log
//!   (`keyword_cache.rs`). Partitions below `exact_threshold` memories are searched
//!   exactly, as the embedded store does below its `ann_threshold`.
//! - **Faults**: an unreachable server is `Error::Remote` naming the URL
//!   without its password (503 on the server, exit 5 on the CLI). Opening
//!   does not need the server up: the schema is checked on first contact.
//!   A broken connection is dropped and the transaction, which the server
//!   rolled back, is retried on a new one for up to `retry_timeout_ms`.

mod access;
mod dump;
mod error;
mod graph;
mod keyword_cache;
mod outbox;
mod pool;
mod read;
mod rows;
mod schema;
mod seam;
mod search;
mod terms;
mod write;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memloop_core::text::Analyzer;
use memloop_core::time::Clock;
use memloop_core::{EmbedderInfo, Error, ErrorClass, Result};
use memloop_longterm::access::AccessBatch;
use memloop_longterm::LongTermStore;

pub use error::redact_url;
use pool::{Pool, Tx, TxMode};

/// True when `url` names a PostgreSQL database (not a data directory).
pub fn is_postgres_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Settings of the PostgreSQL store.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PgOptions {
    /// Most connections one process keeps.
    pub pool_size: usize,
    /// How long an operation keeps retrying a lost connection or a
    /// deadlock before answering, in milliseconds.
    pub retry_timeout_ms: u64,
    /// Weight of a memory's context terms in BM25, as the embedded store's.
    pub context_weight: f32,
    /// Partitions with fewer current memories are searched exactly; larger
    /// ones through the HNSW index.
    pub exact_threshold: i64,
    /// HNSW candidates examined per query (pgvector's `hnsw.ef_search`),
    /// at least the search's candidate count.
    pub ef_search: i64,
    /// Most memories whose keyword index this process keeps in memory,
    /// over all partitions (`keyword_cache.rs`); the least recently
    /// searched partitions are dropped first. 0: none is kept, and every
    /// keyword search reads the postings in SQL.
    pub keyword_cache_docs: u64,
    /// The clock writes are stamped and expiry judged by (tests set a
    /// manual one instead of waiting).
    pub clock: Clock,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: 16,
            retry_timeout_ms: 10_000,
            context_weight: 0.5,
            exact_threshold: 5_000,
            ef_search: 200,
            keyword_cache_docs: 1_000_000,
            clock: Clock::system(),
        }
    }
}

impl PgOptions {
    pub fn with_pool_size(mut self, n: usize) -> Self {
        self.pool_size = n;
        self
    }

    pub fn with_retry_timeout_ms(mut self, ms: u64) -> Self {
        self.retry_timeout_ms = ms;
        self
    }

    pub fn with_exact_threshold(mut self, n: i64) -> Self {
        self.exact_threshold = n;
        self
    }

    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn with_keyword_cache_docs(mut self, n: u64) -> Self {
        self.keyword_cache_docs = n;
        self
    }

    pub fn with_ef_search(mut self, n: i64) -> Self {
        self.ef_search = n;
        self
    }
}

/// Whose rows a transaction may touch.
#[derive(Clone, Copy)]
pub(crate) enum Tenancy<'a> {
    One(&'a str),
    /// Store-wide upkeep (stats, reindex, the outbox replay).
    All,
}

pub struct PgStore {
    pool: Arc<Pool>,
    location: String,
    embedder: EmbedderInfo,
    options: PgOptions,
    analyzer: Analyzer,
    allow_mismatch: bool,
    /// Set once the schema was checked on a live connection.
    ready: Mutex<bool>,
    keywords: keyword_cache::KeywordCache,
    /// Retrieval counts waiting to be written (`access.rs`).
    access: AccessBatch,
}

impl Drop for PgStore {
    /// Writes the retrieval counts still pending.
    fn drop(&mut self) {
        self.access.stop();
    }
}

/// Opens the PostgreSQL store at `url` behind the seam. Refuses a store
/// written with another embedder; an unreachable server is not an error
/// yet (each operation answers `Remote` until it is back).
pub fn open(
    url: &str,
    embedder: EmbedderInfo,
    options: PgOptions,
) -> Result<Arc<dyn LongTermStore>> {
    Ok(Arc::new(PgStore::open(url, embedder, options)?))
}

/// Opens the store whatever embedder wrote it, for `reindex`.
pub fn open_for_reindex(
    url: &str,
    embedder: EmbedderInfo,
    options: PgOptions,
) -> Result<Arc<dyn LongTermStore>> {
    Ok(Arc::new(PgStore::open_inner(url, embedder, options, true)?))
}

impl PgStore {
    pub fn open(url: &str, embedder: EmbedderInfo, options: PgOptions) -> Result<PgStore> {
        Self::open_inner(url, embedder, options, false)
    }

    fn open_inner(
        url: &str,
        embedder: EmbedderInfo,
        options: PgOptions,
        allow_mismatch: bool,
    ) -> Result<PgStore> {
        let location = redact_url(url);
        let mut config: postgres::Config = url.trim().parse().map_err(|e| {
            Error::invalid(format!(
                "{location} is not a PostgreSQL URL ({e}): write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("memloop");
        }
        let wait = Duration::from_millis(options.retry_timeout_ms.max(1));
        let keywords = keyword_cache::KeywordCache::new(options.keyword_cache_docs);
        let pool = Arc::new(Pool::new(config, location.clone(), options.pool_size, wait));
        let store = PgStore {
            access: access::start(pool.clone()),
            pool,
            location,
            embedder,
            options,
            analyzer: Analyzer::default(),
            allow_mismatch,
            ready: Mutex::new(false),
            keywords,
        };
        match store.ensure_ready() {
            // The server may come up later: the first operation that
            // reaches it checks the schema then.
            Err(e) if e.class() == ErrorClass::Transient => Ok(store),
            Err(e) => Err(e),
            Ok(()) => Ok(store),
        }
    }

    /// The URL without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Creates or migrates the schema and checks the embedder, once.
    fn ensure_ready(&self) -> Result<()> {
        let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        if *ready {
            return Ok(());
        }
        let mut conn = self.pool.get()?;
        let mut tx = conn.begin(TxMode::Write)?;
        check_role(&mut tx)?;
        check_vector(&mut tx)?;
        schema::migrate(&mut tx, self.embedder.dimensions)?;
        tx.commit()?;
        let mut tx = conn.begin(TxMode::Write)?;
        set_tenancy(&mut tx, Tenancy::All)?;
        self.check_embedder(&mut tx)?;
        tx.commit()?;
        *ready = true;
        Ok(())
    }

    fn check_embedder(&self, tx: &mut Tx<'_>) -> Result<()> {
        let stored: Option<EmbedderInfo> = tx
            .query_opt("SELECT value FROM memloop_meta WHERE key = 'embedder'", &[])?
            .and_then(|r| serde_json::from_str(&r.get::<_, String>(0)).ok());
        let count: i64 = tx.query_one("SELECT count(*) FROM memories", &[])?.get(0);
        match stored {
            Some(s) if s != self.embedder && count > 0 && !self.allow_mismatch => {
                Err(Error::EmbedderMismatch {
                    dir: self.location.clone().into(),
                    stored: s.to_string(),
                    configured: self.embedder.to_string(),
                })
            }
            Some(s) if s == self.embedder => Ok(()),
            _ if self.allow_mismatch && count > 0 => Ok(()),
            _ => {
                // A new or empty store takes the configured embedder, and
                // its vector column the embedder's dimensions.
                let dims: i32 = tx
                    .query_one(
                        "SELECT atttypmod FROM pg_attribute \
                         WHERE attrelid = 'memories'::regclass AND attname = 'embedding'",
                        &[],
                    )?
                    .get(0);
                if dims as i64 != self.embedder.dimensions as i64 {
                    tx.batch(&format!(
                        "DROP INDEX memories_hnsw; \
                         ALTER TABLE memories ALTER COLUMN embedding TYPE halfvec({0}); \
                         CREATE INDEX memories_hnsw ON memories USING hnsw (embedding halfvec_ip_ops) WHERE valid_until IS NULL; \
                         DROP INDEX pieces_hnsw; \
                         ALTER TABLE pieces ALTER COLUMN embedding TYPE halfvec({0}); \
                         CREATE INDEX pieces_hnsw ON pieces USING hnsw (embedding halfvec_ip_ops) WHERE valid_until IS NULL;",
                        self.embedder.dimensions
                    ))?;
                }
                set_embedder(tx, &self.embedder)
            }
        }
    }

    /// Runs `f` in one transaction that sees `who`'s rows. A lost
    /// connection, a deadlock or a serialization failure before the commit
    /// rolled everything back: it is retried on a fresh connection until
    /// `retry_timeout_ms` has passed. A failure of the commit itself is
    /// not retried (it may have committed).
    pub(crate) fn tx<T>(
        &self,
        who: Tenancy<'_>,
        f: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.tx_in(TxMode::Write, who, f)
    }

    /// Runs the reads of `f` against one snapshot (see [`TxMode::Snapshot`]),
    /// retried as [`PgStore::tx`] is.
    pub(crate) fn snapshot<T>(
        &self,
        who: Tenancy<'_>,
        f: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.tx_in(TxMode::Snapshot, who, f)
    }

    fn tx_in<T>(
        &self,
        mode: TxMode,
        who: Tenancy<'_>,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let deadline = Instant::now() + Duration::from_millis(self.options.retry_timeout_ms);
        let mut pause = Duration::from_millis(20);
        loop {
            let mut committing = false;
            let outcome = self.ensure_ready().and_then(|()| {
                let mut conn = self.pool.get()?;
                let result: Result<T> = (|| {
                    let mut tx = conn.begin(mode)?;
                    set_tenancy(&mut tx, who)?;
                    let value = f(&mut tx)?;
                    committing = true;
                    tx.commit()?;
                    Ok(value)
                })();
                if matches!(&result, Err(e) if e.class() == ErrorClass::Transient) {
                    conn.discard();
                }
                result
            });
            match outcome {
                Err(e)
                    if e.class() == ErrorClass::Transient
                        && !committing
                        && Instant::now() + pause < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    fn check_dims(&self, v: &[f32]) -> Result<()> {
        memloop_longterm::checks::check_vector(&self.embedder, v)
    }

    /// Now, by the store's clock.
    pub(crate) fn now(&self) -> i64 {
        self.options.clock.now()
    }

    pub(crate) fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }
}

pub(crate) fn set_tenancy(tx: &mut Tx<'_>, who: Tenancy<'_>) -> Result<()> {
    let (tenant, all) = match who {
        Tenancy::One(t) => (t, "off"),
        Tenancy::All => ("", "on"),
    };
    tx.query(
        "SELECT set_config('memloop.tenant', $1, true), set_config('memloop.all_tenants', $2, true)",
        &[&tenant, &all],
    )?;
    Ok(())
}

pub(crate) fn set_embedder(tx: &mut Tx<'_>, embedder: &EmbedderInfo) -> Result<()> {
    let json = serde_json::to_string(embedder).map_err(|e| Error::Internal(e.to_string()))?;
    tx.execute(
        "INSERT INTO memloop_meta (key, value) VALUES ('embedder', $1) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&json],
    )?;
    Ok(())
}

/// Refuses a role that row-level security does not bind: with it, the
/// database would not keep tenants apart.
fn check_role(tx: &mut Tx<'_>) -> Result<()> {
    let row = tx.query_one(
        "SELECT current_user::text, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user",
        &[],
    )?;
    let (user, bypass): (String, bool) = (row.get(0), row.get(1));
    if bypass {
        return Err(Error::invalid(format!(
            "PostgreSQL role {user:?} at {} is a superuser or bypasses row-level security, so the database would not keep tenants apart: connect as an ordinary role that owns (or may create) memloop's tables (see docs/postgres.md)",
            tx.location()
        )));
    }
    Ok(())
}

/// pgvector must be installed in the database (creating it needs a superuser).
fn check_vector(tx: &mut Tx<'_>) -> Result<()> {
    let installed = tx
        .query_opt("SELECT 1 FROM pg_extension WHERE extname = 'vector'", &[])?
        .is_some();
    if installed {
        return Ok(());
    }
    let available = tx
        .query_opt(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'",
            &[],
        )?
        .is_some();
    Err(Error::invalid(if available {
        format!(
            "the database at {} lacks the pgvector extension: have a superuser run `CREATE EXTENSION vector;` in it (scripts/pg.sh does this for its own server)",
            tx.location()
        )
    } else {
        format!(
            "PostgreSQL at {} has no pgvector: install pgvector 0.8 or later on the server, or use scripts/pg.sh's server",
            tx.location()
        )
    }))
}
