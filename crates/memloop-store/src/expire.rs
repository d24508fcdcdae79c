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
//! rewrites the page (16 KiB for about fourteen memories in a store made
//! since 2026-12-06, 4 KiB for three before: a row is about 1.2 KB, 0.8
//! KiB of it the vector), so 100,000 memories expired among as many live
//! ones rewrite some 250 MB, in the WAL and again at the checkpoint. Writing into pages
//! the kernel must first allocate costs several times more than writing
//! over cached ones (on a virtual machine, 2 GB took 2.2 s into new pages
//! and 0.3 s into reused ones), so each chunk is checkpointed and the WAL
//! stays one chunk long, reused. An index whose
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
use rusqlite::{params, OptionalExtension, Transaction};

use crate::partition::{log_position, max_seq, PartitionIndex, Saving};
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

/// A chunk gc is committing, as seen from one partition's loaded index:
/// the log's last seq before and after its statements, the row of its
/// last log entry, and the generation of the index its rows were cut from.
#[derive(Clone, Copy)]
pub(crate) struct ChunkInFlight {
    before: i64,
    after: i64,
    last_row: i64,
    generation: u64,
}

/// An expired row, as the chunk's SELECT reads it.
struct Expired {
    row: i64,
    partition: String,
}

/// The chunk's rows, which the deletes of `delete_chunk` name: a
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
             CREATE TEMP TABLE IF NOT EXISTS gc_chunk \
             (row INTEGER PRIMARY KEY, id TEXT, partition TEXT, text TEXT, current INTEGER);",
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
            // The log entries are inserted in row order: the last is the
            // chunk's highest row.
            let last_row = by_partition
                .values()
                .flatten()
                .copied()
                .max()
                .unwrap_or_default();
            self.announce_chunk(&cut_from, (before, after), last_row);
            let landed = tx.commit().map_err(sql_err).and_then(|()| {
                for (partition, rows) in by_partition {
                    let generation = cut_from.get(&partition).copied().flatten();
                    self.mark_applied(&partition, &rows, (before, after), generation)?;
                    deleted += rows.len();
                    touched.insert(partition);
                }
                Ok(())
            });
            // Withdrawn whether the chunk landed or not.
            self.chunk_landed(&cut_from);
            landed?;
            // A checkpoint after each chunk, so the next chunk's commit
            // writes the WAL from its start again, over pages the page
            // cache already holds, rather than growing it by some 50 MB a
            // chunk into newly allocated ones (see the module's comment).
            // Readers in the way leave the rest to the next one.
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .map_err(sql_err)?;
        }
        drop(conn);
        self.save_expired(&touched)?;
        Ok(ExpireReport {
            memories_deleted: deleted,
            partitions: touched.len(),
        })
    }

    /// Before a chunk's commit, for each partition whose loaded index gc
    /// cut the chunk's rows from: a search that catches up between the
    /// commit and `mark_applied` finds the chunk here and need not read
    /// its log entries back (`gc_chunk_applied`).
    fn announce_chunk(
        &self,
        cut_from: &HashMap<String, Option<u64>>,
        (before, after): (i64, i64),
        last_row: i64,
    ) {
        let mut chunks = lock(&self.gc_chunks);
        for (partition, generation) in cut_from {
            if let Some(generation) = *generation {
                let chunk = ChunkInFlight {
                    before,
                    after,
                    last_row,
                    generation,
                };
                chunks.insert(partition.clone(), chunk);
            }
        }
    }

    /// After the chunk's commit and `mark_applied`, or either's failure.
    fn chunk_landed(&self, cut_from: &HashMap<String, Option<u64>>) {
        let mut chunks = lock(&self.gc_chunks);
        for partition in cut_from.keys() {
            chunks.remove(partition);
        }
    }

    /// Whether the log entries an index of `partition` has not applied,
    /// up to `latest`, are exactly a chunk gc cut from this very index:
    /// it had applied everything before the chunk, nothing was written
    /// after it, and the entry at `latest` is the chunk's last. That last
    /// check is what makes it safe if the commit failed and another
    /// writer reused the seqs: its entries name new rows, and a row
    /// number is never given twice.
    pub(crate) fn gc_chunk_applied(
        &self,
        conn: &rusqlite::Connection,
        partition: &str,
        p: &PartitionIndex,
        latest: i64,
    ) -> Result<bool> {
        let Some(chunk) = lock(&self.gc_chunks).get(partition).copied() else {
            return Ok(false);
        };
        if chunk.generation != p.generation
            || chunk.before != p.applied_seq
            || chunk.after != latest
        {
            return Ok(false);
        }
        let row: Option<i64> = conn
            .query_row("SELECT row FROM index_log WHERE seq = ?1", [latest], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql_err)?;
        Ok(row == Some(chunk.last_row))
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
    /// a loaded partition with a saved file is caught up and saved by
    /// `save_indexes` (one without holds none on disk); one that is
    /// not loaded has gc's rows added to its graph's removed list, or, if
    /// rows were added to it since it was saved, its graph restored, cut
    /// and saved again (its keyword index is not needed for that).
    fn save_expired(&self, touched: &HashSet<String>) -> Result<()> {
        for partition in touched {
            let loaded = lock(&self.partitions).contains_key(partition);
            if loaded {
                self.partition_index(partition)?;
                continue;
            }
            let _saving = lock(&self.saving);
            if self.list_removed_unloaded(partition)? {
                continue;
            }
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
        self.save_indexes(Saving::OnDisk)
    }
}

/// The first `CHUNK` expired rows, soonest expired first (current or not:
/// a superseded or deleted memory past its TTL goes too), kept in
/// `temp.gc_chunk` with what `delete_chunk` writes of them, so that each
/// row is sought in `memories` twice (here and by its DELETE), not once
/// per statement.
fn expired_chunk(tx: &Transaction<'_>, now: i64) -> Result<Vec<Expired>> {
    tx.execute("DELETE FROM temp.gc_chunk", [])
        .map_err(sql_err)?;
    tx.prepare_cached(
        "INSERT INTO temp.gc_chunk (row, id, partition, text, current) \
         SELECT row, id, partition, text, valid_until IS NULL FROM memories \
         WHERE expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at, row LIMIT ?2",
    )
    .map_err(sql_err)?
    .execute(params![now, CHUNK as i64])
    .map_err(sql_err)?;
    let mut stmt = tx
        .prepare_cached("SELECT row, partition FROM temp.gc_chunk")
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
         SELECT id, partition, '{}', text, NULL, 'gc', 'expired', ?1 FROM temp.gc_chunk \
         WHERE current ORDER BY row",
        Event::Delete.as_str()
    ))?;
    run("INSERT INTO index_log (partition, row) \
         SELECT partition, row FROM temp.gc_chunk ORDER BY row"
        .into())?;
    for child in ["mentions", "relations"] {
        run(format!(
            "DELETE FROM {child} WHERE memory_row IN ({CHUNK_ROWS})"
        ))?;
    }
    run(format!("DELETE FROM memories WHERE row IN ({CHUNK_ROWS})"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;
    use std::sync::RwLock;

    use memloop_core::{NewMemory, Scope};

    use super::ChunkInFlight;
    use crate::partition::max_seq;
    use crate::{lock, read, EmbeddedStore};

    /// A search that catches up between a gc chunk's commit and gc's own
    /// marking takes the chunk as applied only if the log's last entry is
    /// the chunk's: after a failed commit, another writer's entries at
    /// the same seqs are read back as usual.
    #[test]
    fn a_search_takes_gc_chunk_as_applied_only_if_its_last_entry_is_the_chunks() {
        for (last_row_matches, vectors_after) in [(true, 3), (false, 1)] {
            let dir = tempfile::tempdir().unwrap();
            let store = EmbeddedStore::for_test(dir.path());
            let scope = Scope::user("u");
            let partition = scope.partition().unwrap();
            let items = (0..3)
                .map(|i| {
                    let v = vec![1.0, i as f32, 0.5, 0.25];
                    (NewMemory::text(format!("memory number {i}")), v)
                })
                .collect();
            store.insert(&scope, items).unwrap();
            let part = store.partition_index(&partition).unwrap();
            let (before, generation) = {
                let p = read(&part);
                (p.applied_seq, p.generation)
            };
            // gc's chunk: two rows deleted, their log entries in row order.
            let rows: Vec<i64> = {
                let conn = store.conn();
                let mut stmt = conn
                    .prepare("SELECT row FROM memories ORDER BY row LIMIT 2")
                    .unwrap();
                let rows = stmt.query_map([], |r| r.get(0)).unwrap();
                rows.collect::<rusqlite::Result<_>>().unwrap()
            };
            let after = {
                let conn = store.conn();
                for row in &rows {
                    conn.execute(
                        "INSERT INTO index_log (partition, row) VALUES (?1, ?2)",
                        rusqlite::params![partition, row],
                    )
                    .unwrap();
                    conn.execute("DELETE FROM memories WHERE row = ?1", [row])
                        .unwrap();
                }
                max_seq(&conn).unwrap()
            };
            let last_row = if last_row_matches {
                rows[1]
            } else {
                rows[1] + 1000
            };
            let chunk = ChunkInFlight {
                before,
                after,
                last_row,
                generation,
            };
            lock(&store.gc_chunks).insert(partition.clone(), chunk);
            let cut_from = HashMap::from([(partition.clone(), Some(generation))]);
            // Not cut from the index here, so what the catch-up did shows:
            // taken as applied, the two rows are still in it.
            let part = store.partition_index(&partition).unwrap();
            let p = read(&part);
            assert_eq!(p.applied_seq, after);
            assert_eq!(
                p.vectors.len(),
                vectors_after,
                "last row matches: {last_row_matches}"
            );
            drop(p);
            store.chunk_landed(&cut_from);
            assert!(lock(&store.gc_chunks).is_empty());
        }
    }

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
