//! Each row's `valid_from`, remembered once read. A search whose query
//! names a time ranks every candidate (a hundred or more) by when it
//! became true, before the cut; reading that from SQLite was a B-tree
//! descent per candidate, about 7% of a served search (docs/benchmarks.md).
//! A row's `valid_from` never changes (a correction writes a new row, and
//! AUTOINCREMENT never reuses a row number), so a remembered value stays
//! true whatever any process writes; a deleted row's value is never asked
//! for again (the indexes no longer give it). Bounded: past `MAX_ROWS` the
//! map starts again empty.

use std::collections::HashMap;
use std::sync::RwLock;

/// About 32 MB at most.
const MAX_ROWS: usize = 1 << 20;

#[derive(Default)]
pub(crate) struct ValidFromCache {
    rows: RwLock<foldhash::HashMap<i64, i64>>,
}

impl ValidFromCache {
    /// The remembered values of `rows`, and the rows not remembered.
    pub(crate) fn get(&self, rows: &[i64]) -> (HashMap<i64, i64>, Vec<i64>) {
        let map = self.rows.read().unwrap_or_else(|p| p.into_inner());
        let mut found = HashMap::with_capacity(rows.len());
        let mut missing = Vec::new();
        for &row in rows {
            match map.get(&row) {
                Some(&t) => {
                    found.insert(row, t);
                }
                None => missing.push(row),
            }
        }
        (found, missing)
    }

    /// Remembers values read from the store.
    pub(crate) fn remember(&self, read: &HashMap<i64, i64>) {
        if read.is_empty() {
            return;
        }
        let mut map = self.rows.write().unwrap_or_else(|p| p.into_inner());
        if map.len() + read.len() > MAX_ROWS {
            map.clear();
        }
        map.extend(read.iter().map(|(&row, &t)| (row, t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_what_was_read_and_names_what_was_not() {
        let cache = ValidFromCache::default();
        let (found, missing) = cache.get(&[1, 2, 3]);
        assert!(found.is_empty());
        assert_eq!(missing, vec![1, 2, 3]);
        cache.remember(&HashMap::from([(1, 10), (3, 30)]));
        let (found, missing) = cache.get(&[1, 2, 3]);
        assert_eq!(found, HashMap::from([(1, 10), (3, 30)]));
        assert_eq!(missing, vec![2]);
    }
}
