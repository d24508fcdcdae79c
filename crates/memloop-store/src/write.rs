//! Writes: each one transaction that changes `memories`, appends to `history`
//! and to `index_log` together, so the derived indexes can always catch up.

use memloop_core::{Error, Event, MemoryRecord, NewMemory, Result, Scope};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::rows::{record_from_row, vector_to_blob, RECORD_COLUMNS};
use crate::{set_embedder, sql_err, write_tx, EmbeddedStore};
use memloop_longterm::write::{self as rules, Change, NewRecord};
use memloop_longterm::{EmbedFn, ForgetReport, MemoryUpdate};

pub(crate) fn log_change(tx: &Transaction<'_>, partition: &str, row: i64) -> Result<()> {
    tx.prepare_cached("INSERT INTO index_log (partition, row) VALUES (?1, ?2)")
        .map_err(sql_err)?
        .execute(params![partition, row])
        .map_err(sql_err)?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn log_history(
    tx: &Transaction<'_>,
    memory_id: &str,
    partition: &str,
    event: Event,
    old: Option<&str>,
    new: Option<&str>,
    reason: Option<&str>,
    at: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO history (memory_id, partition, event, old_text, new_text, actor, reason, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'api', ?6, ?7)",
    )
    .map_err(sql_err)?
    .execute(params![
        memory_id,
        partition,
        event.as_str(),
        old,
        new,
        reason,
        at
    ])
    .map_err(sql_err)?;
    Ok(())
}

/// Marks the current episodes `old` was distilled from (same session, a
/// turn in common: its provenance) as holding a claim `new_id` replaced.
/// The episodes stay current (they are what was said), but search ranks
/// them below the replacement and says so.
fn mark_evidence(
    tx: &Transaction<'_>,
    partition: &str,
    old: &MemoryRecord,
    new_id: &str,
) -> Result<()> {
    if !rules::marks_evidence(old) {
        return Ok(());
    }
    let turn_ids = serde_json::to_string(&old.provenance.turn_ids)
        .map_err(|e| Error::Internal(e.to_string()))?;
    tx.prepare_cached(
        "UPDATE memories SET superseded_by = ?1 \
         WHERE partition = ?2 AND valid_until IS NULL AND kind = 'episode' \
         AND json_extract(provenance, '$.session_id') IS ?3 \
         AND EXISTS (SELECT 1 FROM json_each(provenance, '$.turn_ids') AS t \
                     WHERE t.value IN (SELECT value FROM json_each(?4)))",
    )
    .map_err(sql_err)?
    .execute(params![
        new_id,
        partition,
        old.provenance.session_id,
        turn_ids
    ])
    .map_err(sql_err)?;
    Ok(())
}

fn get_by_id(conn: &Connection, tenant: &str, id: &str) -> Result<(i64, String, MemoryRecord)> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS}, partition FROM memories WHERE id = ?1"
        ))
        .map_err(sql_err)?
        .query_row([id], |r| {
            let (row, rec) = record_from_row(r)?;
            Ok((row, r.get::<_, String>(21)?, rec))
        })
        .optional()
        .map_err(sql_err)?;
    match found {
        // Another tenant's id is reported exactly like an unknown one.
        Some(f) if f.2.scope.tenant == tenant => Ok(f),
        _ => Err(Error::NotFound(id.to_string())),
    }
}

