//! Writes: each one transaction that changes `memories` and appends to
//! `history` together (the keyword statistics follow by trigger).

use memloop_core::{Error, Event, MemoryRecord, NewMemory, Result, Scope};
use memloop_longterm::write::{self as rules, Change, NewRecord};
use memloop_longterm::{EmbedFn, ExpireReport, ForgetReport, MemoryUpdate};
use pgvector::HalfVector;
use serde_json::Value;

use crate::pool::Tx;
use crate::rows::{record_from_row, RECORD_COLUMNS};
use crate::{set_embedder, terms, PgStore, Tenancy};

#[allow(clippy::too_many_arguments)]
fn log_history(
    tx: &mut Tx<'_>,
    memory_id: &str,
    tenant: &str,
    partition: &str,
    event: Event,
    old: Option<&str>,
    new: Option<&str>,
    reason: Option<&str>,
    at: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO history (memory_id, tenant, partition, event, old_text, new_text, actor, reason, at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'api', $7, $8)",
        &[&memory_id, &tenant, &partition, &event.as_str(), &old, &new, &reason, &at],
    )?;
    Ok(())
}

/// One memory by id, locked for the rest of the transaction. Another
/// tenant's id is reported exactly like an unknown one (row-level security
/// hides it already; the check says so again).
fn get_for_update(tx: &mut Tx<'_>, tenant: &str, id: &str) -> Result<(i64, String, MemoryRecord)> {
    let row = tx.query_opt(
        &format!("SELECT {RECORD_COLUMNS}, partition FROM memories WHERE id = $1 FOR UPDATE"),
        &[&id],
    )?;
    let Some(row) = row else {
        return Err(Error::NotFound(id.to_string()));
    };
    let (rid, rec) = record_from_row(&row)?;
    if rec.scope.tenant != tenant {
        return Err(Error::NotFound(id.to_string()));
    }
    Ok((rid, row.get(21), rec))
}

/// Marks the current episodes `old` was distilled from (same session, a
/// turn in common) as holding a claim `new_id` replaced.
fn mark_evidence(tx: &mut Tx<'_>, partition: &str, old: &MemoryRecord, new_id: &str) -> Result<()> {
    if !rules::marks_evidence(old) {
        return Ok(());
    }
    tx.execute(
        "UPDATE memories SET superseded_by = $1 \
         WHERE partition = $2 AND valid_until IS NULL AND kind = 'episode' \
         AND provenance->>'session_id' IS NOT DISTINCT FROM $3 \
         AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(coalesce(provenance->'turn_ids', '[]'::jsonb)) AS t(v) \
                     WHERE t.v = ANY($4))",
        &[
            &new_id,
            &partition,
            &old.provenance.session_id,
            &old.provenance.turn_ids,
        ],
    )?;
    Ok(())
}

impl PgStore {
    pub(crate) fn insert(
        &self,
        scope: &Scope,
        items: Vec<(NewMemory, Vec<f32>)>,
    ) -> Result<Vec<(MemoryRecord, Event)>> {
        let (partition, hashes) = rules::checked_new(&self.embedder, scope, &items)?;
        // Inserts of the same text in the same partition take turns (the
        // duplicate check below must see each other's rows); sorted, so
        // two batches never wait on each other in a circle.
        let mut keys: Vec<String> = hashes
            .iter()
            .map(|h| format!("{partition}\u{1f}{h}"))
            .collect();
        keys.sort();
        keys.dedup();
        let now = self.now();
        self.tx(Tenancy::One(&scope.tenant), |tx| {
            for k in &keys {
                tx.query(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    &[k],
                )?;
            }
            let mut out = Vec::with_capacity(items.len());
            for ((m, v), hash) in items.iter().zip(&hashes) {
                if let Some(existing) =
                    find_duplicate(tx, &partition, scope, hash, m.kind.as_str(), now)?
                {
                    out.push((existing, Event::Noop));
                    continue;
                }
                let record =
                    self.add_in(tx, &partition, scope, m.clone(), v, hash.clone(), None, now)?;
                out.push((record, Event::Add));
            }
            Ok(out)
        })
    }

