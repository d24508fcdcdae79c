//! Mapping between `memories` rows and `MemoryRecord`, and vector blobs.

use memloop_core::{Event, HistoryEntry, Kind, MemoryRecord, Provenance, Scope};
use rusqlite::Row;

/// The columns every record query selects, in the order `record_from_row` reads them.
pub const RECORD_COLUMNS: &str =
    "row, id, tenant, user_id, agent_id, session_id, kind, text, metadata, \
     created_at, updated_at, valid_from, valid_until, expires_at, importance, access_count, \
     last_accessed_at, provenance, content_hash, context, superseded_by";

pub fn record_from_row(r: &Row<'_>) -> rusqlite::Result<(i64, MemoryRecord)> {
    let kind: String = r.get(6)?;
    let metadata: String = r.get(8)?;
    let provenance: String = r.get(17)?;
    let record = MemoryRecord {
        id: r.get(1)?,
        scope: Scope {
            tenant: r.get(2)?,
            user_id: r.get(3)?,
            agent_id: r.get(4)?,
            session_id: r.get(5)?,
        },
        kind: Kind::parse(&kind).unwrap_or_default(),
        text: r.get(7)?,
        metadata: serde_json::from_str(&metadata).unwrap_or_default(),
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        valid_from: r.get(11)?,
        valid_until: r.get(12)?,
        expires_at: r.get(13)?,
        importance: r.get::<_, f64>(14)? as f32,
        access_count: r.get::<_, i64>(15)?.max(0) as u64,
        last_accessed_at: r.get(16)?,
        provenance: serde_json::from_str::<Provenance>(&provenance).unwrap_or_default(),
        content_hash: r.get(18)?,
        context: r.get(19)?,
        superseded_by: r.get(20)?,
    };
    Ok((r.get(0)?, record))
}

pub fn vector_to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn blob_to_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The history columns `history_from_row` reads, in its order.
pub const HISTORY_COLUMNS: &str =
    "seq, memory_id, partition, event, old_text, new_text, at, actor, reason";

/// A history row (`HISTORY_COLUMNS`) and the partition of its memory.
pub fn history_from_row(r: &Row<'_>) -> rusqlite::Result<(String, HistoryEntry)> {
    let event: String = r.get(3)?;
    Ok((
        r.get(2)?,
        HistoryEntry {
            id: r.get(0)?,
            memory_id: r.get(1)?,
            event: Event::parse(&event).unwrap_or(Event::Noop),
            old_memory: r.get(4)?,
            new_memory: r.get(5)?,
            at: r.get(6)?,
            actor: r.get(7)?,
            reason: r.get(8)?,
        },
    ))
}
