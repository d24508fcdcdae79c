//! When a partition's rows with a TTL expire, for the in-memory indexes
//! of either backend.

use std::collections::{BTreeSet, HashMap};

/// When the partition's rows with a TTL expire. An expired row stays in
/// the indexes until gc deletes it, but a search admits none of them
/// among its candidates; while none has expired (the first in time order
/// is still ahead) a search pays nothing for this.
#[derive(Default)]
pub struct Expiry {
    by_row: HashMap<i64, i64>,
    by_time: BTreeSet<(i64, i64)>,
}

impl Expiry {
    pub fn set(&mut self, row: i64, expires_at: Option<i64>) {
        self.remove(row);
        if let Some(t) = expires_at {
            self.by_row.insert(row, t);
            self.by_time.insert((t, row));
        }
    }

    pub fn remove(&mut self, row: i64) {
        if let Some(t) = self.by_row.remove(&row) {
            self.by_time.remove(&(t, row));
        }
    }

    /// Whether any row has expired at `now`.
    pub fn any_expired(&self, now: i64) -> bool {
        self.by_time.first().is_some_and(|(t, _)| *t <= now)
    }

    /// When `row` expires, if it has a TTL.
    pub fn get(&self, row: i64) -> Option<i64> {
        self.by_row.get(&row).copied()
    }

    pub fn is_expired(&self, row: i64, now: i64) -> bool {
        self.by_row.get(&row).is_some_and(|t| *t <= now)
    }
}
