//! The outbox: long-term writes waiting for a retry, in the same database
//! as the memories, as durable as they are. Each entry belongs to its
//! tenant (row-level security); the replay reads every tenant's.

use memloop_core::{Error, Result, Scope, StoreError};
use memloop_longterm::OutboxEntry;
use serde_json::Value;

use crate::{PgStore, Tenancy};

/// How long the keyword change log keeps an entry: a server's copy of a
/// partition that has not caught up for longer is read whole again.
const KEYWORD_LOG_KEEP_MS: i64 = 3_600_000;

impl PgStore {
    pub(crate) fn outbox_push(&self, scope: &Scope, payload: &Value, error: &str) -> Result<i64> {
        let now = self.now();
        let scope_json = serde_json::to_value(scope).map_err(|e| Error::Internal(e.to_string()))?;
        self.tx(Tenancy::One(&scope.tenant), |tx| {
            Ok(tx
                .query_one(
                    "INSERT INTO outbox (tenant, scope, payload, attempts, last_error, created_at, next_at) \
                     VALUES ($1, $2, $3, 1, $4, $5, $5) RETURNING id",
                    &[&scope.tenant, &scope_json, payload, &error, &now],
                )?
                .get(0))
        })
    }

    pub(crate) fn outbox_due(&self, limit: usize, all: bool) -> Result<Vec<OutboxEntry>> {
        let until = if all { i64::MAX } else { self.now() };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.tx(Tenancy::All, |tx| {
            tx.query(
                "SELECT id, scope, payload, attempts, last_error, created_at FROM outbox \
                 WHERE next_at <= $1 ORDER BY id LIMIT $2",
                &[&until, &limit],
            )
        })?;
        rows.iter()
            .map(|r| {
                let id: i64 = r.get(0);
                let scope: Value = r.get(1);
                Ok(OutboxEntry {
                    id,
                    scope: serde_json::from_value(scope).map_err(|e| {
                        Error::Storage(
                            StoreError::from_source(e)
                                .with_context(format!("outbox entry {id} has an unreadable scope")),
                        )
                    })?,
                    payload: r.get(2),
                    attempts: r.get::<_, i32>(3).max(0) as u32,
                    last_error: r.get(4),
                    created_at: r.get(5),
                })
            })
            .collect()
    }

    pub(crate) fn outbox_done(&self, id: i64) -> Result<()> {
        self.tx(Tenancy::All, |tx| {
            tx.execute("DELETE FROM outbox WHERE id = $1", &[&id])?;
            Ok(())
        })
    }

    pub(crate) fn outbox_failed(&self, id: i64, error: &str) -> Result<()> {
        let now = self.now();
        self.tx(Tenancy::All, |tx| {
            tx.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = $1, \
                 next_at = $2 + 1000 * least(3600, 1::bigint << least(attempts, 12)) WHERE id = $3",
                &[&error, &now, &id],
            )?;
            Ok(())
        })
    }

    pub(crate) fn outbox_len(&self) -> Result<usize> {
        self.tx(Tenancy::All, |tx| {
            let n: i64 = tx.query_one("SELECT count(*) FROM outbox", &[])?.get(0);
            Ok(n.max(0) as usize)
        })
    }

    /// Drops keyword statistics of terms no current memory holds any
    /// more, and the keyword change log's entries older than
    /// `KEYWORD_LOG_KEEP_MS` (a process whose copy of a partition is older
    /// reads the partition whole again). Returns the log entries pruned.
    pub(crate) fn compact(&self) -> Result<usize> {
        self.tx(Tenancy::All, |tx| {
            tx.execute("DELETE FROM term_stats WHERE df <= 0", &[])?;
            tx.execute("DELETE FROM partition_stats WHERE docs <= 0", &[])?;
            let row = tx.query_one(
                "WITH gone AS (DELETE FROM keyword_log \
                   WHERE at < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1 \
                   RETURNING version) \
                 SELECT count(*), max(version) FROM gone",
                &[&KEYWORD_LOG_KEEP_MS],
            )?;
            let (pruned, floor): (i64, Option<i64>) = (row.get(0), row.get(1));
            if let Some(floor) = floor {
                tx.execute(
                    "INSERT INTO memloop_meta (key, value) VALUES ('keyword_log_floor', $1) \
                     ON CONFLICT (key) DO UPDATE SET value = \
                       greatest(memloop_meta.value::bigint, EXCLUDED.value::bigint)::text",
                    &[&floor.to_string()],
                )?;
            }
            Ok(pruned.max(0) as usize)
        })
    }
}
