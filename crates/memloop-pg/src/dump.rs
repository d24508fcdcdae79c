//! Export and import (`memloop_longterm::dump`): rows read and written as
//! they are, a page per transaction, so a dump never sits in memory.

use std::collections::HashMap;

use memloop_core::{Event, Result};
use memloop_longterm::dump::{
    history_of_user, DumpLine, DumpedHistory, DumpedMemory, RestoreBatch, RestoreReport,
};
use pgvector::HalfVector;

use crate::pool::Tx;
use crate::rows::{record_from_row, RECORD_COLUMNS};
use crate::write::insert_row;
use crate::{PgStore, Tenancy};

const PAGE: i64 = 500;

impl PgStore {
    pub(crate) fn dump(
        &self,
        user: Option<&str>,
        vectors: bool,
        out: &mut dyn FnMut(DumpLine) -> Result<()>,
    ) -> Result<()> {
        // Byte order (COLLATE "C"): the embedded store's order, whatever
        // the database's collation.
        let mut after = String::new();
        loop {
            let page = self.tx(Tenancy::All, |tx| {
                let rows = tx.query(
                    &format!(
                        "SELECT {RECORD_COLUMNS}, embedding FROM memories \
                         WHERE id COLLATE \"C\" > $1 AND ($2::text IS NULL OR user_id = $2) \
                         ORDER BY id COLLATE \"C\" LIMIT $3"
                    ),
                    &[&after, &user, &PAGE],
                )?;
                let page = rows
                    .iter()
                    .map(|r| {
                        let (rid, mut record) = record_from_row(r)?;
                        let superseded_by = record.superseded_by.take();
                        let vector = vectors.then(|| halves_to_f32(&r.get::<_, HalfVector>(21)));
                        let memory = DumpedMemory {
                            record,
                            superseded_by,
                            vector,
                            pieces: Vec::new(),
                            links: Default::default(),
                        };
                        Ok((rid, memory))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let rids: Vec<i64> = page.iter().map(|(rid, _)| *rid).collect();
                let mut links = crate::graph::dumped_links(tx, &rids)?;
                let mut pieces = if vectors {
                    pieces_by_rid(tx, &rids)?
                } else {
                    HashMap::new()
                };
                Ok(page
                    .into_iter()
                    .map(|(rid, mut m)| {
                        m.pieces = pieces.remove(&rid).unwrap_or_default();
                        m.links = links.remove(&rid).unwrap_or_default();
                        m
                    })
                    .collect::<Vec<_>>())
            })?;
            let Some(last) = page.last() else {
                break;
            };
            after = last.record.id.clone();
            for m in page {
                out(DumpLine::Memory(Box::new(m)))?;
            }
        }
        let (mut after_id, mut after_seq) = (String::new(), 0i64);
        loop {
            let page = self.tx(Tenancy::All, |tx| {
                let rows = tx.query(
                    "SELECT seq, memory_id, tenant, partition, event, old_text, new_text, at, actor, reason \
                     FROM history WHERE memory_id COLLATE \"C\" > $1 OR (memory_id = $1 AND seq > $2) \
                     ORDER BY memory_id COLLATE \"C\", seq LIMIT $3",
                    &[&after_id, &after_seq, &PAGE],
                )?;
                Ok(rows
                    .iter()
                    .map(|r| {
                        (
                            r.get::<_, i64>(0),
                            DumpedHistory {
                                memory_id: r.get(1),
                                tenant: r.get(2),
                                partition: r.get(3),
                                event: Event::parse(r.get(4)).unwrap_or(Event::Noop),
                                old_memory: r.get(5),
                                new_memory: r.get(6),
                                at: r.get(7),
                                actor: r.get(8),
                                reason: r.get(9),
                            },
                        )
                    })
                    .collect::<Vec<_>>())
            })?;
            let Some((seq, last)) = page.last() else {
                break;
            };
            (after_id, after_seq) = (last.memory_id.clone(), *seq);
            for (_, h) in page {
                if history_of_user(&h.partition, user) {
                    out(DumpLine::History(h))?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn restore(&self, batch: &RestoreBatch) -> Result<RestoreReport> {
        batch.check(&self.embedder)?;
        self.tx(Tenancy::All, |tx| {
            let mut report = RestoreReport::default();
            for m in &batch.memories {
                let r = &m.record;
                // One importer at a time per id: two imports of one file
                // race to a skip, not to a unique violation.
                tx.query(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 1))",
                    &[&r.id],
                )?;
                if tx
                    .query_opt("SELECT 1 FROM memories WHERE id = $1", &[&r.id])?
                    .is_some()
                {
                    report.memories_present += 1;
                    continue;
                }
                let partition = r.scope.partition()?;
                let e = &m.embedded;
                let rid = insert_row(self, tx, &partition, r, &e.vector, &e.pieces)?;
                crate::graph::restore_links(tx, (&r.scope.tenant, &partition), rid, &m.links)?;
                report.memories += 1;
            }
            for group in &batch.history {
                let Some(first) = group.first() else {
                    continue;
                };
                tx.query(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 2))",
                    &[&first.memory_id],
                )?;
                if tx
                    .query_opt(
                        "SELECT 1 FROM history WHERE memory_id = $1 LIMIT 1",
                        &[&first.memory_id],
                    )?
                    .is_some()
                {
                    report.history_present += 1;
                    continue;
                }
                for h in group {
                    tx.execute(
                        "INSERT INTO history (memory_id, tenant, partition, event, old_text, new_text, actor, reason, at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        &[
                            &h.memory_id,
                            &h.tenant,
                            &h.partition,
                            &h.event.as_str(),
                            &h.old_memory,
                            &h.new_memory,
                            &h.actor,
                            &h.reason,
                            &h.at,
                        ],
                    )?;
                    report.history += 1;
                }
            }
            Ok(report)
        })
    }
}

/// The pieces of the memories `rids`, each memory's in order, in one query.
fn pieces_by_rid(tx: &mut Tx<'_>, rids: &[i64]) -> Result<HashMap<i64, Vec<Vec<f32>>>> {
    let mut pieces: HashMap<i64, Vec<Vec<f32>>> = HashMap::new();
    for r in tx.query(
        "SELECT rid, embedding FROM pieces WHERE rid = ANY($1) ORDER BY rid, ord",
        &[&rids],
    )? {
        pieces
            .entry(r.get(0))
            .or_default()
            .push(halves_to_f32(&r.get::<_, HalfVector>(1)));
    }
    Ok(pieces)
}

/// A stored vector's values as f32, which they are exactly.
fn halves_to_f32(v: &HalfVector) -> Vec<f32> {
    v.as_slice().iter().map(|h| h.to_f32()).collect()
}
