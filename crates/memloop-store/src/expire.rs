//! Deleting expired memories (`LongTermStore::expire`, run by `gc`).
//!
//! Searches already ignore an expired memory; this takes its room back.
//! The deletes run on a connection of their own, in transactions of
//! `CHUNK` rows: in WAL mode readers never wait for a writer, so searches
//! (which share the store's main connection) go on during a long gc, and
//! a writer waits for one chunk at most. Before a chunk commits, this
//! process's loaded indexes drop its rows, a few hundred at a time under
//! the partition's lock; after, they are marked as having seen the
//! chunk's log entries, so no search pays to catch up with gc.
//!
//! Its cost is mostly pages: a row deleted from a page of live ones
//! rewrites the page (4 KiB for three memories, each with its 0.8 KiB
//! vector), so 100,000 memories expired among as many live ones rewrite
//! some 250 MB, in the WAL and again at the checkpoint. An index whose
//! keys are not in row order (the duplicate check's, by content hash)
//! has a page rewritten by almost every chunk, which is what sets the
//! chunk's size.
//!
//! The connection runs without foreign key enforcement and deletes the
//! rows' mentions and relations itself: a DELETE with cascading actions
//! keeps a statement journal (every page it touches copied once more),
//! and one without them does not.

use std::collections::{BTreeMap, HashMap, HashSet};

use memloop_core::{Event, Result};
use memloop_longterm::ExpireReport;
use rusqlite::{params, Transaction};

use crate::partition::{log_position, max_seq, PartitionIndex};
use crate::{lock, sql_err, write, write_tx, EmbeddedStore};

/// Rows deleted per transaction: large enough that the pages of the
/// content-hash index, which nearly every chunk rewrites whole, are
/// written a few times rather than dozens (of 100,000 memories expiring
/// in a 200,000 store, chunks of 5,000 wrote 0.2 GB more WAL and took
/// 2.4 s to commit against 1.0 s for 25,000), small enough that a
/// writer waiting for the lock waits about half a second at most.
const CHUNK: usize = 20_000;
/// Rows taken out of an in-memory index per hold of its lock.
const SLICE: usize = 256;

/// An expired row, as the chunk's SELECT reads it.
struct Expired {
    row: i64,
    partition: String,
}

/// The chunk's rows, which every statement of `delete_chunk` names: a
/// temporary table filled once per chunk (a subquery with a LIMIT in each
/// statement scanned the expiry index and built its result again five
/// times per chunk).
const CHUNK_ROWS: &str = "SELECT row FROM temp.gc_chunk";

