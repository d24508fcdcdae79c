//! An in-memory BM25 index of one partition, derived from SQLite on load.
//! Per-partition statistics mean one user's words never weigh on another's
//! ranking, and a query reads only this partition's postings.

use std::collections::HashMap;

const K1: f32 = 1.2;
const B: f32 = 0.75;

#[derive(Default)]
pub struct KeywordIndex {
    term_ids: HashMap<String, u32>,
    /// Per term: (row, term frequency).
    postings: Vec<Vec<(i64, u32)>>,
    /// Per row: its distinct term ids (for removal) and its length in terms.
    docs: HashMap<i64, (Vec<u32>, u32)>,
    total_len: u64,
}

impl KeywordIndex {
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn insert(&mut self, row: i64, terms: &[String]) {
        self.remove(row);
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for t in terms {
            let next = self.term_ids.len() as u32;
            let id = *self.term_ids.entry(t.clone()).or_insert(next);
            if id as usize == self.postings.len() {
                self.postings.push(Vec::new());
            }
            *counts.entry(id).or_default() += 1;
        }
        let ids: Vec<u32> = counts.keys().copied().collect();
        for (&id, &tf) in &counts {
            self.postings[id as usize].push((row, tf));
        }
        self.total_len += terms.len() as u64;
        self.docs.insert(row, (ids, terms.len() as u32));
    }

    pub fn remove(&mut self, row: i64) {
        if let Some((ids, len)) = self.docs.remove(&row) {
            for id in ids {
                if let Some(list) = self.postings.get_mut(id as usize) {
                    list.retain(|(r, _)| *r != row);
                }
            }
            self.total_len -= u64::from(len);
        }
    }

    /// The `limit` best rows for the query terms by BM25, best first.
    /// `allow` restricts the candidates (filters, agent or session narrowing).
    pub fn search(
        &self,
        terms: &[String],
        limit: usize,
        allow: Option<&dyn Fn(i64) -> bool>,
    ) -> Vec<(i64, f32)> {
        let n = self.docs.len() as f32;
        if n == 0.0 || limit == 0 {
            return Vec::new();
        }
        let avg_len = self.total_len as f32 / n;
        let mut unique: Vec<&String> = terms.iter().collect();
        unique.sort();
        unique.dedup();
        let mut scores: HashMap<i64, f32> = HashMap::new();
        for term in unique {
            let Some(list) = self
                .term_ids
                .get(term)
                .and_then(|&id| self.postings.get(id as usize))
            else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(row, tf) in list {
                if allow.is_some_and(|f| !f(row)) {
                    continue;
                }
                let len = self.docs.get(&row).map_or(avg_len, |d| d.1 as f32);
                let tf = tf as f32;
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)));
                *scores.entry(row).or_default() += s;
            }
        }
        top_k(scores.into_iter().collect(), limit)
    }
}

/// Sorts by score descending (ties by row, for determinism) and keeps `k`.
pub fn top_k(mut hits: Vec<(i64, f32)>, k: usize) -> Vec<(i64, f32)> {
    let cmp = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if hits.len() > k {
        hits.select_nth_unstable_by(k, cmp);
        hits.truncate(k);
    }
    hits.sort_by(cmp);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn rare_terms_weigh_more_and_removal_works() {
        let mut idx = KeywordIndex::default();
        idx.insert(1, &terms("tea morning"));
        idx.insert(2, &terms("coffee morning"));
        idx.insert(3, &terms("coffee evening"));
        let hits = idx.search(&terms("coffee morning"), 10, None);
        assert_eq!(hits[0].0, 2);
        idx.remove(2);
        let hits = idx.search(&terms("coffee"), 10, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3]);
        // Re-inserting a row replaces its text.
        idx.insert(3, &terms("tea"));
        assert!(idx.search(&terms("coffee"), 10, None).is_empty());
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn allow_restricts_candidates() {
        let mut idx = KeywordIndex::default();
        idx.insert(1, &terms("paris"));
        idx.insert(2, &terms("paris"));
        let only_two = |r: i64| r == 2;
        let hits = idx.search(&terms("paris"), 10, Some(&only_two));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 2);
    }
}
