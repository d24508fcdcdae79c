//! Which long-term store the configuration names: PostgreSQL when
//! `[store] url` (or `--store`, `MEMLOOP_STORE`) is a `postgres://` URL,
//! else the embedded store in the data directory (the default). PostgreSQL
//! needs the `postgres` feature (the memloop binary has it); without it a
//! PostgreSQL URL is refused, saying so.

use std::path::Path;
use std::sync::Arc;

use memloop_core::{EmbedderInfo, Error, Result};
use memloop_longterm::LongTermStore;
use memloop_store::StoreOptions;

/// Opens the configured long-term store for vectors of `embedder`.
pub(crate) fn open_store(
    dir: &Path,
    embedder: EmbedderInfo,
    options: StoreOptions,
) -> Result<Arc<dyn LongTermStore>> {
    match postgres_url(&options)? {
        Some(url) => pg::open(url, embedder, &options),
        None => memloop_store::open(dir, embedder, options),
    }
}

/// As `open_store`, whatever embedder wrote the store (for `reindex`).
pub(crate) fn open_store_for_reindex(
    dir: &Path,
    embedder: EmbedderInfo,
    options: StoreOptions,
) -> Result<Arc<dyn LongTermStore>> {
    match postgres_url(&options)? {
        Some(url) => pg::open_for_reindex(url, embedder, &options),
        None => memloop_store::open_for_reindex(dir, embedder, options),
    }
}

fn postgres_url(options: &StoreOptions) -> Result<Option<&str>> {
    match options.url.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(url) if pg::is_url(url) => Ok(Some(url)),
        Some(url) => Err(Error::invalid(format!(
            "the store URL {} is not a PostgreSQL URL: write postgres://USER@HOST:PORT/DATABASE, or leave `[store] url`, --store and MEMLOOP_STORE unset to keep the store in the data directory",
            pg::redact(url)
        ))),
    }
}

/// The PostgreSQL store, in a build with it.
#[cfg(feature = "postgres")]
mod pg {
    use super::*;

    pub(super) fn open(
        url: &str,
        embedder: EmbedderInfo,
        options: &StoreOptions,
    ) -> Result<Arc<dyn LongTermStore>> {
        memloop_pg::open(url, embedder, pg_options(options)?)
    }

    pub(super) fn open_for_reindex(
        url: &str,
        embedder: EmbedderInfo,
        options: &StoreOptions,
    ) -> Result<Arc<dyn LongTermStore>> {
        memloop_pg::open_for_reindex(url, embedder, pg_options(options)?)
    }

    pub(super) fn is_url(url: &str) -> bool {
        memloop_pg::is_postgres_url(url)
    }

    pub(super) fn redact(url: &str) -> String {
        memloop_pg::redact_url(url)
    }

    fn pg_options(options: &StoreOptions) -> Result<memloop_pg::PgOptions> {
        let mut pg = memloop_pg::PgOptions::default().with_clock(options.clock.clone());
        pg.context_weight = options.context_weight;
        // HNSW breadth per query: recall against latency (docs/postgres.md).
        if let Ok(value) = std::env::var(EF_SEARCH_ENV) {
            let ef = value
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "{EF_SEARCH_ENV}={value:?} is not a whole number from 1 to 1000: set one, or unset it for the default ({})",
                        memloop_pg::PgOptions::default().ef_search
                    ))
                })?;
            pg = pg.with_ef_search(ef);
        }
        Ok(pg)
    }

    /// Sets pgvector's `hnsw.ef_search` for the PostgreSQL store's searches.
    const EF_SEARCH_ENV: &str = "MEMLOOP_PG_EF_SEARCH";
}

/// A build without PostgreSQL: a PostgreSQL URL is refused, saying why.
#[cfg(not(feature = "postgres"))]
mod pg {
    use super::*;

    fn unsupported() -> Error {
        Error::invalid(
            "the store URL names PostgreSQL, but this build of memloop has no PostgreSQL support: \
             build it with the `postgres` feature (the memloop binary has it), or leave `[store] url` unset \
             to keep the store in the data directory",
        )
    }

    pub(super) fn open(
        _url: &str,
        _embedder: EmbedderInfo,
        _options: &StoreOptions,
    ) -> Result<Arc<dyn LongTermStore>> {
        Err(unsupported())
    }

    pub(super) fn open_for_reindex(
        _url: &str,
        _embedder: EmbedderInfo,
        _options: &StoreOptions,
    ) -> Result<Arc<dyn LongTermStore>> {
        Err(unsupported())
    }

    pub(super) fn is_url(url: &str) -> bool {
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    /// Only the scheme: the rest may hold a password.
    pub(super) fn redact(url: &str) -> String {
        match url.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://…"),
            None => "(not shown)".into(),
        }
    }
}
