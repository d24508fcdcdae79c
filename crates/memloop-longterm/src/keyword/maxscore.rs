//! BM25 top-k, document at a time with MaxScore pruning (Turtle and Flood).
//!
//! The query's posting lists, all in slot order, are walked side by side,
//! one document at a time, keeping the `limit` best scores so far. Terms
//! are ordered by the most they can add to a score (their bound); the
//! least valuable ones whose bounds together stay below the `limit`-th
//! best score are "non-essential": no document holding only them can
//! enter the result, so their lists are no longer walked, only searched
//! forward (galloping) for the documents the others bring, and a document
//! drops out as soon as what it lacks could not lift it to the cut.
//!
//! It replaced term-at-a-time scoring into an array of every document's
//! score: when a query's words are all common (a corpus of a few hundred
//! sentence templates, every word in a tenth of a million memories), that
//! walked half of all postings with a random write each before any could
//! be skipped (docs/benchmarks.md, "BM25 document at a time").

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use super::{term_score, top_k, Allow, KeywordIndex, QueryTerm};

/// One query term's place in its posting list.
struct Cursor<'a> {
    list: &'a [(u32, f32)],
    pos: usize,
    weight: f32,
    /// The list holds postings of removed documents, to step over.
    dead: bool,
}

impl Cursor<'_> {
    fn current(&self) -> Option<(u32, f32)> {
        self.list.get(self.pos).copied()
    }

    /// The term's frequency in document `d` when the cursor is on it.
    fn tf_at(&self, d: u32) -> Option<f32> {
        self.current().filter(|p| p.0 == d).map(|p| p.1)
    }

    /// Past postings of removed documents.
    fn skip_dead(&mut self, idx: &KeywordIndex) {
        if self.dead {
            while let Some(&(slot, _)) = self.list.get(self.pos) {
                if idx.slot_rows[slot as usize].is_some() {
                    break;
                }
                self.pos += 1;
            }
        }
    }

    /// To the first posting at or after slot `d`: a few steps, doubling,
    /// then a binary search in the last stride.
    fn seek(&mut self, d: u32) {
        let list = self.list;
        if list.get(self.pos).is_none_or(|p| p.0 >= d) {
            return;
        }
        // list[lo] < d throughout.
        let (mut lo, mut step) = (self.pos, 1);
        while lo + step < list.len() && list[lo + step].0 < d {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(list.len());
        self.pos = lo + 1 + list[lo + 1..hi].partition_point(|p| p.0 < d);
    }
}

/// The first essential term once the cut is `cut`: terms are
/// non-essential while together they could not reach it (`below[i]`: the
/// most terms 0..i add together). The boundary only moves up.
fn essential_from(mut essential: usize, below: &[f32], cut: f32) -> usize {
    while essential + 1 < below.len() && below[essential + 1] < cut {
        essential += 1;
    }
    essential
}

/// f32 scores ordered for the heap (no NaN arises: every term adds a
/// positive finite amount).
#[derive(PartialEq, Clone, Copy)]
struct Score(f32);
impl Eq for Score {}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What the slot ranges of one search know of the cut. A range running
/// publishes its own `limit`-th best as it rises, and a finished range
/// adds its best scores to a heap of all finished ranges', whose
/// `limit`-th best is a cut for every range after: the merged result's
/// `limit`-th best scores at least either, so a document below it cannot
/// enter. With a search in more ranges than threads, the ranges taken
/// later start from about the whole search's cut, not from their own
/// (docs/benchmarks.md, "Both indexes on both cores"). One heap updated
/// by every document kept instead cost more in its lock than it saved.
pub(super) struct SharedCut {
    limit: usize,
    /// The cut's bits (positive floats order as their bits do).
    bits: AtomicU32,
    finished: Mutex<BinaryHeap<Reverse<Score>>>,
}

impl SharedCut {
    pub(super) fn new(limit: usize) -> SharedCut {
        SharedCut {
            limit,
            bits: AtomicU32::new(0),
            finished: Mutex::new(BinaryHeap::new()),
        }
    }

    /// A cut known before the search (a test's: any cut at or below the
    /// final one gives the same result).
    #[cfg(test)]
    pub(super) fn starting_at(limit: usize, cut: f32) -> SharedCut {
        let shared = SharedCut::new(limit);
        shared.publish(cut);
        shared
    }

    fn get(&self) -> f32 {
        f32::from_bits(self.bits.load(Ordering::Relaxed))
    }

    fn publish(&self, cut: f32) {
        self.bits.fetch_max(cut.to_bits(), Ordering::Relaxed);
    }

