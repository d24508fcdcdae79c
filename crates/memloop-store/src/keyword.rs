//! An in-memory BM25 index of one partition, derived from SQLite on load.
//! Per-partition statistics mean one user's words never weigh on another's
//! ranking, and a query reads only this partition's postings.

use std::collections::HashMap;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Postings hold dense document slots (u32), not rows, so a query adds
/// scores into a plain array instead of a hash map.
///
/// Removal leaves the document's postings in place and marks its slot
/// dead: cutting each posting list at once made removing many documents
/// (gc deleting expired memories) quadratic in a large partition. Search
/// skips dead slots and counts each term's live documents exactly, so
/// scores are as if the postings were gone; once dead postings outnumber
/// live ones, one pass over the lists drops them and frees their slots.
#[derive(Default)]
pub struct KeywordIndex {
    term_ids: HashMap<String, u32>,
    /// Per term: (slot, weighted term frequency), dead slots included.
    postings: Vec<Vec<(u32, f32)>>,
    /// Per term: how many of its postings are of dead slots.
    dead_per_term: Vec<u32>,
    /// Row of each slot (None: free or dead).
    slot_rows: Vec<Option<i64>>,
    /// Per slot: its distinct term ids (for removal) and its weighted length.
    slot_docs: Vec<(Vec<u32>, f32)>,
    /// Slots whose postings are gone: free for new documents.
    free_slots: Vec<u32>,
    /// Slots removed whose postings remain (freed by `compact`).
    dead_slots: Vec<u32>,
    dead_postings: usize,
    live_postings: usize,
    /// Per slot: the lower-cased words of who said it (episodes), for the speaker match.
    slot_speakers: Vec<Vec<String>>,
    slots: HashMap<i64, u32>,
    total_len: f64,
}

impl KeywordIndex {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Indexes a document: its own terms count 1 each, its context terms
    /// `context_weight` each (a BM25F-style field weight).
    #[cfg(test)]
    pub fn insert(&mut self, row: i64, terms: &[String], context: &[String], context_weight: f32) {
        self.insert_with_speaker(row, terms, context, context_weight, None);
    }

