//! The outbox: long-term writes waiting for a retry, in the same SQLite file
//! as the memories, so a queued write survives a crash like any other.

use memloop_core::{now_millis, Error, Result, Scope, StoreError};
use memloop_longterm::OutboxEntry;
use rusqlite::params;
use serde_json::Value;

use crate::{sql_err, EmbeddedStore};

impl EmbeddedStore {
    /// Queues a write; returns its id.
    pub(crate) fn outbox_push(&self, scope: &Scope, payload: &Value, error: &str) -> Result<i64> {
        let now = now_millis();
        let scope_json =
            serde_json::to_string(scope).map_err(|e| Error::Internal(e.to_string()))?;
        let conn = self.conn();
        conn.execute(
            "INSERT INTO outbox (tenant, scope, payload, attempts, last_error, created_at, next_at) \
             VALUES (?1, ?2, ?3, 1, ?4, ?5, ?5)",
            params![scope.tenant, scope_json, payload.to_string(), error, now],
        )
        .map_err(sql_err)?;
        Ok(conn.last_insert_rowid())
    }

    /// Queued writes due now (with `all`, due or not), oldest first, of every
    /// tenant: the caller replays each in its own scope.
    pub(crate) fn outbox_due(&self, limit: usize, all: bool) -> Result<Vec<OutboxEntry>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, scope, payload, attempts, last_error, created_at FROM outbox \
                 WHERE next_at <= ?1 ORDER BY id LIMIT ?2",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(
                params![if all { i64::MAX } else { now_millis() }, limit as i64],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, u32>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                },
            )
            .map_err(sql_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, scope, payload, attempts, last_error, created_at) = row.map_err(sql_err)?;
            let damaged = |e: serde_json::Error| {
                Error::Storage(
                    StoreError::from_source(e)
                        .with_context(format!("outbox entry {id} is not valid JSON")),
                )
            };
            out.push(OutboxEntry {
                id,
                scope: serde_json::from_str(&scope).map_err(damaged)?,
                payload: serde_json::from_str(&payload).map_err(damaged)?,
                attempts,
                last_error,
                created_at,
            });
        }
        Ok(out)
    }

    /// The write went through: forget the entry.
    pub(crate) fn outbox_done(&self, id: i64) -> Result<()> {
        self.conn()
            .execute("DELETE FROM outbox WHERE id = ?1", [id])
            .map_err(sql_err)?;
        Ok(())
    }

    /// It failed again: try later, backing off with the number of attempts.
    pub(crate) fn outbox_failed(&self, id: i64, error: &str) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?1, \
                 next_at = ?2 + 1000 * min(3600, 1 << min(attempts, 12)) WHERE id = ?3",
                params![error, now_millis(), id],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    /// How many writes wait.
    pub(crate) fn outbox_len(&self) -> Result<usize> {
        self.conn()
            .query_row("SELECT count(*) FROM outbox", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(sql_err)
    }
}