impl EmbeddedStore {
    /// Stores memories in one scope, one transaction. A text already stored
    /// and current in the same scope (same normalised text and kind) is not
    /// stored twice: its result says NOOP and carries the existing id.
    pub(crate) fn insert(
        &self,
        scope: &Scope,
        items: Vec<(NewMemory, Vec<f32>)>,
    ) -> Result<Vec<(MemoryRecord, Event)>> {
        let (partition, hashes) = rules::checked_new(&self.embedder, scope, &items)?;
        let now = self.now();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let mut out = Vec::with_capacity(items.len());
        for ((m, v), hash) in items.into_iter().zip(hashes) {
            if let Some(existing) =
                find_duplicate(&tx, &partition, scope, &hash, m.kind.as_str(), now)?
            {
                out.push((existing, Event::Noop));
                continue;
            }
            let record = add_in(&tx, &partition, scope, m, &v, hash, None, now)?;
            out.push((record, Event::Add));
        }
        self.access.write_in(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok(out)
    }

    /// Changes a current memory in place; the old text stays in its history.
    pub(crate) fn update(
        &self,
        tenant: &str,
        id: &str,
        change: MemoryUpdate,
    ) -> Result<(MemoryRecord, String)> {
        change.check(&self.embedder)?;
        let now = self.now();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let (row, partition, mut rec) = get_by_id(&tx, tenant, id)?;
        rules::check_current(&rec, Change::Update, now)?;
        let old_text = rules::apply_update(&mut rec, &change, now);
        if let Some((_, v)) = &change.text {
            tx.execute(
                "UPDATE memories SET text = ?1, content_hash = ?2, embedding = ?3, terms = ?4 WHERE row = ?5",
                params![
                    rec.text,
                    rec.content_hash,
                    vector_to_blob(&with_pieces(v, &change.pieces)),
                    crate::stored_terms::of(&rec.text, rec.context.as_deref()),
                    row
                ],
            )
            .map_err(sql_err)?;
            crate::graph::replace_links(&tx, &partition, row, rec.valid_from, &change.links)?;
        }
        tx.execute(
            "UPDATE memories SET metadata = ?1, expires_at = ?2, importance = ?3, updated_at = ?4 WHERE row = ?5",
            params![rec.metadata.to_string(), rec.expires_at, f64::from(rec.importance), now, row],
        )
        .map_err(sql_err)?;
        log_history(
            &tx,
            id,
            &partition,
            Event::Update,
            Some(&old_text),
            Some(&rec.text),
            None,
            now,
        )?;
        log_change(&tx, &partition, row)?;
        self.access.write_in(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok((rec, old_text))
    }

    /// Ends a memory's validity: it leaves search and list, and stays readable
    /// by id and in history (`forget` removes it for good).
    pub(crate) fn delete(
        &self,
        tenant: &str,
        id: &str,
        reason: Option<&str>,
    ) -> Result<MemoryRecord> {
        let now = self.now();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let (row, partition, mut rec) = get_by_id(&tx, tenant, id)?;
        rules::check_current(&rec, Change::Delete, now)?;
        rules::mark_deleted(&mut rec, now);
        tx.execute(
            "UPDATE memories SET valid_until = ?1, updated_at = ?1, superseded_by = NULL WHERE row = ?2",
            params![now, row],
        )
        .map_err(sql_err)?;
        log_history(
            &tx,
            id,
            &partition,
            Event::Delete,
            Some(&rec.text),
            None,
            reason,
            now,
        )?;
        log_change(&tx, &partition, row)?;
        self.access.write_in(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok(rec)
    }

    /// Replaces a current memory by a new one in one transaction: the old one
    /// gets `valid_until` (kept, readable, in history as UPDATE with old and
    /// new text and the reason), the new one is added in `scope`.
    pub(crate) fn supersede(
        &self,
        scope: &Scope,
        old_id: &str,
        new: (NewMemory, Vec<f32>),
        reason: &str,
    ) -> Result<(MemoryRecord, MemoryRecord)> {
        let (m, v) = new;
        let hash = rules::checked_identity(&self.embedder, &m, &v)?;
        let partition = scope.partition()?;
        let now = self.now();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let (row, old_partition, mut old) = get_by_id(&tx, &scope.tenant, old_id)?;
        let end = rules::check_supersede(&old, &old_partition, &partition, m.valid_from, now)?;
        let new_text = m.text.clone();
        let added = add_in(&tx, &partition, scope, m, &v, hash, Some(reason), now)?;
        tx.execute(
            "UPDATE memories SET valid_until = ?1, updated_at = ?2, superseded_by = ?3 WHERE row = ?4",
            params![end, now, added.id, row],
        )
        .map_err(sql_err)?;
        log_change(&tx, &partition, row)?;
        mark_evidence(&tx, &partition, &old, &added.id)?;
        log_history(
            &tx,
            old_id,
            &partition,
            Event::Update,
            Some(&old.text),
            Some(&new_text),
            Some(&rules::superseded_reason(&added.id, reason)),
            now,
        )?;
        self.access.write_in(&tx)?;
        tx.commit().map_err(sql_err)?;
        rules::mark_superseded(&mut old, end, &added.id, now);
        Ok((added, old))
    }

    /// Counts a use of current memories (a NOOP write that met them again,
    /// a retrieval): access statistics feed decay.
    pub(crate) fn touch(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        let now = self.now();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        for id in ids {
            tx.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?1 \
                 WHERE id = ?2 AND tenant = ?3",
                params![now, id, tenant],
            )
            .map_err(sql_err)?;
        }
        tx.commit().map_err(sql_err)?;
        Ok(())
    }

    /// Removes every memory of a scope from every table and index (narrowed to
    /// an agent or session when the scope names one). History is kept as a
    /// record that they existed, unless `purge`, which deletes it too and
    /// leaves no copy of the text in any file of the store (`purge.rs`).
    pub(crate) fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport> {
        let partition = scope.partition()?;
        let whole = scope.agent_id.is_none() && scope.session_id.is_none()
            || scope.user_id.is_none() && scope.session_id.is_none();
        if purge {
            // Before the rows go, so a crash after the commit cannot leave
            // them (vectors, and the partition's key in the sidecar). They
            // are derived: if the purge then fails, they are rebuilt.
            self.drop_partition_index(&partition);
        }
        let report = self.forget_rows(scope, &partition, purge, whole)?;
        if purge {
            self.finish_purge(&partition)?;
        } else if whole {
            self.drop_partition_index(&partition);
        }
        Ok(report)
    }

    /// The rows, history and queued writes of `forget`, in one transaction.
    fn forget_rows(
        &self,
        scope: &Scope,
        partition: &str,
        purge: bool,
        whole: bool,
    ) -> Result<ForgetReport> {
        let now = self.now();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let mut targets: Vec<(i64, String, String, bool)> = Vec::new();
        {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT {RECORD_COLUMNS} FROM memories WHERE partition = ?1"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([partition], record_from_row)
                .map_err(sql_err)?;
            for r in rows {
                let (row, rec) = r.map_err(sql_err)?;
                if scope.admits(&rec.scope) {
                    targets.push((row, rec.id, rec.text, rec.valid_until.is_none()));
                }
            }
        }
        let mut report = ForgetReport::default();
        for (row, id, text, current) in &targets {
            tx.execute("DELETE FROM memories WHERE row = ?1", [row])
                .map_err(sql_err)?;
            log_change(&tx, partition, *row)?;
            if purge {
                report.history_deleted += tx
                    .execute("DELETE FROM history WHERE memory_id = ?1", [id])
                    .map_err(sql_err)?;
            } else if *current {
                // Already-deleted memories have their DELETE in history already.
                log_history(
                    &tx,
                    id,
                    partition,
                    Event::Delete,
                    Some(text),
                    None,
                    Some("forget"),
                    now,
                )?;
            }
        }
        if purge && whole {
            report.history_deleted += crate::purge::delete_partition_history(&tx, partition)?;
        }
        // Their mentions went with the rows; the names nothing mentions go now.
        crate::graph::drop_unmentioned(&tx, partition)?;
        report.memories_deleted = targets.len();
        // Queued writes of the scope would bring its memories back.
        let queued: Vec<(i64, String)> = {
            let mut stmt = tx
                .prepare_cached("SELECT id, scope FROM outbox WHERE tenant = ?1")
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([&scope.tenant], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
        };
        for (id, queued_scope) in queued {
            let covered = serde_json::from_str::<Scope>(&queued_scope)
                .is_ok_and(|q| rules::forget_drops_queued(scope, partition, &q));
            if covered {
                tx.execute("DELETE FROM outbox WHERE id = ?1", [id])
                    .map_err(sql_err)?;
            }
        }
        tx.commit().map_err(sql_err)?;
        Ok(report)
    }

    /// Re-embeds every stored memory (current and past, with the pieces of
    /// a long one) with the configured embedder, in batches, then records
    /// it as the store's embedder.
    pub(crate) fn reindex(
        &self,
        embed: &EmbedFn<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        const BATCH: i64 = 256;
        let total: i64 = self
            .conn()
            .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
            .map_err(sql_err)?;
        let mut done = 0usize;
        let mut last_row = 0i64;
        loop {
            let batch: Vec<(i64, String)> = {
                let conn = self.conn();
                let mut stmt = conn
                    .prepare("SELECT row, text FROM memories WHERE row > ?1 ORDER BY row LIMIT ?2")
                    .map_err(sql_err)?;
                let rows = stmt
                    .query_map(params![last_row, BATCH], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(sql_err)?;
                rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
            };
            let Some(&(last, _)) = batch.last() else {
                break;
            };
            let vectors = rules::reembed(embed, &self.embedder, &batch)?;
            let mut conn = self.conn();
            let tx = write_tx(&mut conn)?;
            for ((row, _), e) in batch.iter().zip(&vectors) {
                tx.execute(
                    "UPDATE memories SET embedding = ?1 WHERE row = ?2",
                    params![vector_to_blob(&with_pieces(&e.vector, &e.pieces)), row],
                )
                .map_err(sql_err)?;
            }
            tx.commit().map_err(sql_err)?;
            done += batch.len();
            last_row = last;
            progress(done, total.max(0) as usize);
        }
        set_embedder(&self.conn(), &self.embedder)?;
        // Every derived index is stale now: drop them all, they reload from SQLite.
        let loaded: Vec<String> = crate::lock(&self.partitions).keys().cloned().collect();
        for p in loaded {
            self.drop_partition_index(&p);
        }
        if let Ok(entries) = std::fs::read_dir(self.dir.join("index")) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(done)
    }
}

/// Inserts one new record inside `tx`, with its ADD in history.
#[allow(clippy::too_many_arguments)]
fn add_in(
    tx: &Transaction<'_>,
    partition: &str,
    scope: &Scope,
    m: NewMemory,
    v: &[f32],
    hash: String,
    reason: Option<&str>,
    now: i64,
) -> Result<MemoryRecord> {
    let NewRecord {
        record,
        pieces,
        links,
    } = NewRecord::build(scope, m, hash, now);
    let vectors = with_pieces(v, &pieces);
    let row = insert_row(tx, partition, &record, &vectors)?;
    crate::graph::write_links(tx, partition, row, record.valid_from, &links)?;
    log_history(
        tx,
        &record.id,
        partition,
        Event::Add,
        None,
        Some(&record.text),
        reason,
        now,
    )?;
    log_change(tx, partition, row)?;
    Ok(record)
}

/// The current memories of a partition (?1) with a content hash (?2) and
/// kind (?3), found through the index of current memories by hash
/// (schema.rs).
fn duplicate_sql() -> String {
    format!(
        "SELECT {RECORD_COLUMNS} FROM memories WHERE partition = ?1 AND content_hash = ?2 \
         AND kind = ?3 AND valid_until IS NULL"
    )
}

/// The current memory with this identity in the scope. An expired one is
/// not current: the same text written again is stored anew.
fn find_duplicate(
    tx: &Transaction<'_>,
    partition: &str,
    scope: &Scope,
    hash: &str,
    kind: &str,
    now: i64,
) -> Result<Option<MemoryRecord>> {
    let mut stmt = tx.prepare_cached(&duplicate_sql()).map_err(sql_err)?;
    let rows = stmt
        .query_map(params![partition, hash, kind], record_from_row)
        .map_err(sql_err)?;
    for r in rows {
        let (_, rec) = r.map_err(sql_err)?;
        if rules::is_duplicate(&rec, scope, now) {
            return Ok(Some(rec));
        }
    }
    Ok(None)
}

/// A memory's vectors as its row keeps them: the first, then its pieces.
pub(crate) fn with_pieces(first: &[f32], pieces: &[Vec<f32>]) -> Vec<f32> {
    let mut all = Vec::with_capacity(first.len() * (1 + pieces.len()));
    all.extend_from_slice(first);
    pieces.iter().for_each(|p| all.extend_from_slice(p));
    all
}

/// Inserts a memory row holding every field of `r` (a new memory's, or a
/// restored one's with its times, counts and supersession kept), with its
/// vectors (`with_pieces`).
pub(crate) fn insert_row(
    tx: &Transaction<'_>,
    partition: &str,
    r: &MemoryRecord,
    v: &[f32],
) -> Result<i64> {
    let provenance =
        serde_json::to_string(&r.provenance).map_err(|e| Error::Internal(e.to_string()))?;
    tx.prepare_cached(
        "INSERT INTO memories (id, partition, tenant, user_id, agent_id, session_id, kind, text, metadata, \
         created_at, updated_at, valid_from, valid_until, expires_at, importance, access_count, last_accessed_at, \
         provenance, content_hash, embedding, context, superseded_by, terms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
    )
    .map_err(sql_err)?
    .execute(params![
        r.id,
        partition,
        r.scope.tenant,
        r.scope.user_id,
        r.scope.agent_id,
        r.scope.session_id,
        r.kind.as_str(),
        r.text,
        r.metadata.to_string(),
        r.created_at,
        r.updated_at,
        r.valid_from,
        r.valid_until,
        r.expires_at,
        f64::from(r.importance),
        i64::try_from(r.access_count).unwrap_or(i64::MAX),
        r.last_accessed_at,
        provenance,
        r.content_hash,
        vector_to_blob(v),
        r.context,
        r.superseded_by,
        crate::stored_terms::of(&r.text, r.context.as_deref()),
    ])
    .map_err(sql_err)?;
    Ok(tx.last_insert_rowid())
}

#[cfg(test)]
mod tests {
    use crate::EmbeddedStore;

    /// Every write runs the duplicate check: it must seek its index, not
    /// scan the partition's current memories through the partition's.
    #[test]
    fn the_duplicate_check_seeks_the_hash_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::for_test(dir.path());
        let conn = store.conn();
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::duplicate_sql()))
            .unwrap();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params!["p", "0123456789abcdef01", "fact"], |r| {
                r.get(3)
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|d| d.contains("memories_current_by_hash (partition=? AND content_hash=?)")),
            "{plan:?}"
        );
    }
}