    /// As `insert`, recording who said the text.
    pub fn insert_with_speaker(
        &mut self,
        row: i64,
        terms: &[String],
        context: &[String],
        context_weight: f32,
        speaker: Option<&str>,
    ) {
        self.remove(row);
        let weighted = terms
            .iter()
            .map(|t| (t, 1.0))
            .chain(context.iter().map(|t| (t, context_weight)));
        let mut len = 0.0f32;
        // (term id, weight) per occurrence, then summed per term by a sort:
        // cheaper than a map for a document's few dozen terms.
        let mut occurrences: Vec<(u32, f32)> = Vec::with_capacity(terms.len() + context.len());
        for (t, w) in weighted.filter(|(_, w)| *w > 0.0) {
            let id = match self.term_ids.get(t.as_str()) {
                Some(&id) => id,
                None => {
                    let id = self.term_ids.len() as u32;
                    self.term_ids.insert(t.clone(), id);
                    self.postings.push(Vec::new());
                    self.dead_per_term.push(0);
                    id
                }
            };
            occurrences.push((id, w));
            len += w;
        }
        occurrences.sort_unstable_by_key(|o| o.0);
        let mut counts: Vec<(u32, f32)> = Vec::with_capacity(occurrences.len());
        for (id, w) in occurrences {
            match counts.last_mut() {
                Some(last) if last.0 == id => last.1 += w,
                _ => counts.push((id, w)),
            }
        }
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.slot_rows.push(None);
                self.slot_docs.push((Vec::new(), 0.0));
                self.slot_speakers.push(Vec::new());
                (self.slot_rows.len() - 1) as u32
            }
        };
        for &(id, tf) in &counts {
            self.postings[id as usize].push((slot, tf));
        }
        self.live_postings += counts.len();
        self.total_len += f64::from(len);
        self.slot_rows[slot as usize] = Some(row);
        self.slot_docs[slot as usize] = (counts.iter().map(|c| c.0).collect(), len);
        self.slot_speakers[slot as usize] = speaker
            .map(|s| {
                s.to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.chars().count() >= 3)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        self.slots.insert(row, slot);
    }

    pub fn remove(&mut self, row: i64) {
        let Some(slot) = self.slots.remove(&row) else {
            return;
        };
        let (ids, len) = std::mem::take(&mut self.slot_docs[slot as usize]);
        for &id in &ids {
            if let Some(d) = self.dead_per_term.get_mut(id as usize) {
                *d += 1;
            }
        }
        self.dead_postings += ids.len();
        self.live_postings = self.live_postings.saturating_sub(ids.len());
        self.total_len = (self.total_len - f64::from(len)).max(0.0);
        self.slot_rows[slot as usize] = None;
        self.slot_speakers[slot as usize].clear();
        self.dead_slots.push(slot);
        if self.dead_postings > self.live_postings.max(1024) {
            self.compact();
        }
    }

    /// Drops the postings of dead slots and frees the slots: one pass over
    /// every list, paid for by the removals since the last one.
    fn compact(&mut self) {
        let rows = &self.slot_rows;
        for list in &mut self.postings {
            list.retain(|(s, _)| rows[*s as usize].is_some());
        }
        self.dead_per_term.iter_mut().for_each(|d| *d = 0);
        self.free_slots.append(&mut self.dead_slots);
        self.dead_postings = 0;
    }

    /// True when one of `words` (lower case) names who said this row's text.
    pub fn spoken_by_any(&self, row: i64, words: &std::collections::HashSet<String>) -> bool {
        self.slots.get(&row).is_some_and(|&s| {
            self.slot_speakers[s as usize]
                .iter()
                .any(|w| words.contains(w))
        })
    }

    /// The `limit` best rows for the query terms by BM25, best first.
    /// `allow` restricts the candidates (filters, agent or session narrowing).
    pub fn search(
        &self,
        terms: &[String],
        limit: usize,
        allow: Option<&dyn Fn(i64) -> bool>,
    ) -> Vec<(i64, f32)> {
        let n = self.slots.len() as f32;
        if n == 0.0 || limit == 0 {
            return Vec::new();
        }
        let avg_len = (self.total_len as f32 / n).max(1.0);
        let mut unique: Vec<&String> = terms.iter().collect();
        unique.sort();
        unique.dedup();
        let mut scores = vec![0.0f32; self.slot_rows.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in unique {
            let Some((list, dead)) = self.term_ids.get(term).and_then(|&id| {
                Some((
                    self.postings.get(id as usize)?,
                    *self.dead_per_term.get(id as usize)?,
                ))
            }) else {
                continue;
            };
            let df = list.len().saturating_sub(dead as usize) as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(slot, tf) in list {
                if dead > 0 && self.slot_rows[slot as usize].is_none() {
                    continue;
                }
                let len = self.slot_docs[slot as usize].1;
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len));
                let cell = &mut scores[slot as usize];
                if *cell == 0.0 {
                    touched.push(slot);
                }
                *cell += s;
            }
        }
        let hits: Vec<(i64, f32)> = touched
            .into_iter()
            .filter_map(|slot| {
                self.slot_rows[slot as usize].map(|row| (row, scores[slot as usize]))
            })
            .filter(|(row, _)| allow.is_none_or(|f| f(*row)))
            .collect();
        top_k(hits, limit)
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
        idx.insert(1, &terms("tea morning"), &[], 0.0);
        idx.insert(2, &terms("coffee morning"), &[], 0.0);
        idx.insert(3, &terms("coffee evening"), &[], 0.0);
        let hits = idx.search(&terms("coffee morning"), 10, None);
        assert_eq!(hits[0].0, 2);
        idx.remove(2);
        let hits = idx.search(&terms("coffee"), 10, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3]);
        // Re-inserting a row replaces its text.
        idx.insert(3, &terms("tea"), &[], 0.0);
        assert!(idx.search(&terms("coffee"), 10, None).is_empty());
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn context_terms_weigh_less_than_own_terms() {
        let mut idx = KeywordIndex::default();
        idx.insert(1, &terms("paris trip"), &terms("museum"), 0.5);
        idx.insert(2, &terms("museum visit"), &[], 0.5);
        idx.insert(3, &terms("unrelated words"), &[], 0.5);
        let hits = idx.search(&terms("museum"), 10, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 1]);
        // A zero weight leaves the context out.
        idx.insert(1, &terms("paris trip"), &terms("museum"), 0.0);
        assert_eq!(idx.search(&terms("museum"), 10, None).len(), 1);
    }

    /// Removing documents (lazily, then compacted) scores every query as
    /// an index built from the remaining ones alone.
    #[test]
    fn removal_scores_as_if_never_indexed() {
        let words = [
            "tea", "coffee", "paris", "berlin", "nurse", "museum", "rain",
        ];
        let doc = |i: usize| -> Vec<String> {
            (0..3)
                .map(|k| words[(i * 7 + k * (i % 5 + 1)) % words.len()].to_string())
                .collect()
        };
        let mut a = KeywordIndex::default();
        for i in 0..3000 {
            a.insert(i as i64, &doc(i), &[], 0.0);
        }
        // Removes enough to compact at least once, then refills freed slots.
        for i in (0..3000).filter(|i| i % 3 != 0) {
            a.remove(i as i64);
        }
        for i in 3000..3100 {
            a.insert(i as i64, &doc(i), &[], 0.0);
        }
        let mut b = KeywordIndex::default();
        for i in (0..3100).filter(|i| *i >= 3000 || i % 3 == 0) {
            b.insert(i as i64, &doc(i), &[], 0.0);
        }
        assert_eq!(a.len(), b.len());
        for q in [
            &["tea"][..],
            &["paris", "nurse"],
            &["rain", "coffee", "museum"],
        ] {
            let q: Vec<String> = q.iter().map(|w| w.to_string()).collect();
            let (ha, hb) = (a.search(&q, 50, None), b.search(&q, 50, None));
            assert_eq!(ha.len(), hb.len());
            for (x, y) in ha.iter().zip(&hb) {
                assert!((x.1 - y.1).abs() < 1e-4, "{q:?}: {x:?} vs {y:?}");
            }
        }
        // A removed document is never found, compacted or not.
        a.remove(3);
        assert!(a
            .search(&doc(3), 5000, None)
            .iter()
            .all(|h| h.0 != 3 && h.0 % 3 == 0 || h.0 >= 3000));
    }

    #[test]
    fn allow_restricts_candidates() {
        let mut idx = KeywordIndex::default();
        idx.insert(1, &terms("paris"), &[], 0.0);
        idx.insert(2, &terms("paris"), &[], 0.0);
        let only_two = |r: i64| r == 2;
        let hits = idx.search(&terms("paris"), 10, Some(&only_two));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 2);
    }
}
