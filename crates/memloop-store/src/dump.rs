//! Export and import (`memloop_longterm::dump`): rows read and written as
//! they are, in pages, so a dump of a large store never sits in memory.

use memloop_core::Result;
use memloop_longterm::dump::{
    history_of_user, DumpLine, DumpedHistory, DumpedLinks, DumpedMemory, RestoreBatch,
    RestoreReport,
};
use rusqlite::{params, OptionalExtension};

use crate::rows::{
    blob_to_vector, history_from_row, record_from_row, HISTORY_COLUMNS, RECORD_COLUMNS,
};
use crate::write::{insert_row, log_change, with_pieces};
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
            let Some((last, _)) = page.last() else {
                break;
            };
            after = last.record.id.clone();
            for (mut memory, blob) in page {
                // The row holds the first vector, then the pieces.
                if vectors {
                    let all = blob_to_vector(&blob);
                    let mut each = all
                        .chunks(self.embedder.dimensions.max(1))
                        .map(<[f32]>::to_vec);
                    memory.vector = each.next();
                    memory.pieces = each.collect();
                }
                out(DumpLine::Memory(Box::new(memory)))?;
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

    /// A page of memories after `after`, with their links and stored
    /// vectors (the blob), read under one connection and released before
    /// the lines are written out.
    fn memory_page(&self, user: Option<&str>, after: &str) -> Result<Vec<(DumpedMemory, Vec<u8>)>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS}, embedding FROM memories \
                 WHERE id > ?1 AND (?2 IS NULL OR user_id = ?2) ORDER BY id LIMIT ?3"
            ))
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(params![after, user, PAGE], |r| {
                let (row, mut record) = record_from_row(r)?;
                let superseded_by = record.superseded_by.take();
                let memory = DumpedMemory {
                    record,
                    superseded_by,
                    vector: None,
                    pieces: Vec::new(),
                    links: DumpedLinks::default(),
                };
                Ok((row, memory, r.get::<_, Vec<u8>>(21)?))
            })
            .map_err(sql_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_err)?;
        rows.into_iter()
            .map(|(row, mut memory, blob)| {
                memory.links = crate::graph::dumped_links(&conn, row)?;
                Ok((memory, blob))
            })
            .collect()
    }

    fn history_page(&self, after: &(String, i64)) -> Result<Vec<(i64, DumpedHistory)>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {HISTORY_COLUMNS} FROM history WHERE memory_id > ?1 OR (memory_id = ?1 AND seq > ?2) \
                 ORDER BY memory_id, seq LIMIT ?3"
            ))
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(params![after.0, after.1, PAGE], |r| {
                let (partition, e) = history_from_row(r)?;
                Ok((e.id, DumpedHistory::new(partition, e)))
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
    }

    pub(crate) fn restore(&self, batch: &RestoreBatch) -> Result<RestoreReport> {
        batch.check(&self.embedder)?;
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let mut report = RestoreReport::default();
        // Rows written per partition, whose indexes catch up after the commit.
        let mut written: std::collections::BTreeMap<String, usize> = Default::default();
        for m in &batch.memories {
            let r = &m.record;
            let stored = tx
                .query_row("SELECT 1 FROM memories WHERE id = ?1", [&r.id], |_| Ok(()))
                .optional()
                .map_err(sql_err)?;
            if stored.is_some() {
                report.memories_present += 1;
                continue;
            }
            let partition = r.scope.partition()?;
            let e = &m.embedded;
            let row = insert_row(&tx, &partition, r, &with_pieces(&e.vector, &e.pieces))?;
            crate::graph::restore_links(&tx, &partition, row, &m.links)?;
            log_change(&tx, &partition, row)?;
            report.memories += 1;
            *written.entry(partition).or_default() += 1;
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
        drop(conn);
        for (partition, rows) in written {
            self.keep_current(&partition, rows);
        }
        Ok(report)
    }
}
