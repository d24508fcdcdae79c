//! Mapping between `memories` rows and `MemoryRecord`.

use memloop_core::{Error, Kind, MemoryRecord, Provenance, Result, Scope, StoreError};
use memloop_longterm::rank::RankInputs;
use postgres::Row;

/// The columns every record query selects, in the order `record_from_row` reads them.
pub const RECORD_COLUMNS: &str =
    "rid, id, tenant, user_id, agent_id, session_id, kind, text, metadata, \
     created_at, updated_at, valid_from, valid_until, expires_at, importance, access_count, \
     last_accessed_at, provenance, content_hash, context, superseded_by";

fn damaged(what: &str, id: &str, e: impl std::fmt::Display) -> Error {
    Error::Storage(StoreError::message(format!(
        "memory {id} has an unreadable {what} ({e})"
    )))
}

/// The columns `rank_inputs_from_row` reads: what decay and a time window
/// rank by, without the texts.
pub const RANK_INPUT_COLUMNS: &str =
    "rid, id, valid_from, importance, access_count, last_accessed_at";

pub fn rank_inputs_from_row(r: &Row) -> Result<(i64, RankInputs)> {
    let get = |e: postgres::Error| Error::Storage(StoreError::from_source(e));
    Ok((
        r.try_get(0).map_err(get)?,
        RankInputs {
            id: r.try_get(1).map_err(get)?,
            valid_from: r.try_get(2).map_err(get)?,
            importance: r.try_get(3).map_err(get)?,
            access_count: r.try_get::<_, i64>(4).map_err(get)?.max(0) as u64,
            last_accessed_at: r.try_get(5).map_err(get)?,
        },
    ))
}

/// A row as (rid, record); a row whose stored values do not parse is a
/// storage error naming the memory, never a panic.
pub fn record_from_row(r: &Row) -> Result<(i64, MemoryRecord)> {
    let get = |e: postgres::Error| Error::Storage(StoreError::from_source(e));
    let id: String = r.try_get(1).map_err(get)?;
    let kind: String = r.try_get(6).map_err(get)?;
    let provenance: serde_json::Value = r.try_get(17).map_err(get)?;
    let record = MemoryRecord {
        scope: Scope {
            tenant: r.try_get(2).map_err(get)?,
            user_id: r.try_get(3).map_err(get)?,
            agent_id: r.try_get(4).map_err(get)?,
            session_id: r.try_get(5).map_err(get)?,
        },
        kind: Kind::parse(&kind).map_err(|e| damaged("kind", &id, e))?,
        text: r.try_get(7).map_err(get)?,
        metadata: r.try_get(8).map_err(get)?,
        created_at: r.try_get(9).map_err(get)?,
        updated_at: r.try_get(10).map_err(get)?,
        valid_from: r.try_get(11).map_err(get)?,
        valid_until: r.try_get(12).map_err(get)?,
        expires_at: r.try_get(13).map_err(get)?,
        importance: r.try_get(14).map_err(get)?,
        access_count: r.try_get::<_, i64>(15).map_err(get)?.max(0) as u64,
        last_accessed_at: r.try_get(16).map_err(get)?,
        provenance: serde_json::from_value::<Provenance>(provenance)
            .map_err(|e| damaged("provenance", &id, e))?,
        content_hash: r.try_get(18).map_err(get)?,
        context: r.try_get(19).map_err(get)?,
        superseded_by: r.try_get(20).map_err(get)?,
        id,
    };
    Ok((r.try_get(0).map_err(get)?, record))
}
