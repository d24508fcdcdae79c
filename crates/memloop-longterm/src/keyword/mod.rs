//! An in-memory BM25 index of one partition, derived from the store on
//! load (the embedded store's rows, PostgreSQL's postings) and kept
//! current by each backend's change log. Per-partition statistics mean one
//! user's words never weigh on another's ranking, and a query reads only
//! this partition's postings.

mod maxscore;

use std::ops::Range;
use std::sync::Arc;

use foldhash::HashMap as FastMap;

/// Which rows a search may return (None: all): a row refused takes no
/// place in the top k. Shared by the threads of one search.
pub type Allow<'a> = Option<&'a (dyn Fn(i64) -> bool + Sync)>;

/// How the helper thread of a shared search reaches the index and the
/// row filter by itself (`crate::par`): it may run after the search has
/// ended, so it cannot borrow them from the search.
pub trait Reach: Send + Sync + 'static {
    /// Runs `f` with the index and the search's row filter, under a lock
    /// taken without waiting (a writer may be queued behind the search's
    /// own hold, and the search does not wait for the helper), or does
    /// not run it.
    fn with(&self, f: &mut dyn FnMut(&KeywordIndex, Allow<'_>));
}

/// An index behind a lock of its own, searched without a row filter
/// (`memloop bench --keyword-docs`).
impl Reach for std::sync::RwLock<KeywordIndex> {
    fn with(&self, f: &mut dyn FnMut(&KeywordIndex, Allow<'_>)) {
        if let Ok(idx) = self.try_read() {
            f(&idx, None);
        }
    }
}

/// Slots from which a search runs on two threads. Below it a search
/// takes well under a millisecond, and waking the helper and setting up
/// each range would be a large part of it. (Small in tests, so their
/// partitions are split.)
const PARALLEL_SLOTS: usize = if cfg!(test) { 64 } else { 200_000 };
/// The slot ranges such a search is cut into, taken by whichever thread
/// is free: enough that the one that ran the vector search first does
/// fewer of them, few enough that each range's setup stays small.
const RANGES: u32 = 16;

const K1: f32 = 1.2;
/// The least a matching term adds to a score, so every match scores above
/// 0 even for a term in every document of a huge partition or a tiny
/// context weight (the cut starts at 0, and a match never ties with it).
const TINY: f32 = f32::MIN_POSITIVE;
const B: f32 = 0.75;

/// The most a memory's context weighs in all, in words of its own text.
/// A turn's context is its neighbours, whole: beside a long reply every
/// neighbour carried the reply's thousand words at half weight, and on
/// long user–assistant conversations BM25 then ranked those neighbours for
/// the reply's facts (docs/retrieval.md, "Keyword context bounded by
/// weight"). Every context word is kept, each at less weight, rather than
/// cut: a short turn holding a neighbour's first words outranked the
/// neighbour itself.
pub const CONTEXT_WORDS: f32 = 64.0;

/// The weight of each of a memory's `words` context terms: `context_weight`,
/// lowered so that the context weighs at most `CONTEXT_WORDS` in all.
pub fn bounded_context_weight(context_weight: f32, words: usize) -> f32 {
    if words == 0 {
        return context_weight;
    }
    context_weight.min(CONTEXT_WORDS / words as f32)
}

/// Postings hold dense document slots (u32), not rows, so a document's
/// length and row are read from plain arrays.
///
/// A new document always takes the next slot, so every posting list is in
/// slot order: what lets a search walk the lists side by side and skip
/// ahead in one (`maxscore.rs`).
///
/// Removal leaves the document's postings in place and marks its slot
/// dead: cutting each posting list at once made removing many documents
/// (gc deleting expired memories) quadratic in a large partition. Search
/// skips dead slots and counts each term's live documents exactly, so
/// scores are as if the postings were gone; once dead postings outnumber
/// live ones, one pass over the lists drops them and numbers the live
/// slots again, in their order.
#[derive(Default)]
pub struct KeywordIndex {
    /// foldhash, not the standard hasher (SipHash): a term is looked up
    /// for every word indexed or queried, and a small partition's load
    /// spent about a tenth of its time hashing (docs/benchmarks.md).
    term_ids: FastMap<String, u32>,
    /// Per term: (slot, weighted term frequency), dead slots included.
    postings: Vec<Vec<(u32, f32)>>,
    /// Per term: how many of its postings are of dead slots.
    dead_per_term: Vec<u32>,
    /// Per term: the largest weighted frequency and the shortest weighted
    /// length of the documents it has been in since the last compaction.
    /// Together they bound what the term can add to any score (see `search`);
    /// a removal never tightens them, so they stay bounds.
    term_bounds: Vec<(f32, f32)>,
    /// Row of each slot (None: removed, until the next compaction).
    slot_rows: Vec<Option<i64>>,
    /// Per slot: its distinct terms with their weighted frequencies, sorted
    /// by term id (for removal and export).
    slot_terms: Vec<Vec<(u32, f32)>>,
    /// Per slot: its weighted length. Apart from `slot_terms` so that the
    /// scoring loop reads 4 bytes per posting, not a 32-byte record.
    slot_len: Vec<f32>,
    dead_postings: usize,
    live_postings: usize,
    /// Per slot: the lower-cased words of who said it (episodes), for the speaker match.
    slot_speakers: Vec<Vec<String>>,
    slots: FastMap<i64, u32>,
    total_len: f64,
    /// `summed`'s working space, kept between documents.
    scratch: Vec<(u32, f32)>,
}

pub use crate::rank::MAX_SPEAKER_WORDS;

/// One live document as `KeywordIndex::export` gives it.
pub struct SavedDoc<'a> {
    pub row: i64,
    pub terms: Vec<(u32, f32)>,
    pub len: f32,
    pub speaker: &'a [String],
}

/// A document as a saved index gives it back: row, terms with their
/// frequencies (indices into the saved dictionary), weighted length, speaker words.
pub type RestoredDoc = (i64, Vec<(u32, f32)>, f32, Vec<String>);

/// A query term as scored: its id, `idf × (k1 + 1)`, and the most it can
/// add to one document's score.
#[derive(Clone)]
pub(crate) struct QueryTerm {
    id: u32,
    weight: f32,
    bound: f32,
}

impl KeywordIndex {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Indexes a document: its own terms count 1 each, its context terms
    /// `context_weight` each (a BM25F-style field weight), bounded by
    /// `bounded_context_weight`.
    #[cfg(test)]
    pub fn insert(&mut self, row: i64, terms: &[String], context: &[String], context_weight: f32) {
        let (terms, context) = (terms.iter(), context.iter());
        self.insert_terms(
            row,
            terms.map(String::as_str),
            context.map(String::as_str),
            context_weight,
            None,
        );
    }

    /// As `insert`, recording who said the text, for terms as they come
    /// (a partition's load reads them from storage one by one; collecting
    /// them first cost two allocations a row).
    pub fn insert_terms<'t>(
        &mut self,
        row: i64,
        terms: impl Iterator<Item = &'t str>,
        context: impl Iterator<Item = &'t str> + Clone,
        context_weight: f32,
        speaker: Option<&str>,
    ) {
        let context_weight = bounded_context_weight(context_weight, context.clone().count());
        let weighted = terms
            .map(|t| (t, 1.0))
            .chain(context.map(|t| (t, context_weight)));
        self.remove(row);
        let (counts, len) = self.summed(weighted);
        self.place(row, counts, len, speaker);
    }

    /// Indexes a document as a backend stored it: each term's weighted
    /// frequency and the document's weighted length (PostgreSQL's
    /// postings), so the scores are those of the stored statistics.
    pub fn insert_counted<'t>(
        &mut self,
        row: i64,
        counts: impl Iterator<Item = (&'t str, f32)>,
        len: f32,
        speaker: Option<&str>,
    ) {
        self.remove(row);
        let (counts, _) = self.summed(counts);
        self.place(row, counts, len, speaker);
    }

    /// Term ids with their weights summed, sorted by id, and the sum of
    /// every weight; new terms get ids.
    fn summed<'t>(
        &mut self,
        weighted: impl Iterator<Item = (&'t str, f32)>,
    ) -> (Vec<(u32, f32)>, f32) {
        let mut len = 0.0f32;
        // (term id, weight) per occurrence, then summed per term by a sort:
        // cheaper than a map for a document's few dozen terms.
        // Reused: terms read one by one from storage give no size hint,
        // and growing a new vector for each document was a seventh of a
        // small partition's load.
        let mut occurrences = std::mem::take(&mut self.scratch);
        occurrences.clear();
        for (t, w) in weighted.filter(|(_, w)| *w > 0.0) {
            let id = match self.term_ids.get(t) {
                Some(&id) => id,
                None => {
                    let id = self.term_ids.len() as u32;
                    self.term_ids.insert(t.to_string(), id);
                    self.postings.push(Vec::new());
                    self.dead_per_term.push(0);
                    self.term_bounds.push((0.0, f32::INFINITY));
                    id
                }
            };
            occurrences.push((id, w));
            len += w;
        }
        occurrences.sort_unstable_by_key(|o| o.0);
        let mut counts: Vec<(u32, f32)> = Vec::with_capacity(occurrences.len());
        for &(id, w) in &occurrences {
            match counts.last_mut() {
                Some(last) if last.0 == id => last.1 += w,
                _ => counts.push((id, w)),
            }
        }
        self.scratch = occurrences;
        (counts, len)
    }

    /// Puts a document (not indexed now) in a slot.
    fn place(&mut self, row: i64, counts: Vec<(u32, f32)>, len: f32, speaker: Option<&str>) {
        let slot = self.slot_rows.len() as u32;
        self.slot_rows.push(None);
        self.slot_terms.push(Vec::new());
        self.slot_len.push(0.0);
        self.slot_speakers.push(Vec::new());
        for &(id, tf) in &counts {
            self.postings[id as usize].push((slot, tf));
            widen(&mut self.term_bounds[id as usize], tf, len);
        }
        self.live_postings += counts.len();
        self.total_len += f64::from(len);
        self.slot_rows[slot as usize] = Some(row);
        self.slot_terms[slot as usize] = counts;
        self.slot_len[slot as usize] = len;
        self.slot_speakers[slot as usize] =
            speaker.map(crate::rank::speaker_words).unwrap_or_default();
        self.slots.insert(row, slot);
    }

    pub fn remove(&mut self, row: i64) {
        let Some(slot) = self.slots.remove(&row) else {
            return;
        };
        let terms = std::mem::take(&mut self.slot_terms[slot as usize]);
        for &(id, _) in &terms {
            if let Some(d) = self.dead_per_term.get_mut(id as usize) {
                *d += 1;
            }
        }
        let len = std::mem::take(&mut self.slot_len[slot as usize]);
        self.dead_postings += terms.len();
        self.live_postings = self.live_postings.saturating_sub(terms.len());
        self.total_len = (self.total_len - f64::from(len)).max(0.0);
        self.slot_rows[slot as usize] = None;
        self.slot_speakers[slot as usize].clear();
        if self.dead_postings > self.live_postings.max(1024) {
            self.compact();
        }
    }

    /// Drops the postings of dead slots, numbers the live slots again in
    /// their order (so the lists stay in slot order) and recomputes each
    /// term's bounds from what is left: one pass over every list, paid for
    /// by the removals since the last one.
    fn compact(&mut self) {
        let mut renumbered = vec![u32::MAX; self.slot_rows.len()];
        let mut live = 0usize;
        for (old, new) in renumbered.iter_mut().enumerate() {
            let Some(row) = self.slot_rows[old] else {
                continue;
            };
            *new = live as u32;
            self.slot_rows[live] = Some(row);
            self.slot_terms.swap(live, old);
            self.slot_len[live] = self.slot_len[old];
            self.slot_speakers.swap(live, old);
            self.slots.insert(row, live as u32);
            live += 1;
        }
        self.slot_rows.truncate(live);
        self.slot_terms.truncate(live);
        self.slot_len.truncate(live);
        self.slot_speakers.truncate(live);
        let lens = &self.slot_len;
        for (list, bound) in self.postings.iter_mut().zip(&mut self.term_bounds) {
            list.retain_mut(|(s, _)| {
                *s = renumbered[*s as usize];
                *s != u32::MAX
            });
            *bound = (0.0, f32::INFINITY);
            for &(s, tf) in list.iter() {
                widen(bound, tf, lens[s as usize]);
            }
        }
        self.dead_per_term.iter_mut().for_each(|d| *d = 0);
        self.dead_postings = 0;
    }

    /// Every live document as (row, its terms with frequencies, weighted
    /// length, speaker words), terms as indices into the returned
    /// dictionary, which holds only the terms some live document has: what
    /// a saved index needs, and nothing of removed documents.
    pub fn export(&self) -> (Vec<&str>, Vec<SavedDoc<'_>>) {
        let mut names: Vec<&str> = vec![""; self.term_ids.len()];
        for (name, &id) in &self.term_ids {
            if let Some(slot) = names.get_mut(id as usize) {
                *slot = name;
            }
        }
        let mut remap: Vec<u32> = vec![u32::MAX; names.len()];
        let mut dictionary: Vec<&str> = Vec::new();
        let mut docs = Vec::with_capacity(self.slots.len());
        for (slot, row) in self.slot_rows.iter().enumerate() {
            let Some(row) = *row else { continue };
            let terms = self.slot_terms[slot]
                .iter()
                .map(|&(id, tf)| {
                    let new = &mut remap[id as usize];
                    if *new == u32::MAX {
                        *new = dictionary.len() as u32;
                        dictionary.push(names[id as usize]);
                    }
                    (*new, tf)
                })
                .collect();
            docs.push(SavedDoc {
                row,
                terms,
                len: self.slot_len[slot],
                speaker: &self.slot_speakers[slot],
            });
        }
        (dictionary, docs)
    }

    /// The index `export` described, rebuilt without analysing any text.
    /// A document naming a term the dictionary lacks is refused (a
    /// damaged file): the caller then analyses the texts instead.
    pub fn import(dictionary: Vec<String>, docs: Vec<RestoredDoc>) -> Option<KeywordIndex> {
        let mut idx = KeywordIndex {
            postings: vec![Vec::new(); dictionary.len()],
            dead_per_term: vec![0; dictionary.len()],
            term_bounds: vec![(0.0, f32::INFINITY); dictionary.len()],
            ..KeywordIndex::default()
        };
        for (slot, (row, mut terms, len, speaker)) in docs.into_iter().enumerate() {
            terms.sort_unstable_by_key(|t| t.0);
            for &(id, tf) in &terms {
                idx.postings.get_mut(id as usize)?.push((slot as u32, tf));
                widen(&mut idx.term_bounds[id as usize], tf, len);
            }
            idx.live_postings += terms.len();
            idx.total_len += f64::from(len);
            idx.slot_rows.push(Some(row));
            idx.slot_terms.push(terms);
            idx.slot_len.push(len);
            idx.slot_speakers.push(speaker);
            if idx.slots.insert(row, slot as u32).is_some() {
                return None;
            }
        }
        idx.term_ids = dictionary
            .into_iter()
            .enumerate()
            .map(|(id, name)| (name, id as u32))
            .collect();
        // A name twice would give two terms one id.
        (idx.term_ids.len() == idx.postings.len()).then_some(idx)
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
    ///
    /// Document at a time with MaxScore pruning (`maxscore.rs`); the
    /// result is the exhaustive one, ties included.
    pub fn search(&self, terms: &[String], limit: usize, allow: Allow<'_>) -> Vec<(i64, f32)> {
        self.search_beside(terms, limit, allow, None, || ()).0
    }

    /// As `search`, with `beside` (a hybrid search's vector side) run on
    /// this thread meanwhile. In a large partition, with a core to spare
    /// and `reach` given (how the helper finds this index again), the
    /// walk is cut into slot ranges that the helper thread starts on at
    /// once and this one takes too when `beside` is done
    /// (`crate::par::share`), sharing their cuts (see `maxscore::search`):
    /// so the two searches end about together on two cores, where the
    /// keyword walk in two fixed halves waited for the vector search
    /// before it, at a million memories a third of its own time
    /// (docs/benchmarks.md, "Both indexes on both cores").
    pub fn search_beside<R>(
        &self,
        terms: &[String],
        limit: usize,
        allow: Allow<'_>,
        reach: Option<Arc<dyn Reach>>,
        beside: impl FnOnce() -> R,
    ) -> (Vec<(i64, f32)>, R) {
        let (query, ab) = self.query_terms(terms);
        let slots = self.slot_rows.len() as u32;
        if limit == 0 || query.is_empty() {
            return (Vec::new(), beside());
        }
        let shared = Arc::new(maxscore::SharedCut::new(limit));
        let part = |range| maxscore::search(self, query.clone(), ab, allow, range, &shared);
        let reach =
            reach.filter(|_| slots as usize >= PARALLEL_SLOTS && crate::par::core_to_spare());
        let Some(reach) = reach else {
            let other = beside();
            return (part(0..slots), other);
        };
        let ranges = Arc::new(slot_ranges(slots, RANGES));
        // The helper's share: the same walk over the same ranges, on the
        // index it reaches under its own lock.
        let help = {
            let (ranges, shared, query) = (ranges.clone(), shared.clone(), query.clone());
            move |parts: &crate::par::Parts<Vec<(i64, f32)>>| {
                reach.with(&mut |idx, allow| {
                    parts.help(|i| {
                        let range = ranges.get(i).cloned().unwrap_or(0..0);
                        maxscore::search(idx, query.clone(), ab, allow, range, &shared)
                    })
                })
            }
        };
        let (other, parts) = crate::par::share(beside, ranges.len(), help, |i| {
            part(ranges.get(i).cloned().unwrap_or(0..0))
        });
        (top_k(parts.into_iter().flatten().collect(), limit), other)
    }

    /// The query's distinct terms this partition holds, with their
    /// weights and bounds, and the folded BM25 constants `(a, b)`.
    fn query_terms(&self, terms: &[String]) -> (Vec<QueryTerm>, (f32, f32)) {
        let n = self.slots.len() as f32;
        if n == 0.0 {
            return (Vec::new(), (0.0, 0.0));
        }
        let avg_len = (self.total_len as f32 / n).max(1.0);
        // tf part of BM25: tf / (tf + a + b·len), scaled by `weight`.
        let (a, b) = (K1 * (1.0 - B), K1 * B / avg_len);
        let mut unique: Vec<&String> = terms.iter().collect();
        unique.sort();
        unique.dedup();
        let query: Vec<QueryTerm> = unique
            .into_iter()
            .filter_map(|term| {
                let id = *self.term_ids.get(term)?;
                let live = self
                    .postings
                    .get(id as usize)?
                    .len()
                    .saturating_sub(*self.dead_per_term.get(id as usize)? as usize);
                if live == 0 {
                    return None;
                }
                let df = live as f32;
                let weight = (1.0 + (n - df + 0.5) / (df + 0.5)).ln() * (K1 + 1.0);
                let (max_tf, min_len) = *self.term_bounds.get(id as usize)?;
                // A little over the exact bound, so rounding never puts a
                // score above it.
                let bound = term_score(weight, max_tf, min_len, (a, b)) * 1.001;
                Some(QueryTerm { id, weight, bound })
            })
            .collect();
        (query, (a, b))
    }
}

/// `0..slots` cut into `n` ranges of about the same size.
fn slot_ranges(slots: u32, n: u32) -> Vec<Range<u32>> {
    (0..n)
        .map(|i| {
            let at = |k: u32| (u64::from(slots) * u64::from(k) / u64::from(n)) as u32;
            at(i)..at(i + 1)
        })
        .collect()
}

/// What a term of weight `idf × (k1 + 1)` adds to a document with
/// weighted frequency `tf` and weighted length `len`: BM25's
/// `tf / (tf + a + b·len)` scaled by the weight, where `(a, b)` folds k1,
/// b and the average length. Never exactly 0 (see `TINY`).
fn term_score(weight: f32, tf: f32, len: f32, (a, b): (f32, f32)) -> f32 {
    (weight * tf / (tf + a + b * len)).max(TINY)
}

/// Widens a term's (largest frequency, shortest length) bound to cover one
/// more document.
fn widen(bound: &mut (f32, f32), tf: f32, len: f32) {
    *bound = (bound.0.max(tf), bound.1.min(len));
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
    use std::sync::RwLock;

    /// An index behind a lock and a row filter, as a split search's
    /// helper reaches them.
    struct Filtered(Arc<RwLock<KeywordIndex>>, Option<fn(i64) -> bool>);

    impl Reach for Filtered {
        fn with(&self, f: &mut dyn FnMut(&KeywordIndex, Allow<'_>)) {
            if let Ok(idx) = self.0.try_read() {
                f(
                    &idx,
                    self.1.as_ref().map(|f| f as &(dyn Fn(i64) -> bool + Sync)),
                );
            }
        }
    }

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

    #[test]
    fn a_long_context_weighs_at_most_the_bound_in_all() {
        assert_eq!(bounded_context_weight(0.5, 0), 0.5);
        assert_eq!(bounded_context_weight(0.5, 100), 0.5);
        assert_eq!(bounded_context_weight(0.5, 1000), CONTEXT_WORDS / 1000.0);
        assert_eq!(bounded_context_weight(0.0, 1000), 0.0);
        let mut idx = KeywordIndex::default();
        let reply: Vec<String> = (0..1000).map(|i| format!("w{}", i % 97)).collect();
        idx.insert(1, &terms("thanks"), &reply, 0.5);
        idx.insert(2, &terms("thanks again"), &reply[..100], 0.5);
        let (_, docs) = idx.export();
        let len = |row: i64| docs.iter().find(|d| d.row == row).map(|d| d.len);
        // 1000 context words at 0.5 would weigh 500; they weigh 64 in all.
        assert!((len(1).unwrap() - (1.0 + CONTEXT_WORDS)).abs() < 1e-3);
        // 100 at 0.5 weigh 50, under the bound: as before.
        assert!((len(2).unwrap() - 52.0).abs() < 1e-3);
        // A word of the long context counts at the lowered weight: w0
        // occurs 11 times in it.
        let doc = docs.iter().find(|d| d.row == 1).unwrap();
        let w0 = idx.term_ids["w0"];
        let tf = doc.terms.iter().find(|t| t.0 == w0).unwrap().1;
        assert!((tf - 11.0 * CONTEXT_WORDS / 1000.0).abs() < 1e-4, "{tf}");
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

    /// A seeded stream of numbers below `m` (a linear congruential
    /// generator): the same documents and queries on every run.
    fn numbers(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % m
        }
    }

    /// BM25 by the book, every document scored: what the pruned search
    /// must return exactly.
    fn exhaustive(
        docs: &[(i64, Vec<(String, f32)>)],
        q: &[String],
        k: usize,
        allow: &dyn Fn(i64) -> bool,
    ) -> Vec<(i64, f32)> {
        let n = docs.len() as f32;
        let avg = docs
            .iter()
            .map(|d| d.1.iter().map(|t| t.1).sum::<f32>())
            .sum::<f32>()
            / n;
        let mut q: Vec<&String> = q.iter().collect();
        q.sort();
        q.dedup();
        let dfs: Vec<f32> = q
            .iter()
            .map(|term| {
                docs.iter()
                    .filter(|d| d.1.iter().any(|t| &t.0 == *term))
                    .count() as f32
            })
            .collect();
        let hits = docs
            .iter()
            .filter_map(|(row, terms)| {
                let len: f32 = terms.iter().map(|t| t.1).sum();
                let mut score = 0.0;
                let mut any = false;
                for (term, &df) in q.iter().zip(&dfs) {
                    let tf: f32 = terms.iter().filter(|t| &t.0 == *term).map(|t| t.1).sum();
                    if tf > 0.0 {
                        any = true;
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        score +=
                            idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)));
                    }
                }
                (any && allow(*row)).then_some((*row, score))
            })
            .collect();
        top_k(hits, k)
    }

    /// Pruning must never change the result: skewed and flat vocabularies,
    /// context weights, removals (before and after a compaction numbers
    /// the slots again), documents added and replaced after it, repeated
    /// query terms, small limits and rows refused by `allow`.
    #[test]
    fn pruned_search_matches_exhaustive_bm25() {
        type Docs = Vec<(i64, Vec<(String, f32)>)>;
        let vocab: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let mut next = numbers(7);
        // Behind a lock, so a split search's helper can reach it.
        let idx = Arc::new(RwLock::new(KeywordIndex::default()));
        let mut docs: Docs = Vec::new();
        let add = |row: i64,
                   idx: &mut KeywordIndex,
                   docs: &mut Docs,
                   r: &mut dyn FnMut(usize) -> usize| {
            // Skewed: low word ids are common, high ones rare.
            let pick = |x: usize| vocab[(x * x) / 40].clone();
            let own: Vec<String> = (0..1 + r(6)).map(|_| pick(r(40))).collect();
            let ctx: Vec<String> = (0..r(4)).map(|_| pick(r(40))).collect();
            idx.insert(row, &own, &ctx, 0.5);
            let mut terms: Vec<(String, f32)> = own.iter().map(|t| (t.clone(), 1.0)).collect();
            terms.extend(ctx.iter().map(|t| (t.clone(), 0.5)));
            docs.retain(|d| d.0 != row);
            docs.push((row, terms));
        };
        for row in 0..1500i64 {
            add(row, &mut idx.write().unwrap(), &mut docs, &mut next);
        }
        for row in (0..1500).filter(|r| r % 4 == 1) {
            idx.write().unwrap().remove(row);
        }
        docs.retain(|d| d.0 % 4 != 1);
        let check =
            |shared: &Arc<RwLock<KeywordIndex>>, docs: &Docs, r: &mut dyn FnMut(usize) -> usize| {
                let idx = shared.read().unwrap();
                for _ in 0..150 {
                    let q: Vec<String> = (0..1 + r(7)).map(|_| vocab[r(40)].clone()).collect();
                    // Every third row refused, as expired rows or a narrowed search are.
                    let some: fn(i64) -> bool = |row| row % 3 != 0;
                    for (k, keep, split) in [
                        (1, None, false),
                        (5, None, false),
                        (5, None, true),
                        (30, None, true),
                        (5, Some(some), false),
                        (5, Some(some), true),
                        (30, Some(some), true),
                    ] {
                        let allow: Allow<'_> =
                            keep.as_ref().map(|f| f as &(dyn Fn(i64) -> bool + Sync));
                        // Split: in ranges shared with the helper thread.
                        let reach: Option<Arc<dyn Reach>> = split
                            .then(|| Arc::new(Filtered(shared.clone(), keep)) as Arc<dyn Reach>);
                        let got = idx.search_beside(&q, k, allow, reach, || ()).0;
                        let want = exhaustive(docs, &q, k, &|r| allow.is_none_or(|f| f(r)));
                        assert_eq!(got.len(), want.len(), "{q:?} k={k}");
                        for (g, w) in got.iter().zip(&want) {
                            assert!((g.1 - w.1).abs() < 1e-3, "{q:?} k={k}: {got:?} vs {want:?}");
                        }
                        // Same rows, up to the order of (near-)equal scores.
                        let kth = want.last().map_or(0.0, |w| w.1);
                        for g in got {
                            assert!(g.1 >= kth - 1e-3 && docs.iter().any(|d| d.0 == g.0));
                        }
                    }
                }
            };
        check(&idx, &docs, &mut next);
        // Most of the rest removed (dead postings outnumber live ones: a
        // compaction), then rows added and some replaced after it.
        let slots_before = idx.read().unwrap().slot_rows.len();
        for row in (0..1500).filter(|r| r % 4 != 0) {
            idx.write().unwrap().remove(row);
        }
        docs.retain(|d| d.0 % 4 == 0);
        assert!(
            idx.read().unwrap().slot_rows.len() < slots_before,
            "a compaction ran"
        );
        for row in (1500..1900).chain((0..400).step_by(8)) {
            add(row, &mut idx.write().unwrap(), &mut docs, &mut next);
        }
        assert!(idx
            .read()
            .unwrap()
            .postings
            .iter()
            .all(|l| l.windows(2).all(|w| w[0].0 < w[1].0)));
        check(&idx, &docs, &mut next);
    }

    /// A range's search gives the same scores, to the bit, whatever cut
    /// another range has published: which terms are essential then
    /// differs, and the sum must not depend on it (else ties at the cut
    /// could fall differently from one run of a split search to the next).
    #[test]
    fn a_published_cut_changes_no_score() {
        let mut idx = KeywordIndex::default();
        let mut next = numbers(11);
        let vocab: Vec<String> = (0..12).map(|i| format!("w{i}")).collect();
        for row in 0..3000i64 {
            let own: Vec<String> = (0..2 + next(8)).map(|_| vocab[next(12)].clone()).collect();
            let ctx: Vec<String> = (0..next(3)).map(|_| vocab[next(12)].clone()).collect();
            idx.insert(row, &own, &ctx, 0.3);
        }
        let slots = idx.slot_rows.len() as u32;
        for _ in 0..60 {
            let q: Vec<String> = (0..3 + next(5)).map(|_| vocab[next(12)].clone()).collect();
            let (query, ab) = idx.query_terms(&q);
            let alone = maxscore::search(
                &idx,
                query.clone(),
                ab,
                None,
                0..slots,
                &maxscore::SharedCut::new(20),
            );
            let kth = alone.last().map_or(0.0, |h| h.1);
            for frac in [0.3f32, 0.6, 0.9, 1.0] {
                let published = maxscore::SharedCut::starting_at(20, kth * frac);
                let got = maxscore::search(&idx, query.clone(), ab, None, 0..slots, &published);
                let bits =
                    |h: &[(i64, f32)]| h.iter().map(|x| (x.0, x.1.to_bits())).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&alone), "{q:?} cut {frac} of the 20th");
            }
        }
    }

    /// A search beside other work answers both, and its hits are the
    /// search's alone, in a partition large enough to be cut into ranges.
    #[test]
    fn a_search_beside_other_work_answers_both() {
        let mut idx = KeywordIndex::default();
        let mut next = numbers(5);
        let vocab: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
        for row in 0..2000i64 {
            let own: Vec<String> = (0..1 + next(6)).map(|_| vocab[next(10)].clone()).collect();
            idx.insert(row, &own, &[], 0.0);
        }
        assert!(idx.slot_rows.len() >= PARALLEL_SLOTS * RANGES as usize);
        let q = terms("w1 w3 w7");
        let shared = Arc::new(RwLock::new(idx));
        let idx = shared.read().unwrap();
        let reach: Arc<dyn Reach> = Arc::new(Filtered(shared.clone(), None));
        let (hits, other) = idx.search_beside(&q, 25, None, Some(reach), || "vectors");
        assert_eq!(other, "vectors");
        let (query, ab) = idx.query_terms(&q);
        let slots = idx.slot_rows.len() as u32;
        let whole = maxscore::search(
            &idx,
            query,
            ab,
            None,
            0..slots,
            &maxscore::SharedCut::new(25),
        );
        assert_eq!(hits, whole);
        assert_eq!(hits.len(), 25);
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