    pub(crate) fn update(
        &self,
        tenant: &str,
        id: &str,
        change: MemoryUpdate,
    ) -> Result<(MemoryRecord, String)> {
        change.check(&self.embedder)?;
        let now = self.now();
        self.tx(Tenancy::One(tenant), |tx| {
            let (rid, partition, mut rec) = get_for_update(tx, tenant, id)?;
            rules::check_current(&rec, Change::Update, now)?;
            let old_text = rules::apply_update(&mut rec, &change, now);
            if let Some((_, v)) = &change.text {
                let doc = terms::document(
                    self.analyzer(),
                    &rec.text,
                    rec.context.as_deref(),
                    self.options.context_weight,
                );
                tx.execute(
                    "UPDATE memories SET text = $1, content_hash = $2, embedding = $3, \
                     tsv = $4::text::tsvector, doc_len = $5, context_scale = $6 WHERE rid = $7",
                    &[
                        &rec.text,
                        &rec.content_hash,
                        &HalfVector::from_f32_slice(v),
                        &doc.tsv,
                        &doc.len,
                        &doc.context_scale,
                        &rid,
                    ],
                )?;
                replace_pieces(tx, rid, &change.pieces)?;
                crate::graph::replace_links(
                    tx,
                    (tenant, &partition),
                    rid,
                    rec.valid_from,
                    &change.links,
                )?;
            }
            tx.execute(
                "UPDATE memories SET metadata = $1, expires_at = $2, importance = $3, updated_at = $4 WHERE rid = $5",
                &[&rec.metadata, &rec.expires_at, &rec.importance, &now, &rid],
            )?;
            log_history(
                tx,
                id,
                tenant,
                &partition,
                Event::Update,
                Some(&old_text),
                Some(&rec.text),
                None,
                now,
            )?;
            Ok((rec, old_text))
        })
    }

