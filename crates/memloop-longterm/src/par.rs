//! Two parts of one search at once (the keyword index's two halves in a
//! large partition). A thread is started per call, scoped so the parts
//! borrow the index; for a search of a million memories that costs a few
//! hundredths of what it saves.
//!
//! Only when a core is free for it: a search split while every core is
//! busy (other searches, gc) waits for the scheduler to give its second
//! half a core, and its latency grows instead of shrinking (searches
//! during gc of 200,000 memories on two cores: p99 4.3–5.5 ms split
//! against 2.2–3.2 ms whole; docs/forgetting.md). This process's
//! searches and gc mark their threads [`Busy`]; a search splits only
//! while fewer threads are busy than the machine has cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Threads of this process running a search or maintenance now.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// Marks the calling thread busy with a search or maintenance while it lives.
#[must_use = "the thread counts as busy only while the guard lives"]
pub struct Busy(());

impl Busy {
    pub fn start() -> Busy {
        BUSY.fetch_add(1, Ordering::Relaxed);
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether work could take one more core: fewer busy threads (the caller
/// among them, if it marked itself) than the machine has cores.
pub fn core_to_spare() -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    BUSY.load(Ordering::Relaxed) < cores
}

/// Runs `a` here and `b` on a thread of its own at the same time. If no
/// thread can be started, or `b`'s panicked (not expected: the searches do
/// not panic), `b` runs here after `a`, so the answer is always whole.
pub fn join<A, B: Send>(a: impl FnOnce() -> A, b: impl Fn() -> B + Sync) -> (A, B) {
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("memloop-search".into())
            .spawn_scoped(s, &b);
        let first = a();
        let second = match spawned.map(|h| h.join()) {
            Ok(Ok(done)) => done,
            _ => b(),
        };
        (first, second)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_parts_are_answered_and_the_second_runs_elsewhere() {
        let here = std::thread::current().id();
        let (a, (b, elsewhere)) = join(|| 2 + 2, || (3 * 3, std::thread::current().id() != here));
        assert_eq!((a, b), (4, 9));
        assert!(elsewhere);
    }

    #[test]
    fn a_core_is_spared_only_while_fewer_threads_are_busy_than_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Other tests of this binary may hold guards of their own; fill
        // every core from here and check the answer follows.
        let guards: Vec<Busy> = (0..cores).map(|_| Busy::start()).collect();
        assert!(!core_to_spare());
        drop(guards);
    }
}
