//! Upkeep: what keeps a store small and fast, and moves it whole. None of
//! it is needed for durability (an acknowledged write is committed
//! without it); each method runs in transactions small enough that
//! searches and writes going on meanwhile wait at most for one.

use memloop_core::Result;

use crate::{dump, EmbedFn, ExpireReport, LinksFn};

/// Expiry, re-embedding, index upkeep, and export and import.
pub trait Upkeep: Send + Sync {
    /// Deletes every memory, of every tenant, whose `expires_at` has passed
    /// by the store's clock (current or not): its row, its entries in every
    /// derived index (vector and keyword, in memory and in saved index
    /// files), so it takes no room and no search work any more. History
    /// keeps a record of each current one: a DELETE event with the reason
    /// `"expired"` (and its text, as for any delete). Runs as a series of
    /// small transactions, so searches and writes going on meanwhile wait
    /// at most for one of them; one that fails leaves the rest for the next
    /// run (an expired memory is invisible either way).
    fn expire(&self) -> Result<ExpireReport>;

    /// Re-embeds every memory, current and past, then records `embed`'s
    /// model as the store's. Returns how many were re-embedded.
    fn reindex(&self, embed: &EmbedFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize>;

    /// Gives every memory, current and past, of every tenant, that has no
    /// links (written before the store kept a graph) what `links` derives
    /// from its text and metadata, written as a write writes them and in
    /// the order the memories were written: the names it mentions and the
    /// relations it states, a single-valued one ended where the writes
    /// would have ended it. A memory
    /// with links keeps them as they are, so a second run (or one over a
    /// store written with links) writes nothing. Returns how many memories
    /// gained links.
    fn relink(&self, links: &LinksFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize>;

    /// Saves derived indexes so the next open is fast.
    fn flush(&self) -> Result<()>;

    /// Saves derived indexes and prunes what they no longer need; returns
    /// how many change-log entries were deleted.
    fn compact(&self) -> Result<usize>;

    // --- export and import (`dump`, docs/export.md) ---

    /// Hands `out` every memory (current or not; of one user id in every
    /// tenant when `user` is set), by id, then every history entry of those
    /// partitions, by memory id and oldest first; vectors only when
    /// `vectors`. Never the header line.
    fn dump(
        &self,
        user: Option<&str>,
        vectors: bool,
        out: &mut dyn FnMut(dump::DumpLine) -> Result<()>,
    ) -> Result<()>;

    /// Writes dumped memories and history as they are (ids, times,
    /// supersession), one transaction. A memory whose id is stored, and a
    /// history group of a memory that has history, are skipped, so
    /// importing the same dump twice writes nothing the second time.
    fn restore(&self, batch: &dump::RestoreBatch) -> Result<dump::RestoreReport>;
}
