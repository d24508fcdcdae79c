//! What a purge (`forget` with `purge`) does beyond deleting rows, so that
//! no copy of the purged text stays in any file of the data directory:
//!
//! - `memloop.db`: every connection runs with `PRAGMA secure_delete`, so
//!   deleted cells are zeroed in the pages that keep living. A freed page
//!   is zeroed too in a database made before incremental auto-vacuum; in
//!   one made since, the purge ends by removing every free page from the
//!   file (`release_free_pages`), so pages freed earlier (by a delete or
//!   `gc`, which leave them as they were) go too.
//! - `history`: a purge deletes the history of the memories it removes
//!   and, for a whole user (or agent) partition, every history row of the
//!   partition, including that of memories forgotten earlier without purge.
//! - the outbox: queued writes of the scope are deleted with the rows.
//! - saved HNSW files (vectors, and a sidecar naming the partition) and the
//!   saved keyword index (stems of the texts): removed before the
//!   transaction, so a crash after it cannot leave them.
//! - `index_log` (rows changed, by partition key: the user id): pruned as
//!   `gc` prunes it, up to what saved indexes of other partitions still need.
//! - `memloop.db-wal`: holds the original inserts and the old page images
//!   until a checkpoint copies the zeroed pages into the database; it is
//!   then truncated to zero bytes.
//!
//! A crash: the rows, history and outbox entries go in one transaction, so
//! the store is as before the purge or as after it, never in between. A
//! crash after the commit may leave the old text in the WAL (and the
//! partition key in the log); running the purge again finishes it (it
//! deletes nothing more, then prunes and checkpoints), and so does the
//! next clean close of the store, which checkpoints and removes the WAL.

use rusqlite::{Connection, Transaction};

use memloop_core::{Error, Result};

use crate::{sql_err, EmbeddedStore, DB_FILE};

/// Deletes every history row of a partition: those of the memories being
/// purged, and of memories forgotten earlier without purge, whose rows are
/// gone but whose texts history kept.
pub(crate) fn delete_partition_history(tx: &Transaction<'_>, partition: &str) -> Result<usize> {
    tx.execute("DELETE FROM history WHERE partition = ?1", [partition])
        .map_err(sql_err)
}

impl EmbeddedStore {
    /// After a purge's transaction committed: the partition's indexes go
    /// again (a search may have reloaded them meanwhile), the change log is
    /// pruned, and the WAL is checkpointed and truncated.
    pub(crate) fn finish_purge(&self, partition: &str) -> Result<()> {
        self.drop_partition_index(partition);
        // The log's entries name the partition (the user id); once no index
        // needs them they go, as `gc` would drop them later. Pruning writes
        // to the WAL, so it comes before the checkpoint.
        self.compact_log().map_err(|e| match e {
            Error::Busy(m) => Error::Busy(format!(
                "the memories were deleted, but the change log was not pruned ({m}): run the purge again"
            )),
            other => other,
        })?;
        let conn = self.conn();
        release_free_pages(&conn)?;
        truncate_wal(&conn, self.options.busy_timeout())
    }
}

/// Removes every free page from the database file (incremental
/// auto-vacuum: the pages at the end move into the free ones and the file
/// is cut), so no text deleted before, by this purge or by an earlier
/// delete or gc, whose freed pages `secure_delete = FAST` did not zero,
/// stays in free space. A database without auto-vacuum zeroes pages as
/// they are freed instead (`set_secure_delete`), and has nothing to do.
fn release_free_pages(conn: &Connection) -> Result<()> {
    if !crate::incremental_vacuum(conn)? {
        return Ok(());
    }
    let busy = |e: rusqlite::Error| {
        match sql_err(e) {
        Error::Busy(m) => Error::Busy(format!(
            "the memories were deleted, but the free pages that may still hold their text were not released ({m}): run the purge again"
        )),
        other => other,
    }
    };
    // The pragma frees a page per step: it must be run to its end.
    let mut stmt = conn.prepare("PRAGMA incremental_vacuum").map_err(busy)?;
    let mut rows = stmt.query([]).map_err(busy)?;
    while rows.next().map_err(busy)?.is_some() {}
    Ok(())
}

/// Copies every WAL frame into the database and truncates the WAL to zero
/// bytes, so nothing deleted before it survives in `memloop.db-wal`.
///
/// A connection of another process that is inside a read transaction pins
/// the WAL frames its snapshot needs: the checkpoint waits for it (SQLite
/// calls the busy handler, up to the busy timeout, for each attempt) and is
/// tried a few times. If that reader never lets go, the purge's rows are
/// committed but their old text may remain in the WAL, so the caller gets
/// `Busy` saying so; running the purge again (it deletes nothing more, then
/// checkpoints) finishes it. An idle connection of another process does not
/// block this.
fn truncate_wal(conn: &Connection, timeout: std::time::Duration) -> Result<()> {
    const ATTEMPTS: usize = 3;
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        let outcome = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        });
        match outcome {
            Ok((0, _, _)) => return Ok(()),
            Ok((_, log, done)) => {
                last = format!("{done} of {log} WAL frames copied, readers still hold the rest")
            }
            Err(e) => match sql_err(e) {
                Error::Busy(m) => last = m,
                other => return Err(other),
            },
        }
        if attempt + 1 < ATTEMPTS {
            // The busy handler has already waited the timeout inside the
            // pragma; a short pause lets a reader between transactions go.
            std::thread::sleep(std::time::Duration::from_millis(50).min(timeout));
        }
    }
    Err(Error::Busy(format!(
        "the memories were deleted, but another process kept reading the store, so their old text may remain in {} until a checkpoint ({last}): run the purge again once it is idle, or stop it",
        DB_FILE.to_string() + "-wal"
    )))
}