    pub(crate) fn delete(
        &self,
        tenant: &str,
        id: &str,
        reason: Option<&str>,
    ) -> Result<MemoryRecord> {
        let now = self.now();
        self.tx(Tenancy::One(tenant), |tx| {
            let (rid, partition, mut rec) = get_for_update(tx, tenant, id)?;
            rules::check_current(&rec, Change::Delete, now)?;
            rules::mark_deleted(&mut rec, now);
            tx.execute(
                "UPDATE memories SET valid_until = $1, updated_at = $1, superseded_by = NULL WHERE rid = $2",
                &[&now, &rid],
            )?;
            log_history(
                tx,
                id,
                tenant,
                &partition,
                Event::Delete,
                Some(&rec.text),
                None,
                reason,
                now,
            )?;
            Ok(rec)
        })
    }

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
        self.tx(Tenancy::One(&scope.tenant), |tx| {
            // Locked first: a concurrent supersession of the same memory
            // waits here, then finds it no longer current.
            let (rid, old_partition, mut old) = get_for_update(tx, &scope.tenant, old_id)?;
            let end = rules::check_supersede(&old, &old_partition, &partition, m.valid_from, now)?;
            let added = self.add_in(tx, &partition, scope, m.clone(), &v, hash.clone(), Some(reason), now)?;
            tx.execute(
                "UPDATE memories SET valid_until = $1, updated_at = $2, superseded_by = $3 WHERE rid = $4",
                &[&end, &now, &added.id, &rid],
            )?;
            mark_evidence(tx, &partition, &old, &added.id)?;
            log_history(
                tx,
                old_id,
                &scope.tenant,
                &partition,
                Event::Update,
                Some(&old.text),
                Some(&m.text),
                Some(&rules::superseded_reason(&added.id, reason)),
                now,
            )?;
            rules::mark_superseded(&mut old, end, &added.id, now);
            Ok((added, old))
        })
    }

    pub(crate) fn touch(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let ids: Vec<&str> = ids.to_vec();
        self.tx(Tenancy::One(tenant), |tx| {
            tx.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = $1 \
                 WHERE id = ANY($2) AND tenant = $3",
                &[&now, &ids, &tenant],
            )?;
            Ok(())
        })
    }

    pub(crate) fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport> {
        let partition = scope.partition()?;
        let now = self.now();
        let report = self.tx(Tenancy::One(&scope.tenant), |tx| {
            let rows = tx.query(
                &format!("SELECT {RECORD_COLUMNS} FROM memories WHERE partition = $1 FOR UPDATE"),
                &[&partition],
            )?;
            let mut targets: Vec<(i64, MemoryRecord)> = Vec::new();
            for row in &rows {
                let (rid, rec) = record_from_row(row)?;
                if scope.admits(&rec.scope) {
                    targets.push((rid, rec));
                }
            }
            let rids: Vec<i64> = targets.iter().map(|t| t.0).collect();
            tx.execute("DELETE FROM memories WHERE rid = ANY($1)", &[&rids])?;
            // Their mentions went with the rows; the names nothing mentions go now.
            crate::graph::drop_unmentioned(tx, &partition)?;
            let mut report = ForgetReport {
                memories_deleted: targets.len(),
                history_deleted: 0,
            };
            if purge {
                let ids: Vec<&str> = targets.iter().map(|t| t.1.id.as_str()).collect();
                report.history_deleted = tx.execute(
                    "DELETE FROM history WHERE memory_id = ANY($1) AND tenant = $2",
                    &[&ids, &scope.tenant],
                )? as usize;
            } else {
                for (_, rec) in targets.iter().filter(|t| t.1.valid_until.is_none()) {
                    // Already-deleted memories have their DELETE in history already.
                    log_history(
                        tx,
                        &rec.id,
                        &scope.tenant,
                        &partition,
                        Event::Delete,
                        Some(&rec.text),
                        None,
                        Some("forget"),
                        now,
                    )?;
                }
            }
            // Queued writes of the scope would bring its memories back.
            let queued = tx.query(
                "SELECT id, scope FROM outbox WHERE tenant = $1",
                &[&scope.tenant],
            )?;
            for row in queued {
                let id: i64 = row.get(0);
                let queued_scope: Value = row.get(1);
                let covered = serde_json::from_value::<Scope>(queued_scope)
                    .is_ok_and(|q| rules::forget_drops_queued(scope, &partition, &q));
                if covered {
                    tx.execute("DELETE FROM outbox WHERE id = $1", &[&id])?;
                }
            }
            Ok(report)
        })?;
        if purge && report.memories_deleted > 0 {
            // Deleted rows stay in the table files until vacuumed; the
            // vacuum also drops their vectors from the HNSW index, and
            // their terms from the postings.
            let mut conn = self.pool.get()?;
            conn.batch("VACUUM memories, history, postings, entities, mentions, relations")?;
        }
        Ok(report)
    }

    /// Deletes every memory whose TTL has passed, in transactions of at
    /// most `BATCH` rows so concurrent work waits for one batch at most.
    pub(crate) fn expire(&self) -> Result<ExpireReport> {
        const BATCH: i64 = 500;
        let now = self.now();
        let mut report = ExpireReport::default();
        let mut partitions = std::collections::HashSet::new();
        loop {
            let done = self.tx(Tenancy::All, |tx| {
                let rows = tx.query(
                    "SELECT rid, id, tenant, partition, text, valid_until IS NULL FROM memories \
                     WHERE expires_at <= $1 ORDER BY rid LIMIT $2 FOR UPDATE SKIP LOCKED",
                    &[&now, &BATCH],
                )?;
                let rids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                tx.execute("DELETE FROM memories WHERE rid = ANY($1)", &[&rids])?;
                let mut seen = Vec::new();
                for r in &rows {
                    let (id, tenant, partition, text, current): (
                        String,
                        String,
                        String,
                        String,
                        bool,
                    ) = (r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
                    if current {
                        log_history(
                            tx,
                            &id,
                            &tenant,
                            &partition,
                            Event::Delete,
                            Some(&text),
                            None,
                            Some("expired"),
                            now,
                        )?;
                    }
                    seen.push(partition);
                }
                Ok(seen)
            })?;
            let n = done.len();
            report.memories_deleted += n;
            partitions.extend(done);
            if (n as i64) < BATCH {
                break;
            }
        }
        report.partitions = partitions.len();
        Ok(report)
    }

    pub(crate) fn reindex(
        &self,
        embed: &EmbedFn<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        const BATCH: i64 = 256;
        let total: i64 = self.tx(Tenancy::All, |tx| {
            Ok(tx.query_one("SELECT count(*) FROM memories", &[])?.get(0))
        })?;
        let mut done = 0usize;
        let mut last = 0i64;
        loop {
            let batch: Vec<(i64, String)> = self.tx(Tenancy::All, |tx| {
                Ok(tx
                    .query(
                        "SELECT rid, text FROM memories WHERE rid > $1 ORDER BY rid LIMIT $2",
                        &[&last, &BATCH],
                    )?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect())
            })?;
            let Some(&(batch_last, _)) = batch.last() else {
                break;
            };
            let vectors = rules::reembed(embed, &self.embedder, &batch)?;
            self.tx(Tenancy::All, |tx| {
                // The batch's old pieces in one statement, not one per row.
                let rids: Vec<i64> = batch.iter().map(|(rid, _)| *rid).collect();
                tx.execute("DELETE FROM pieces WHERE rid = ANY($1)", &[&rids])?;
                for ((rid, _), e) in batch.iter().zip(&vectors) {
                    tx.execute(
                        "UPDATE memories SET embedding = $1 WHERE rid = $2",
                        &[&HalfVector::from_f32_slice(&e.vector), rid],
                    )?;
                    add_pieces(tx, *rid, &e.pieces)?;
                }
                Ok(())
            })?;
            done += batch.len();
            last = batch_last;
            progress(done, total.max(0) as usize);
        }
        self.tx(Tenancy::All, |tx| set_embedder(tx, &self.embedder))?;
        Ok(done)
    }

    /// Inserts one new record inside `tx`, with its ADD in history.
    #[allow(clippy::too_many_arguments)]
    fn add_in(
        &self,
        tx: &mut Tx<'_>,
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
        let rid = insert_row(self, tx, partition, &record, v, &pieces)?;
        crate::graph::write_links(
            tx,
            (&scope.tenant, partition),
            rid,
            record.valid_from,
            &links,
        )?;
        log_history(
            tx,
            &record.id,
            &scope.tenant,
            partition,
            Event::Add,
            None,
            Some(&record.text),
            reason,
            now,
        )?;
        Ok(record)
    }
}

