//! What a write decides, the same for every backend: the record a new
//! memory becomes, which memories a change may touch, what an update, a
//! delete and a supersession do to a record, and when a new text is a
//! duplicate. A backend reads and writes the rows these name; it decides
//! nothing here (the two backends once held a copy each, and the copies
//! drifted: PostgreSQL updated an expired memory and stored nothing for a
//! text an expired memory had held).

use memloop_core::links::Links;
use memloop_core::text::{content_hash, identity_hash};
use memloop_core::{EmbedderInfo, Error, Kind, MemoryRecord, NewMemory, Result, Scope};

use crate::MemoryUpdate;

/// New memories to store in `scope`, checked for the store's embedder
/// (`checks::check_new`: nothing is stored if one is bad): their
/// partition, and each one's identity hash (what the duplicate check
/// compares).
pub fn checked_new(
    embedder: &EmbedderInfo,
    scope: &Scope,
    items: &[(NewMemory, Vec<f32>)],
) -> Result<(String, Vec<String>)> {
    let partition = scope.partition()?;
    let hashes = items
        .iter()
        .map(|(m, v)| checked_identity(embedder, m, v))
        .collect::<Result<_>>()?;
    Ok((partition, hashes))
}

/// One new memory checked for the store's embedder, and its identity hash.
pub fn checked_identity(embedder: &EmbedderInfo, m: &NewMemory, v: &[f32]) -> Result<String> {
    crate::checks::check_new(embedder, m, v)?;
    Ok(identity_hash(m))
}

/// A batch of stored texts (rows keyed by `K`) re-embedded for `reindex`,
/// each vector checked against the store's embedder: one per text, or an
/// error that changes nothing.
pub fn reembed<K>(
    embed: &crate::EmbedFn<'_>,
    embedder: &EmbedderInfo,
    batch: &[(K, String)],
) -> Result<Vec<crate::Embedded>> {
    let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
    let vectors = embed(&texts)?;
    if vectors.len() != batch.len() {
        return Err(Error::Embedding(
            "the embedder returned a wrong number of vectors".into(),
        ));
    }
    vectors.iter().try_for_each(|e| e.check(embedder))?;
    Ok(vectors)
}

/// Whether `old` (stored in `old_partition`) may be superseded by a new
/// memory of `partition` valid from `new_valid_from`, at `now`: it must be
/// current and in the same partition (another's reads as unknown). Returns
/// when it stops holding (`supersession_end`).
pub fn check_supersede(
    old: &MemoryRecord,
    old_partition: &str,
    partition: &str,
    new_valid_from: Option<i64>,
    now: i64,
) -> Result<i64> {
    if old_partition != partition {
        return Err(Error::NotFound(old.id.clone()));
    }
    check_current(old, Change::Supersede, now)?;
    Ok(supersession_end(old, new_valid_from, now))
}

/// A new memory as a record (id, times, defaults), with what its row keeps
/// beside the record: the vectors of its later pieces and its links.
pub struct NewRecord {
    pub record: MemoryRecord,
    pub pieces: Vec<Vec<f32>>,
    pub links: Links,
}

impl NewRecord {
    /// `m` stored at `now` in `scope`, under its identity hash
    /// (`memloop_core::text::identity_hash`): a fresh id, valid from its
    /// own `valid_from` or now, importance 0.5 unless given.
    pub fn build(scope: &Scope, m: NewMemory, identity: String, now: i64) -> NewRecord {
        let record = MemoryRecord {
            id: uuid::Uuid::now_v7().to_string(),
            text: m.text,
            context: m.context,
            kind: m.kind,
            scope: scope.clone(),
            metadata: m.metadata,
            created_at: now,
            updated_at: now,
            valid_from: m.valid_from.unwrap_or(now),
            valid_until: None,
            expires_at: m.expires_at,
            importance: m.importance.unwrap_or(0.5),
            access_count: 0,
            last_accessed_at: None,
            provenance: m.provenance,
            content_hash: identity,
            superseded_by: None,
        };
        NewRecord {
            record,
            pieces: m.pieces,
            links: m.links,
        }
    }
}