impl EmbeddedStore {
    pub(crate) fn expire(&self) -> Result<ExpireReport> {
        let now = self.now();
        let mut conn = self.side_connection()?;
        // `delete_chunk` removes the children itself (see the module's comment).
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY; \
             CREATE TEMP TABLE IF NOT EXISTS gc_chunk (row INTEGER PRIMARY KEY);",
        )
        .map_err(sql_err)?;
        let mut touched: HashSet<String> = HashSet::new();
        let mut deleted = 0;
        loop {
            let tx = write_tx(&mut conn)?;
            let chunk = expired_chunk(&tx, now)?;
            if chunk.is_empty() {
                break;
            }
            let mut by_partition: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            for e in chunk {
                by_partition.entry(e.partition).or_default().push(e.row);
            }
            // Out of the loaded indexes first: they have expired, so no
            // search admits them anyway, and a search that catches up with
            // the chunk's log entries before `mark_applied` then has no
            // removals to make.
            let mut cut_from: HashMap<String, Option<u64>> = HashMap::new();
            for (partition, rows) in &by_partition {
                cut_from.insert(partition.clone(), self.unindex(partition, rows)?);
            }
            let before = max_seq(&tx)?;
            delete_chunk(&tx, now)?;
            let after = max_seq(&tx)?;
            tx.commit().map_err(sql_err)?;
            for (partition, rows) in by_partition {
                let generation = cut_from.get(&partition).copied().flatten();
                self.mark_applied(&partition, &rows, (before, after), generation)?;
                deleted += rows.len();
                touched.insert(partition);
            }
        }
        // One checkpoint for the whole run, not one per chunk; readers in
        // the way leave the rest to the next one, which is harmless.
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(sql_err)?;
        drop(conn);
        self.save_expired(&touched)?;
        Ok(ExpireReport {
            memories_deleted: deleted,
            partitions: touched.len(),
        })
    }

    /// Takes expired rows out of this process's loaded index of
    /// `partition`, if it has one, a slice at a time: searches in between
    /// run on an index that still holds some of them, which they admit to
    /// no result. Returns the generation of the index cut, if one index
    /// took every slice (None: not loaded, or reloaded in between).
    fn unindex(&self, partition: &str, rows: &[i64]) -> Result<Option<u64>> {
        let Some(part) = lock(&self.partitions).get(partition).cloned() else {
            return Ok(None);
        };
        let mut generation = None;
        for (i, slice) in rows.chunks(SLICE).enumerate() {
            if i > 0 {
                self.let_searches_in();
            }
            let mut p = write(&part);
            for &row in slice {
                p.remove(row)?;
            }
            generation = match (i, generation) {
                (0, _) => Some(p.generation),
                (_, Some(g)) if g == p.generation => Some(g),
                _ => None,
            };
        }
        Ok(generation)
    }

    /// After a chunk's commit: an index that had seen every log entry
    /// before the chunk's has now seen the chunk's too (they are all this
    /// chunk's: it held the write lock), so no search reads them back.
    /// If it is not the index `unindex` cut (`generation`: it was
    /// reloaded from the database in between, rows and all), the rows are
    /// removed again; else they are gone already, and the write lock is
    /// held for a moment instead of 14–24 ms of look-ups per 20,000 rows.
    fn mark_applied(
        &self,
        partition: &str,
        rows: &[i64],
        (before, after): (i64, i64),
        generation: Option<u64>,
    ) -> Result<()> {
        let Some(part) = lock(&self.partitions).get(partition).cloned() else {
            return Ok(());
        };
        let mut p = write(&part);
        if p.applied_seq == before {
            if generation != Some(p.generation) {
                for &row in rows {
                    p.remove(row)?;
                }
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
            let _saving = lock(&self.saving);
            let Some((vectors, saved_seq)) = self.restore_ann(partition) else {
                continue;
            };
            let (latest, floor) = {
                let conn = self.conn();
                log_position(&conn)?
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
            self.save_ann(partition, &part.vectors, latest, None)?;
        }
        self.flush()
    }
}

/// The first `CHUNK` expired rows, soonest expired first (current or not:
/// a superseded or deleted memory past its TTL goes too), kept in
/// `temp.gc_chunk` for `delete_chunk`.
fn expired_chunk(tx: &Transaction<'_>, now: i64) -> Result<Vec<Expired>> {
    tx.execute("DELETE FROM temp.gc_chunk", [])
        .map_err(sql_err)?;
    tx.prepare_cached(
        "INSERT INTO temp.gc_chunk (row) SELECT row FROM memories \
         WHERE expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at, row LIMIT ?2",
    )
    .map_err(sql_err)?
    .execute(params![now, CHUNK as i64])
    .map_err(sql_err)?;
    let mut stmt = tx
        .prepare_cached(&format!(
            "SELECT row, partition FROM memories WHERE row IN ({CHUNK_ROWS})"
        ))
        .map_err(sql_err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Expired {
                row: r.get(0)?,
                partition: r.get(1)?,
            })
        })
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Deletes the chunk's rows, each statement over the whole chunk (a
/// statement per row cost twice as much): a current one gets its DELETE
/// in history with the reason "expired" (a deleted or superseded one has
/// its end recorded already), every one its entry in the change log, and
/// its mentions and relations go with it (what the schema's cascade does
/// elsewhere: this connection does not enforce foreign keys).
fn delete_chunk(tx: &Transaction<'_>, now: i64) -> Result<()> {
    let run = |sql: String| -> Result<()> {
        let mut stmt = tx.prepare_cached(&sql).map_err(sql_err)?;
        // Only the history row is dated.
        if stmt.parameter_count() == 0 {
            stmt.execute([])
        } else {
            stmt.execute(params![now])
        }
        .map_err(sql_err)?;
        Ok(())
    };
    run(format!(
        "INSERT INTO history (memory_id, partition, event, old_text, new_text, actor, reason, at) \
         SELECT id, partition, '{}', text, NULL, 'gc', 'expired', ?1 FROM memories \
         WHERE row IN ({CHUNK_ROWS}) AND valid_until IS NULL ORDER BY row",
        Event::Delete.as_str()
    ))?;
    run(format!(
        "INSERT INTO index_log (partition, row) SELECT partition, row FROM memories \
         WHERE row IN ({CHUNK_ROWS}) ORDER BY row"
    ))?;
    for child in ["mentions", "relations"] {
        run(format!(
            "DELETE FROM {child} WHERE memory_row IN ({CHUNK_ROWS})"
        ))?;
    }
    run(format!("DELETE FROM memories WHERE row IN ({CHUNK_ROWS})"))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::RwLock;

    use crate::EmbeddedStore;

    /// A search that finds an index's lock held counts itself as waiting
    /// until it has the lock, which is what `let_searches_in` waits on.
    #[test]
    fn a_search_waiting_for_an_index_is_counted_until_it_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::for_test(dir.path());
        let index = RwLock::new(7);
        let held = index.write().unwrap();
        std::thread::scope(|s| {
            let search = s.spawn(|| *store.read_for_search(&index));
            while store.searches_waiting.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            drop(held);
            assert_eq!(search.join().unwrap(), 7);
        });
        assert_eq!(store.searches_waiting.load(Ordering::SeqCst), 0);
    }
}
