//! What a read by id answers, the same for every backend: a current
//! memory; a deleted, superseded or expired one only when asked for. An
//! expired memory is not current from the moment its TTL passes, so it
//! reads as a deleted one until gc deletes its row (then it is unknown).

use memloop_core::{Error, MemoryRecord, Result};

/// Which memories a read by id answers with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lookup {
    /// Only a current memory; a deleted, superseded or expired one is not found.
    #[default]
    Current,
    /// Also a deleted, superseded or expired one (until gc deletes it).
    IncludeDeleted,
}

impl Lookup {
    /// From a front end's `include_deleted` flag.
    pub fn include_deleted(yes: bool) -> Lookup {
        if yes {
            Lookup::IncludeDeleted
        } else {
            Lookup::Current
        }
    }

    /// `record` if this lookup admits it at `now`, else the `NotCurrent`
    /// error that says why (class not found) and how to read it anyway.
    pub fn admit(self, record: MemoryRecord, now: i64) -> Result<MemoryRecord> {
        let status = RecordStatus::at(&record, now);
        if self == Lookup::IncludeDeleted || status == RecordStatus::Current {
            return Ok(record);
        }
        Err(Error::NotCurrent {
            superseded_by: match status {
                RecordStatus::Superseded => record.superseded_by,
                _ => None,
            },
            expired_at: match status {
                RecordStatus::Expired => record.expires_at,
                _ => None,
            },
            id: record.id,
        })
    }
}

/// Where a memory stands: what a read by id shows beside the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordStatus {
    Current,
    /// Ended by a delete (its `superseded_by` is null).
    Deleted,
    /// Replaced by the memory its `superseded_by` names.
    Superseded,
    /// Its TTL passed (`expires_at`); gc deletes it.
    Expired,
}

impl RecordStatus {
    /// A memory with `valid_until` set was superseded when it names its
    /// successor, else deleted (a delete clears the mark an episode may
    /// carry as evidence of a replaced claim); one still valid whose
    /// `expires_at` is not after `now` has expired.
    pub fn at(record: &MemoryRecord, now: i64) -> RecordStatus {
        match (record.valid_until, &record.superseded_by) {
            (Some(_), Some(_)) => RecordStatus::Superseded,
            (Some(_), None) => RecordStatus::Deleted,
            (None, _) if record.is_expired(now) => RecordStatus::Expired,
            (None, _) => RecordStatus::Current,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memloop_core::{Kind, Provenance, Scope};

    fn record(valid_until: Option<i64>, by: Option<&str>, expires_at: Option<i64>) -> MemoryRecord {
        MemoryRecord {
            id: "m1".into(),
            text: "a note".into(),
            context: None,
            kind: Kind::Fact,
            scope: Scope::user("u"),
            metadata: serde_json::Value::Null,
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_until,
            expires_at,
            importance: 0.5,
            access_count: 0,
            last_accessed_at: None,
            provenance: Provenance::default(),
            content_hash: String::new(),
            superseded_by: by.map(str::to_string),
        }
    }

    #[test]
    fn an_expired_memory_reads_as_not_current_unless_included() {
        let r = record(None, None, Some(100));
        assert_eq!(RecordStatus::at(&r, 99), RecordStatus::Current);
        assert_eq!(RecordStatus::at(&r, 100), RecordStatus::Expired);
        assert!(Lookup::Current.admit(r.clone(), 99).is_ok());
        match Lookup::Current.admit(r.clone(), 100) {
            Err(Error::NotCurrent {
                id,
                superseded_by: None,
                expired_at: Some(100),
            }) => assert_eq!(id, "m1"),
            other => panic!("expected NotCurrent, expired: {other:?}"),
        }
        assert!(Lookup::IncludeDeleted.admit(r, 100).is_ok());
    }

    #[test]
    fn deleted_and_superseded_come_before_expired() {
        let deleted = record(Some(50), None, Some(10));
        assert_eq!(RecordStatus::at(&deleted, 100), RecordStatus::Deleted);
        let superseded = record(Some(50), Some("m2"), Some(10));
        assert_eq!(RecordStatus::at(&superseded, 100), RecordStatus::Superseded);
        match Lookup::Current.admit(superseded, 100) {
            Err(Error::NotCurrent {
                superseded_by: Some(s),
                expired_at: None,
                ..
            }) => assert_eq!(s, "m2"),
            other => panic!("expected NotCurrent, superseded: {other:?}"),
        }
    }
}