/// A change to a stored memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Update,
    Delete,
    Supersede,
}

/// Whether `change` may touch `rec` at `now`: only a current memory
/// changes. A deleted or superseded one is history; an expired one reads
/// as deleted (`lookup`), so it is refused the same way, and the message
/// says what to do instead.
pub fn check_current(rec: &MemoryRecord, change: Change, now: i64) -> Result<()> {
    let id = &rec.id;
    if rec.valid_until.is_some() {
        return Err(Error::invalid(match change {
            Change::Update => format!(
                "memory {id} was deleted or superseded and is kept only as history: update the current memory instead"
            ),
            Change::Delete | Change::Supersede => {
                format!("memory {id} is already deleted or superseded")
            }
        }));
    }
    if rec.is_expired(now) {
        return Err(Error::invalid(match change {
            Change::Update => format!(
                "memory {id} has expired (its TTL passed) and is kept only until gc deletes it: add it again to keep it"
            ),
            Change::Delete => format!(
                "memory {id} has expired (its TTL passed): it is out of search already, and gc deletes it"
            ),
            Change::Supersede => format!(
                "memory {id} has expired (its TTL passed): add the new memory instead of superseding it"
            ),
        }));
    }
    Ok(())
}

/// Applies `change` (already checked) to `rec` at `now`: its text and
/// hash, metadata, expiry, importance (clamped to 0..=1) and update time.
/// Returns the text it had.
pub fn apply_update(rec: &mut MemoryRecord, change: &MemoryUpdate, now: i64) -> String {
    let old_text = rec.text.clone();
    if let Some((text, _)) = &change.text {
        rec.content_hash = content_hash(text);
        rec.text = text.clone();
    }
    if let Some(m) = &change.metadata {
        rec.metadata = m.clone();
    }
    if let Some(e) = change.expires_at {
        rec.expires_at = e;
    }
    if let Some(i) = change.importance {
        rec.importance = i.clamp(0.0, 1.0);
    }
    rec.updated_at = now;
    old_text
}

/// `rec` deleted at `now`: its validity ends, and it names no successor
/// (an episode marked as evidence of a replaced claim then reads as
/// deleted, not superseded: `lookup::RecordStatus`).
pub fn mark_deleted(rec: &mut MemoryRecord, now: i64) {
    rec.valid_until = Some(now);
    rec.updated_at = now;
    rec.superseded_by = None;
}

/// When a superseded fact stops holding: when the new one began (world
/// time, `new_valid_from`, else now), but never before the old one started
/// nor after now.
pub fn supersession_end(old: &MemoryRecord, new_valid_from: Option<i64>, now: i64) -> i64 {
    new_valid_from
        .unwrap_or(now)
        .min(now)
        .max(old.valid_from.saturating_add(1).min(now))
}

/// `old` superseded at `now` by `new_id`, holding until `end`.
pub fn mark_superseded(old: &mut MemoryRecord, end: i64, new_id: &str, now: i64) {
    old.valid_until = Some(end);
    old.updated_at = now;
    old.superseded_by = Some(new_id.to_string());
}

/// The reason a superseded memory's history gives.
pub fn superseded_reason(new_id: &str, reason: &str) -> String {
    format!("superseded by {new_id}: {reason}")
}

/// Whether superseding `old` marks episodes as evidence of the replaced
/// claim: a memory distilled from turns (not an episode itself) marks the
/// current episodes of its session that share a turn with it.
pub fn marks_evidence(old: &MemoryRecord) -> bool {
    old.kind != Kind::Episode && !old.provenance.turn_ids.is_empty()
}

/// Whether `rec` (current, with the same identity hash and kind) makes a
/// new text in `scope` a duplicate at `now`: same scope, and not expired
/// (the same text written after its TTL passed is stored anew).
pub fn is_duplicate(rec: &MemoryRecord, scope: &Scope, now: i64) -> bool {
    rec.valid_until.is_none() && rec.scope == *scope && !rec.is_expired(now)
}

