//! Which documents hold a common term, one bit a slot.
//!
//! MaxScore looks a non-essential term up in each document the essential
//! ones bring (`maxscore.rs`), and mostly finds it absent: at a million
//! memories whose query words are each in 5–10% of them, a search made
//! some 100,000 such look-ups, each a forward search in a posting list.
//! A term in at least one document of `DENSE` keeps a bitmap of its slots
//! beside its list (at most half the list's size), and a look-up whose bit
//! is clear is answered without touching the list. (Finding a set bit's
//! posting by its rank among the set bits, instead of searching the list
//! forward, measured slower: three cache lines read instead of one, the
//! list's next postings being near the cursor already.)

use foldhash::HashMap as FastMap;

/// A term keeps a bitmap once it is in one slot of this many or more.
const DENSE: usize = 32;
/// Slots below which no bitmap is kept: a small partition's lists are
/// short, and their look-ups cheap. (Small in tests, so theirs have some.)
const MIN_SLOTS: usize = if cfg!(test) { 64 } else { 1 << 16 };

/// Per common term id, the bitmap of its slots (dead ones included until
/// the next compaction). Only common terms are kept, so a partition's
/// many rare terms cost nothing here.
#[derive(Default)]
pub(super) struct TermBits {
    bits: FastMap<u32, Vec<u64>>,
}

impl TermBits {
    /// Term `term`'s bitmap, empty if it keeps none.
    pub(super) fn of(&self, term: u32) -> &[u64] {
        self.bits.get(&term).map_or(&[], Vec::as_slice)
    }

    /// After `slot` was added to `term`'s list (`list`, of a partition
    /// now `slots` slots long): its bit set, or the bitmap made if the
    /// term has just become common.
    pub(super) fn placed(&mut self, term: u32, slot: u32, list: &[(u32, f32)], slots: usize) {
        match self.bits.get_mut(&term) {
            Some(bits) => set(bits, slot),
            None if dense(list.len(), slots) => {
                self.bits.insert(term, built(list));
            }
            None => {}
        }
    }

    /// Every common term's bitmap made again from the lists (after slots
    /// were numbered anew, or lists built whole).
    pub(super) fn rebuild(&mut self, postings: &[Vec<(u32, f32)>], slots: usize) {
        self.bits = postings
            .iter()
            .enumerate()
            .filter(|(_, list)| dense(list.len(), slots))
            .map(|(term, list)| (term as u32, built(list)))
            .collect();
    }
}

/// False only when `bits` is kept and `slot`'s bit is clear: the term is
/// then certainly not in that document.
pub(super) fn may_hold(bits: &[u64], slot: u32) -> bool {
    bits.is_empty()
        || bits
            .get(slot as usize / 64)
            .is_some_and(|w| (w >> (slot % 64)) & 1 == 1)
}

fn dense(postings: usize, slots: usize) -> bool {
    slots >= MIN_SLOTS && postings * DENSE >= slots
}

fn built(list: &[(u32, f32)]) -> Vec<u64> {
    let mut bits = Vec::new();
    for &(slot, _) in list {
        set(&mut bits, slot);
    }
    bits
}

fn set(bits: &mut Vec<u64>, slot: u32) {
    let word = slot as usize / 64;
    if word >= bits.len() {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (slot % 64);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_common_terms_bitmap_holds_exactly_its_slots() {
        let mut bits = TermBits::default();
        let mut list = Vec::new();
        // Term 1 in every third slot of 3,000: common once past MIN_SLOTS.
        for slot in 0..3000u32 {
            if slot % 3 == 0 {
                list.push((slot, 1.0));
                bits.placed(1, slot, &list, slot as usize + 1);
            }
        }
        let b = bits.of(1);
        assert!(
            !b.is_empty(),
            "no bitmap for a term in a third of the slots"
        );
        for slot in 0..3500u32 {
            assert_eq!(may_hold(b, slot), slot < 3000 && slot % 3 == 0, "{slot}");
        }
        // A rare term keeps none, and then may be anywhere.
        bits.placed(7, 5, &[(5, 1.0)], 3000);
        assert!(bits.of(7).is_empty() && may_hold(bits.of(7), 6));
        // Rebuilt from lists numbered anew.
        let lists = vec![Vec::new(), (0..1000).map(|s| (s * 2, 1.0)).collect()];
        bits.rebuild(&lists, 2000);
        assert!((0..2000).all(|s| may_hold(bits.of(1), s) == (s % 2 == 0)));
        assert!(bits.of(0).is_empty() && bits.of(7).is_empty());
    }
}
