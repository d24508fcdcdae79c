//! Export and import (`memloop_longterm::dump`): rows read and written as
//! they are, in pages, so a dump of a large store never sits in memory.

use memloop_core::{Error, Event, MemoryRecord, Result};
use memloop_longterm::checks::check_vector;
use memloop_longterm::dump::{
    history_of_user, DumpLine, DumpedHistory, DumpedMemory, RestoreBatch, RestoreReport,
};
use rusqlite::{params, OptionalExtension, Transaction};

use crate::rows::{blob_to_vector, record_from_row, vector_to_blob, RECORD_COLUMNS};
use crate::write::log_change;
use crate::{sql_err, write_tx, EmbeddedStore};

const PAGE: i64 = 500;

impl EmbeddedStore {
    pub(crate) fn dump(
        &self,
        user: Option<&str>,
        vectors: bool,
        out: &mut dyn FnMut(DumpLine) -> Result<()>,
    ) -> Result<()> {
        // Retrieval counts still batched in memory belong in the dump.
        self.access.flush()?;
        let mut after = String::new();
        loop {
            let page = self.memory_page(user, &after)?;
            let Some((last, _, _)) = page.last() else {
                break;
            };
            after = last.id.clone();
            for (record, superseded_by, blob) in page {
                out(DumpLine::Memory(Box::new(DumpedMemory {
                    record,
                    superseded_by,
                    vector: vectors.then(|| blob_to_vector(&blob)),
                })))?;
            }
        }
        let mut cursor = (String::new(), 0i64);
        loop {
            let page = self.history_page(&cursor)?;
            let Some((seq, h)) = page.last() else {
                break;
            };
            cursor = (h.memory_id.clone(), *seq);
            for (_, h) in page {
                if history_of_user(&h.partition, user) {
                    out(DumpLine::History(h))?;
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::type_complexity)]
    fn memory_page(
        &self,
        user: Option<&str>,
        after: &str,
    ) -> Result<Vec<(MemoryRecord, Option<String>, Vec<u8>)>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS}, embedding FROM memories \
                 WHERE id > ?1 AND (?2 IS NULL OR user_id = ?2) ORDER BY id LIMIT ?3"
            ))
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(params![after, user, PAGE], |r| {
                let (_, mut rec) = record_from_row(r)?;
                let superseded_by = rec.superseded_by.take();
                Ok((rec, superseded_by, r.get::<_, Vec<u8>>(21)?))
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
    }

    fn history_page(&self, after: &(String, i64)) -> Result<Vec<(i64, DumpedHistory)>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, memory_id, partition, event, old_text, new_text, at, actor, reason \
                 FROM history WHERE memory_id > ?1 OR (memory_id = ?1 AND seq > ?2) \
                 ORDER BY memory_id, seq LIMIT ?3",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(params![after.0, after.1, PAGE], |r| {
                let partition: String = r.get(2)?;
                let event: String = r.get(3)?;
                Ok((
                    r.get(0)?,
                    DumpedHistory {
                        tenant: partition
                            .split('\u{1f}')
                            .next()
                            .unwrap_or_default()
                            .to_string(),
                        partition,
                        memory_id: r.get(1)?,
                        event: Event::parse(&event).unwrap_or(Event::Noop),
                        old_memory: r.get(4)?,
                        new_memory: r.get(5)?,
                        at: r.get(6)?,
                        actor: r.get(7)?,
                        reason: r.get(8)?,
                    },
                ))
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
    }

    pub(crate) fn restore(&self, batch: &RestoreBatch) -> Result<RestoreReport> {
        for (r, v) in &batch.memories {
            check_vector(&self.embedder, v)?;
            r.scope.partition()?;
        }
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let mut report = RestoreReport::default();
        for (r, v) in &batch.memories {
            let stored = tx
                .query_row("SELECT 1 FROM memories WHERE id = ?1", [&r.id], |_| Ok(()))
                .optional()
                .map_err(sql_err)?;
            if stored.is_some() {
                report.memories_present += 1;
                continue;
            }
            let partition = r.scope.partition()?;
            let row = restore_row(&tx, &partition, r, v)?;
            log_change(&tx, &partition, row)?;
            report.memories += 1;
        }
        for group in &batch.history {
            let Some(first) = group.first() else {
                continue;
            };
            let present = tx
                .query_row(
                    "SELECT 1 FROM history WHERE memory_id = ?1 LIMIT 1",
                    [&first.memory_id],
                    |_| Ok(()),
                )
                .optional()
                .map_err(sql_err)?;
            if present.is_some() {
                report.history_present += 1;
                continue;
            }
            for h in group {
                tx.prepare_cached(
                    "INSERT INTO history (memory_id, partition, event, old_text, new_text, actor, reason, at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(sql_err)?
                .execute(params![
                    h.memory_id,
                    h.partition,
                    h.event.as_str(),
                    h.old_memory,
                    h.new_memory,
                    h.actor,
                    h.reason,
                    h.at
                ])
                .map_err(sql_err)?;
                report.history += 1;
            }
        }
        tx.commit().map_err(sql_err)?;
        Ok(report)
    }
}

/// Writes a record with every stored column as given.
fn restore_row(tx: &Transaction<'_>, partition: &str, r: &MemoryRecord, v: &[f32]) -> Result<i64> {
    let provenance =
        serde_json::to_string(&r.provenance).map_err(|e| Error::Internal(e.to_string()))?;
    tx.prepare_cached(
        "INSERT INTO memories (id, partition, tenant, user_id, agent_id, session_id, kind, text, metadata, \
         created_at, updated_at, valid_from, valid_until, expires_at, importance, access_count, last_accessed_at, \
         provenance, content_hash, embedding, context, superseded_by) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
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
    ])
    .map_err(sql_err)?;
    Ok(tx.last_insert_rowid())
}
