//! Retrieval counts, kept in memory and written in batches
//! (`memloop_longterm::access`): pending counts go into the next write's
//! own transaction, a flush, the store's drop, or a transaction of their
//! own from the batch's background thread. Those transactions run on a
//! connection of their own, so their sync never holds up the searches
//! waiting on the store's shared connection.

use std::collections::HashMap;
use std::sync::Mutex;

use memloop_core::time::Clock;
use memloop_core::Result;
use memloop_longterm::access::{AccessBatch, PendingAccess, Retrieved};
use rusqlite::{params, Connection, Transaction};

use crate::{lock, sql_err, write_tx};

pub(crate) struct AccessLog {
    batch: AccessBatch,
    clock: Clock,
}

impl AccessLog {
    /// Starts the background writer on `conn`, a connection of its own.
    /// Its commits do not sync: a crash may lose the last counts (as the
    /// batching already allows), never a memory, and the writer's small
    /// transactions (`memloop_longterm::access`) then cost no sync each.
    pub(crate) fn start(conn: Connection, clock: Clock) -> AccessLog {
        // WAL mode keeps the file consistent at NORMAL; a failure leaves
        // the connection's own setting, which is only stricter.
        let _ = conn.execute_batch("PRAGMA synchronous = NORMAL");
        let conn = Mutex::new(conn);
        let batch = AccessBatch::start(move |pending| {
            let mut conn = lock(&conn);
            let tx = write_tx(&mut conn)?;
            apply(&tx, pending)?;
            tx.commit().map_err(sql_err)
        });
        AccessLog { batch, clock }
    }

    /// Counts one retrieval of each id, now.
    pub(crate) fn record(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        self.batch.record(tenant, ids, self.clock.now())
    }

    /// Adds the retrievals not yet written to the records' access counts,
    /// so this handle's searches see its own retrievals at once.
    pub(crate) fn merge_into<R: Retrieved>(&self, tenant: &str, records: &mut HashMap<i64, R>) {
        self.batch.merge_into(tenant, records.values_mut());
    }

    /// Writes what is pending inside a write's own transaction (the caller
    /// holds the connection). If that transaction then fails, those counts
    /// are lost with it.
    pub(crate) fn write_in(&self, tx: &Transaction<'_>) -> Result<()> {
        apply(tx, &self.batch.take())
    }

    /// Writes what is pending in a transaction of its own.
    pub(crate) fn flush(&self) -> Result<()> {
        self.batch.flush()
    }

    /// Writes what is pending and stops the background thread.
    pub(crate) fn stop(&self) {
        self.batch.stop();
    }
}

fn apply(tx: &Transaction<'_>, batch: &PendingAccess) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut stmt = tx
        .prepare_cached(
            "UPDATE memories SET access_count = access_count + ?1, \
             last_accessed_at = max(coalesce(last_accessed_at, ?2), ?2) \
             WHERE id = ?3 AND tenant = ?4",
        )
        .map_err(sql_err)?;
    for ((tenant, id), (count, at)) in batch {
        stmt.execute(params![*count as i64, at, id, tenant])
            .map_err(sql_err)?;
    }
    Ok(())
}
