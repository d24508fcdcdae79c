//! Mapping between `memories` rows and `MemoryRecord`, and vector blobs.

use half::slice::HalfFloatSliceExt;
use memloop_core::{Event, HistoryEntry, Kind, MemoryRecord, Provenance, Scope};
use memloop_longterm::rank::RankInputs;
use rusqlite::Row;

/// The columns every record query selects, in the order `record_from_row` reads them.
pub const RECORD_COLUMNS: &str =
    "row, id, tenant, user_id, agent_id, session_id, kind, text, metadata, \
     created_at, updated_at, valid_from, valid_until, expires_at, importance, access_count, \
     last_accessed_at, provenance, content_hash, context, superseded_by";

/// The columns `rank_inputs_from_row` reads: what decay and a time window
/// rank by, without the texts.
pub const RANK_INPUT_COLUMNS: &str =
    "row, id, valid_from, importance, access_count, last_accessed_at";

pub fn rank_inputs_from_row(r: &Row<'_>) -> rusqlite::Result<(i64, RankInputs)> {
    Ok((
        r.get(0)?,
        RankInputs {
            id: r.get(1)?,
            valid_from: r.get(2)?,
            importance: r.get::<_, f64>(3)? as f32,
            access_count: r.get::<_, i64>(4)?.max(0) as u64,
            last_accessed_at: r.get(5)?,
        },
    ))
}

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

/// The first byte of a half-precision vector blob. Its length is then odd
/// (1 + 2 per dimension), so it can never be mistaken for the f32 blobs
/// of stores written before it (4 bytes per dimension), which stay
/// readable as they are.
const F16_BLOB: u8 = 1;

/// A vector as stored: half precision. The vectors are unit length, so
/// each component is within 2^-11 of its f32 value and a cosine moves by
/// about 1e-4 at most (the HNSW graph already holds them so); the row, and
/// every page a delete or an update rewrites, is 40% smaller.
///
/// Both directions convert a whole slice at once, which runs the CPU's
/// conversion instructions where it has them; element by element, each
/// value took a call and a feature check, and the two conversions were a
/// third of loading a small partition (docs/benchmarks.md).
pub fn vector_to_blob(v: &[f32]) -> Vec<u8> {
    let mut halves = vec![half::f16::ZERO; v.len()];
    halves.convert_from_f32_slice(v);
    let mut out = Vec::with_capacity(1 + 2 * v.len());
    out.push(F16_BLOB);
    for h in halves {
        out.extend_from_slice(&h.to_le_bytes());
    }
    out
}

/// A stored vector as read, not yet converted: the half-precision values
/// of a blob, or the f32 ones of a store written before them. An exact
/// index keeps halves, so it takes them as they are.
pub enum StoredVector {
    Half(Vec<half::f16>),
    Single(Vec<f32>),
}

impl StoredVector {
    pub fn from_blob(b: &[u8]) -> StoredVector {
        match StoredVector::half_bytes(b) {
            Some(rest) => StoredVector::Half(
                rest.chunks_exact(2)
                    .map(|c| half::f16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
            None => StoredVector::Single(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
        }
    }

    /// The little-endian half-precision values of a blob (two bytes each),
    /// or None for a blob of f32 values.
    pub fn half_bytes(b: &[u8]) -> Option<&[u8]> {
        match b.split_first() {
            Some((&F16_BLOB, rest)) if b.len() % 2 == 1 => Some(rest),
            _ => None,
        }
    }

    pub fn into_f32(self) -> Vec<f32> {
        match self {
            StoredVector::Half(halves) => {
                let mut out = vec![0.0; halves.len()];
                halves.convert_to_f32_slice(&mut out);
                out
            }
            StoredVector::Single(v) => v,
        }
    }
}

/// A stored vector, in half precision or (written before it) f32.
pub fn blob_to_vector(b: &[u8]) -> Vec<f32> {
    StoredVector::from_blob(b).into_f32()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_comes_back_within_half_precision() {
        let v: Vec<f32> = (0..384).map(|i| ((i as f32) * 0.37).sin() / 14.0).collect();
        let blob = vector_to_blob(&v);
        assert_eq!(blob.len(), 1 + 2 * v.len());
        let back = blob_to_vector(&blob);
        assert_eq!(back.len(), v.len());
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() <= a.abs() / 2048.0 + 1e-7, "{a} -> {b}");
        }
        // Stored again, it is the same blob: export and import round-trip.
        assert_eq!(vector_to_blob(&back), blob);
    }

    #[test]
    fn an_f32_blob_of_an_older_store_is_still_read() {
        let v = [0.5f32, -0.25, 1.0, 0.0];
        let old: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(blob_to_vector(&old), v);
    }
}
