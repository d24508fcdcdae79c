//! Deleting expired memories (`LongTermStore::expire`, run by `gc`).
//!
//! Searches already ignore an expired memory; this takes its room back.
//! The deletes run on a connection of their own, in transactions of
//! `CHUNK` rows: in WAL mode readers never wait for a writer, so searches
//! (which share the store's main connection) go on during a long gc, and
//! a writer waits for one chunk at most. After each chunk this process's
//! loaded indexes drop the rows themselves, a few hundred at a time
//! under the partition's lock, and are marked as having seen the chunk's
//! log entries, so no search pays to catch up with gc.

use std::collections::{BTreeMap, HashSet};

use memloop_core::{Event, Result};
use memloop_longterm::ExpireReport;
use rusqlite::{params, Transaction};

use crate::partition::{log_floor, max_seq, PartitionIndex};
use crate::write::{log_change, log_history};
use crate::{lock, sql_err, write_tx, EmbeddedStore};

/// Rows deleted per transaction: large enough that commits (an fsync each
/// with `Durability::Full`) do not dominate, small enough that a writer
/// waiting for the lock waits milliseconds.
const CHUNK: usize = 5_000;
/// Rows taken out of an in-memory index per hold of its lock.
const SLICE: usize = 256;

/// An expired row, as the chunk's SELECT reads it.
struct Expired {
    row: i64,
    id: String,
    partition: String,
    text: String,
    current: bool,
}

impl EmbeddedStore {
    pub(crate) fn expire(&self) -> Result<ExpireReport> {
        let now = self.now();
        let mut conn = self.side_connection()?;
        let mut touched: HashSet<String> = HashSet::new();
        let mut deleted = 0;
        loop {
            let tx = write_tx(&mut conn)?;
            let chunk = expired_chunk(&tx, now)?;
            if chunk.is_empty() {
                break;
            }
            let before = max_seq(&tx)?;
            for e in &chunk {
                delete_expired(&tx, e, now)?;
            }
            let after = max_seq(&tx)?;
            tx.commit().map_err(sql_err)?;
            deleted += chunk.len();
            let mut by_partition: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            for e in chunk {
                by_partition.entry(e.partition).or_default().push(e.row);
            }
            for (partition, rows) in by_partition {
                self.unindex(&partition, &rows, before, after)?;
                touched.insert(partition);
            }
        }
        self.save_expired(&touched)?;
        Ok(ExpireReport {
            memories_deleted: deleted,
            partitions: touched.len(),
        })
    }

    /// Takes a committed chunk's rows out of this process's loaded index of
    /// `partition`, if it has one. Between slices, searches run on an
    /// index that still holds some of them, which they admit to no
    /// result (they have expired). Then, if the index had seen every log
    /// entry before the chunk's, it has now seen the chunk's too (they are
    /// all this chunk's: it held the write lock).
    fn unindex(&self, partition: &str, rows: &[i64], before: i64, after: i64) -> Result<()> {
        let Some(part) = lock(&self.partitions).get(partition).cloned() else {
            return Ok(());
        };
        for slice in rows.chunks(SLICE) {
            let mut p = lock(&part);
            for &row in slice {
                p.remove(row)?;
            }
        }
        let mut p = lock(&part);
        if p.applied_seq == before {
            // Reloaded since the slices ran? Removing again is a lookup each.
            for &row in rows {
                p.remove(row)?;
            }
            p.applied_seq = after;
        }
        Ok(())
    }

    /// Brings saved HNSW files up to date, so none holds an expired row:
    /// a loaded partition is caught up and saved by `flush`; one that is
    /// not loaded has its saved index restored, cut and saved again (its
    /// keyword index is not needed for that).
    fn save_expired(&self, touched: &HashSet<String>) -> Result<()> {
        for partition in touched {
            let loaded = lock(&self.partitions).contains_key(partition);
            if loaded {
                self.partition_index(partition)?;
                continue;
            }
            let Some((vectors, saved_seq)) = self.restore_ann(partition) else {
                continue;
            };
            let (latest, floor) = {
                let conn = self.conn();
                (max_seq(&conn)?, log_floor(&conn)?)
            };
            if saved_seq < floor {
                // Too old to catch up: the next load rebuilds it anyway.
                self.drop_saved_ann(partition);
                continue;
            }
            let mut part = PartitionIndex::vectors_only(vectors, saved_seq);
            {
                let conn = self.conn();
                self.apply_log_vectors_only(&conn, &mut part, partition, saved_seq)?;
            }
            self.save_ann(partition, &part.vectors, latest)?;
        }
        self.flush()
    }
}

/// The first `CHUNK` expired rows, soonest expired first (current or not:
/// a superseded or deleted memory past its TTL goes too).
fn expired_chunk(tx: &Transaction<'_>, now: i64) -> Result<Vec<Expired>> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT row, id, partition, text, valid_until IS NULL FROM memories \
             WHERE expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
        )
        .map_err(sql_err)?;
    let rows = stmt
        .query_map(params![now, CHUNK as i64], |r| {
            Ok(Expired {
                row: r.get(0)?,
                id: r.get(1)?,
                partition: r.get(2)?,
                text: r.get(3)?,
                current: r.get(4)?,
            })
        })
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Deletes one expired row; a current one gets its DELETE in history
/// (a deleted or superseded one has its end recorded already).
fn delete_expired(tx: &Transaction<'_>, e: &Expired, now: i64) -> Result<()> {
    tx.prepare_cached("DELETE FROM memories WHERE row = ?1")
        .map_err(sql_err)?
        .execute([e.row])
        .map_err(sql_err)?;
    log_change(tx, &e.partition, e.row)?;
    if e.current {
        log_history(
            tx,
            &e.id,
            &e.partition,
            Event::Delete,
            Some(&e.text),
            None,
            Some("expired"),
            now,
        )?;
    }
    Ok(())
}