/// Whether forgetting `forgotten` (whose partition is `partition`) drops
/// a write queued for `queued`: same partition, and the agent and session
/// the forget narrows to, if it does. A queued write left behind would
/// bring the forgotten memories back when it is replayed.
pub fn forget_drops_queued(forgotten: &Scope, partition: &str, queued: &Scope) -> bool {
    queued.partition().ok().as_deref() == Some(partition)
        && (forgotten.agent_id.is_none() || queued.agent_id == forgotten.agent_id)
        && (forgotten.session_id.is_none() || queued.session_id == forgotten.session_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memloop_core::ErrorClass;

    fn record(now: i64) -> MemoryRecord {
        let m = NewMemory::text("lives in Lisbon");
        NewRecord::build(&Scope::user("alice"), m, "h".into(), now).record
    }

    #[test]
    fn only_a_current_memory_changes() {
        let now = 1_000;
        let rec = record(now);
        for c in [Change::Update, Change::Delete, Change::Supersede] {
            assert!(check_current(&rec, c, now).is_ok());
            let mut expired = rec.clone();
            expired.expires_at = Some(now);
            let e = check_current(&expired, c, now).unwrap_err();
            assert_eq!(e.class(), ErrorClass::InvalidInput);
            assert!(e.to_string().contains("expired"), "{e}");
            let mut deleted = rec.clone();
            mark_deleted(&mut deleted, now);
            let e = check_current(&deleted, c, now).unwrap_err();
            assert!(e.to_string().contains("deleted or superseded"), "{e}");
        }
    }

    #[test]
    fn a_supersession_ends_between_the_old_start_and_now() {
        let mut old = record(100);
        assert_eq!(supersession_end(&old, None, 500), 500);
        assert_eq!(supersession_end(&old, Some(300), 500), 300);
        assert_eq!(supersession_end(&old, Some(900), 500), 500);
        assert_eq!(supersession_end(&old, Some(50), 500), 101);
        old.valid_from = 500;
        assert_eq!(supersession_end(&old, Some(50), 500), 500);
    }

    #[test]
    fn an_expired_or_other_scope_memory_is_no_duplicate() {
        let rec = record(0);
        assert!(is_duplicate(&rec, &Scope::user("alice"), 10));
        assert!(!is_duplicate(&rec, &Scope::user("bob"), 10));
        let mut expired = rec.clone();
        expired.expires_at = Some(10);
        assert!(is_duplicate(&expired, &Scope::user("alice"), 9));
        assert!(!is_duplicate(&expired, &Scope::user("alice"), 10));
    }

    #[test]
    fn a_forget_drops_the_queued_writes_it_covers() {
        let alice = Scope::user("alice");
        let p = alice.partition().unwrap();
        let agent = alice.clone().with_agent("x");
        assert!(forget_drops_queued(&alice, &p, &agent));
        assert!(forget_drops_queued(&agent, &p, &agent));
        assert!(!forget_drops_queued(&agent, &p, &alice));
        assert!(!forget_drops_queued(
            &agent,
            &p,
            &alice.clone().with_agent("y")
        ));
        let bob = Scope::user("bob");
        assert!(!forget_drops_queued(&alice, &p, &bob));
    }

    #[test]
    fn an_update_applies_what_it_names() {
        let mut rec = record(0);
        let change = MemoryUpdate {
            text: Some(("lives in Porto".into(), vec![])),
            importance: Some(3.0),
            ..Default::default()
        };
        let old = apply_update(&mut rec, &change, 7);
        assert_eq!(old, "lives in Lisbon");
        assert_eq!(rec.text, "lives in Porto");
        assert_eq!(rec.content_hash, content_hash("lives in Porto"));
        assert_eq!(rec.importance, 1.0);
        assert_eq!(rec.updated_at, 7);
        assert!(rec.metadata.is_object());
    }
}