    /// A finished range's best scores.
    fn finish(&self, best: BinaryHeap<Reverse<Score>>) {
        // A poisoned heap (not expected: nothing here panics) leaves the
        // cut where it is, which is always safe.
        let Ok(mut all) = self.finished.lock() else {
            return;
        };
        all.extend(best);
        while all.len() > self.limit {
            all.pop();
        }
        if all.len() == self.limit {
            if let Some(Reverse(Score(kth))) = all.peek() {
                self.publish(*kth);
            }
        }
    }
}

/// The `shared.limit` best rows for `query` (terms with their weights
/// and bounds) among the documents in `slots` that `allow` admits, `(a,
/// b)` the folded BM25 constants; see the module's comment. Searches of
/// other slot ranges running beside this one count their best scores in
/// `shared` too.
pub(super) fn search(
    idx: &KeywordIndex,
    mut query: Vec<QueryTerm>,
    ab: (f32, f32),
    allow: Allow<'_>,
    slots: Range<u32>,
    shared: &SharedCut,
) -> Vec<(i64, f32)> {
    let limit = shared.limit;
    query.sort_by(|x, y| x.bound.total_cmp(&y.bound));
    // below[i]: the most terms 0..i can add together.
    let mut below = vec![0.0f32; query.len() + 1];
    for (i, t) in query.iter().enumerate() {
        below[i + 1] = below[i] + t.bound;
    }
    let mut cursors: Vec<Cursor> = query
        .iter()
        .map(|t| {
            let list = &idx.postings[t.id as usize];
            let from = list.partition_point(|p| p.0 < slots.start);
            let to = list.partition_point(|p| p.0 < slots.end);
            let mut c = Cursor {
                list: &list[from..to],
                pos: 0,
                weight: t.weight,
                dead: idx.dead_per_term[t.id as usize] > 0,
            };
            c.skip_dead(idx);
            c
        })
        .collect();
    // The `limit` best scores so far (a min-heap), and the cut they set:
    // a document scoring below it cannot enter the result. Documents at or
    // above the cut when scored are kept, and cut again at the end, so
    // ties with the last place are resolved as the exhaustive search does.
    let mut best: BinaryHeap<Reverse<Score>> =
        BinaryHeap::with_capacity(limit.saturating_add(1).min(4096));
    let mut cut = 0.0f32;
    let mut kept: Vec<(i64, f32)> = Vec::new();
    // Terms 0..essential are non-essential.
    let mut essential = 0;
    while let Some(d) = cursors[essential..]
        .iter()
        .filter_map(|c| c.current().map(|p| p.0))
        .min()
    {
        // A higher cut from another range.
        let theirs = shared.get();
        if theirs > cut {
            cut = theirs;
            essential = essential_from(essential, &below, cut);
            // The document is taken again with the new essential terms.
            continue;
        }
        let len = idx.slot_len[d as usize];
        let mut score = 0.0f32;
        // Terms are added most valuable first, here and below, so a
        // document's score is the same sum whichever terms were essential
        // when it was reached: that depends on when another range raised
        // the cut, and floats added in another order can differ in the
        // last place, which would let ties at the cut fall differently
        // from one run to the next.
        for c in cursors[essential..].iter_mut().rev() {
            if let Some(tf) = c.tf_at(d) {
                score += term_score(c.weight, tf, len, ab);
                c.pos += 1;
                c.skip_dead(idx);
            }
        }
        // The non-essential terms, most valuable first, while they could
        // still lift the document to the cut.
        let mut i = essential;
        while i > 0 && score + below[i] >= cut {
            i -= 1;
            let c = &mut cursors[i];
            c.seek(d);
            if let Some(tf) = c.tf_at(d) {
                score += term_score(c.weight, tf, len, ab);
            }
        }
        if i > 0 || score < cut {
            continue;
        }
        let Some(row) = idx.slot_rows[d as usize] else {
            continue;
        };
        if allow.is_some_and(|f| !f(row)) {
            continue;
        }
        kept.push((row, score));
        best.push(Reverse(Score(score)));
        if best.len() > limit {
            best.pop();
        }
        if best.len() == limit {
            cut = best.peek().map_or(0.0, |s| s.0 .0).max(cut);
            shared.publish(cut);
            essential = essential_from(essential, &below, cut);
            // Fewer kept than scored, once the cut has risen.
            if kept.len() >= 4 * limit {
                kept.retain(|h| h.1 >= cut);
            }
        }
    }
    shared.finish(best);
    kept.retain(|h| h.1 >= cut);
    top_k(kept, limit)
}
