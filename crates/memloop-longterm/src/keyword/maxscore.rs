//! BM25 top-k with MaxScore pruning (Turtle and Flood), a window of
//! slots at a time (as Lucene's MaxScore scorer does).
//!
//! Terms are ordered by the most they can add to a score (their bound);
//! the least valuable ones whose bounds together stay below the
//! `limit`-th best score so far (the cut) are "non-essential": no
//! document holding only them can enter the result. The posting lists are
//! all in slot order. Window by window, the essential lists' postings are
//! added into an array of the window's scores, list after list; then the
//! non-essential terms, most valuable first, for the documents that could
//! still reach the cut with them: their postings in the window read the
//! same way, or, when few documents are left, searched forward
//! (galloping) for each; what reaches the cut is kept.
//!
//! Term at a time over the whole partition (an array of every document's
//! score) walked half of all postings with a random write each before any
//! could be skipped when a query's words were all common (docs/benchmarks.md,
//! "BM25 document at a time"). One document at a time, the lists walked
//! side by side, paid for finding the least slot among them and for a
//! search forward in each non-essential list for nearly every document
//! (docs/benchmarks.md, "MaxScore a window at a time"). A window of 2,048
//! slots keeps the array in the first-level cache.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use super::{term_score, top_k, Allow, KeywordIndex, QueryTerm};

/// Slots scored together (small in tests, so their partitions span many).
const WINDOW: usize = if cfg!(test) { 64 } else { 2048 };
/// About what a search forward in a posting list costs against reading
/// one posting.
const SEEK_COST: u64 = 8;

/// One query term's place in its posting list.
struct Cursor<'a> {
    list: &'a [(u32, f32)],
    pos: usize,
    weight: f32,
}

impl Cursor<'_> {
    fn current(&self) -> Option<(u32, f32)> {
        self.list.get(self.pos).copied()
    }

    /// The term's frequency in document `d` when the cursor is on it.
    fn tf_at(&self, d: u32) -> Option<f32> {
        self.current().filter(|p| p.0 == d).map(|p| p.1)
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

/// Adds what `c`'s term scores in each document of the window
/// `start..end` (its cursor at or after `start`) to its slot's score, and
/// moves the cursor past the window. With `mark` (an essential term), the
/// slots are marked as matched too; returns how many of the window's
/// words of 64 slots reach its last posting.
fn add_postings(
    c: &mut Cursor<'_>,
    idx: &KeywordIndex,
    (start, end): (u32, u32),
    scores: &mut [f32],
    mut mark: Option<&mut [u64]>,
    ab: (f32, f32),
) -> usize {
    let n = c.list[c.pos..].iter().take_while(|p| p.0 < end).count();
    let window = &c.list[c.pos..c.pos + n];
    for &(slot, tf) in window {
        let i = (slot - start) as usize;
        scores[i] += term_score(c.weight, tf, idx.slot_len[slot as usize], ab);
        if let Some(matched) = mark.as_deref_mut() {
            matched[i / 64] |= 1 << (i % 64);
        }
    }
    c.pos += n;
    window.last().map_or(0, |p| (p.0 - start) as usize / 64 + 1)
}

/// Keeps in `matched` only the slots whose score could still reach the
/// cut with `lift` more; returns how many are left. Without a branch on
/// the score (whether a document can still reach the cut is the least
/// predictable question of a search), and counted as it goes (`count_ones`
/// is a dozen instructions where the build may not assume a POPCNT).
fn keep_reaching(matched: &mut [u64], scores: &[f32], lift: f32, cut: f32) -> u32 {
    let mut left = 0;
    for (w, word) in matched.iter_mut().enumerate() {
        let (mut bits, mut keep) = (*word, 0u64);
        while bits != 0 {
            let j = bits.trailing_zeros();
            bits &= bits - 1;
            let reaches = scores[w * 64 + j as usize] + lift >= cut;
            keep |= u64::from(reaches) << j;
            left += u32::from(reaches);
        }
        *word = keep;
    }
    left
}

/// Calls `f` with each set slot of `matched`, in order.
fn for_each_set(matched: &[u64], mut f: impl FnMut(usize)) {
    for (w, &word) in matched.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            f(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
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
            Cursor {
                list: &list[from..to],
                pos: 0,
                weight: t.weight,
            }
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
    // One window's essential scores and which of its slots have one.
    let mut scores = vec![0.0f32; WINDOW];
    let mut matched = vec![0u64; WINDOW / 64];
    // Terms 0..essential are non-essential.
    let mut essential = 0;
    loop {
        // A higher cut from another range.
        cut = cut.max(shared.get());
        essential = essential_from(essential, &below, cut);
        let Some(start) = cursors[essential..]
            .iter()
            .filter_map(|c| c.current().map(|p| p.0))
            .min()
        else {
            break;
        };
        let end = start.saturating_add(WINDOW as u32);
        // Each essential list's postings in the window, one list after
        // the other, most valuable term first: so a document's score is
        // the same sum whichever terms were essential when it was reached
        // (that depends on when another range raised the cut, and floats
        // added in another order can differ in the last place, which would
        // let ties at the cut fall differently from one run to the next).
        // Postings of removed documents are scored too: their slots have
        // no row, and are dropped below. `used`: the words of the window
        // that hold a matched slot (a sparse query's window may hold one
        // posting; the rest is not looked at).
        let mut used = 0;
        for c in cursors[essential..].iter_mut().rev() {
            let reach = add_postings(c, idx, (start, end), &mut scores, Some(&mut matched), ab);
            used = used.max(reach);
        }
        let end = start.saturating_add(64 * used as u32);
        let (matched, scores) = (&mut matched[..used], &mut scores[..64 * used]);
        // The non-essential terms, most valuable first, while some
        // document could still reach the cut with them.
        for t in (0..essential).rev() {
            let left = keep_reaching(matched, scores, below[t + 1], cut);
            if left == 0 {
                break;
            }
            let c = &mut cursors[t];
            c.seek(start);
            // Few documents left against the term's postings in the
            // window: a search forward for each is cheaper than reading
            // them all.
            let in_window = (c.list.len() * scores.len() / slots.len().max(1)) as u64;
            if u64::from(left) * SEEK_COST < in_window {
                for_each_set(matched, |i| {
                    let d = start + i as u32;
                    c.seek(d);
                    if let Some(tf) = c.tf_at(d) {
                        scores[i] += term_score(c.weight, tf, idx.slot_len[d as usize], ab);
                    }
                });
            } else {
                add_postings(c, idx, (start, end), scores, None, ab);
            }
        }
        // What is left, in slot order, at or above the cut.
        for_each_set(matched, |i| {
            let score = scores[i];
            if score < cut {
                return;
            }
            let d = start + i as u32;
            let Some(row) = idx.slot_rows[d as usize] else {
                return;
            };
            if allow.is_some_and(|f| !f(row)) {
                return;
            }
            kept.push((row, score));
            best.push(Reverse(Score(score)));
            if best.len() > limit {
                best.pop();
            }
            if best.len() == limit {
                cut = best.peek().map_or(0.0, |s| s.0 .0).max(cut);
                shared.publish(cut);
                // Fewer kept than scored, once the cut has risen.
                if kept.len() >= 4 * limit {
                    kept.retain(|h| h.1 >= cut);
                }
            }
        });
        matched.fill(0);
        // Every term added into the window may have touched any of its slots.
        scores.fill(0.0);
    }
    shared.finish(best);
    kept.retain(|h| h.1 >= cut);
    top_k(kept, limit)
}