fn find_duplicate(
    tx: &mut Tx<'_>,
    partition: &str,
    scope: &Scope,
    hash: &str,
    kind: &str,
    now: i64,
) -> Result<Option<MemoryRecord>> {
    let rows = tx.query(
        &format!(
            "SELECT {RECORD_COLUMNS} FROM memories WHERE partition = $1 AND content_hash = $2 \
             AND kind = $3 AND valid_until IS NULL ORDER BY rid"
        ),
        &[&partition, &hash, &kind],
    )?;
    for row in &rows {
        let (_, rec) = record_from_row(row)?;
        if rules::is_duplicate(&rec, scope, now) {
            return Ok(Some(rec));
        }
    }
    Ok(None)
}

/// Writes a record as it is (id and times included), with its vectors:
/// for new memories and for import.
pub(crate) fn insert_row(
    store: &PgStore,
    tx: &mut Tx<'_>,
    partition: &str,
    r: &MemoryRecord,
    v: &[f32],
    pieces: &[Vec<f32>],
) -> Result<i64> {
    let provenance =
        serde_json::to_value(&r.provenance).map_err(|e| Error::Internal(e.to_string()))?;
    let doc = terms::document(
        store.analyzer(),
        &r.text,
        r.context.as_deref(),
        store.options.context_weight,
    );
    let access_count = i64::try_from(r.access_count).unwrap_or(i64::MAX);
    let row = tx.query_one(
        "INSERT INTO memories (id, partition, tenant, user_id, agent_id, session_id, kind, text, context, metadata, \
         created_at, updated_at, valid_from, valid_until, expires_at, importance, access_count, last_accessed_at, \
         provenance, content_hash, superseded_by, embedding, tsv, doc_len, context_scale) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
         $23::text::tsvector, $24, $25) RETURNING rid",
        &[
            &r.id,
            &partition,
            &r.scope.tenant,
            &r.scope.user_id,
            &r.scope.agent_id,
            &r.scope.session_id,
            &r.kind.as_str(),
            &r.text,
            &r.context,
            &r.metadata,
            &r.created_at,
            &r.updated_at,
            &r.valid_from,
            &r.valid_until,
            &r.expires_at,
            &r.importance,
            &access_count,
            &r.last_accessed_at,
            &provenance,
            &r.content_hash,
            &r.superseded_by,
            &HalfVector::from_f32_slice(v),
            &doc.tsv,
            &doc.len,
            &doc.context_scale,
        ],
    )?;
    let rid = row.get(0);
    add_pieces(tx, rid, pieces)?;
    Ok(rid)
}

/// Replaces a memory's later pieces (after its text was re-embedded).
fn replace_pieces(tx: &mut Tx<'_>, rid: i64, pieces: &[Vec<f32>]) -> Result<()> {
    tx.execute("DELETE FROM pieces WHERE rid = $1", &[&rid])?;
    add_pieces(tx, rid, pieces)
}

/// Stores a memory's later pieces beside its row, with the row's
/// partition, validity and expiry as they are now (the trigger keeps the
/// last two from here on).
fn add_pieces(tx: &mut Tx<'_>, rid: i64, pieces: &[Vec<f32>]) -> Result<()> {
    for (i, p) in pieces.iter().enumerate() {
        let ord = i16::try_from(i + 1).map_err(|_| Error::invalid("too many pieces"))?;
        tx.execute(
            "INSERT INTO pieces (rid, ord, partition, tenant, valid_until, expires_at, embedding) \
             SELECT rid, $2, partition, tenant, valid_until, expires_at, $3 FROM memories WHERE rid = $1",
            &[&rid, &ord, &HalfVector::from_f32_slice(p)],
        )?;
    }
    Ok(())
}
