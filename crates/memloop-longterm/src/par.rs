//! One search on two cores (in a large partition, the keyword index's
//! walk in parts, beside the vector search). A thread is started per
//! call, scoped so the parts borrow the index; for a search of a million
//! memories that costs a few hundredths of what it saves.
//!
//! Only when a core is free for it: a search split while every core is
//! busy (other searches, gc) waits for the scheduler to give its second
//! half a core, and its latency grows instead of shrinking (searches
//! during gc of 200,000 memories on two cores: p99 4.3–5.5 ms split
//! against 2.2–3.2 ms whole; docs/forgetting.md). This process's
//! searches and gc mark their threads [`Busy`]; a search splits only
//! while fewer threads are busy than the machine has cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

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

/// Threads counted busy now (for tests).
#[cfg(test)]
pub(crate) fn busy_threads() -> usize {
    BUSY.load(Ordering::Relaxed)
}

/// Whether work could take one more core: fewer busy threads (the caller
/// among them, if it marked itself) than the machine has cores.
pub fn core_to_spare() -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    BUSY.load(Ordering::Relaxed) < cores
}

/// Runs `first` here, then helps with `parts`: `work(i)` for each part
/// i, taken in order by whichever of two threads is free, a thread of
/// its own starting on them at once. So the parts share the second core
/// with `first` unevenly, as the time each takes decides (a hybrid
/// search's vector side here, its keyword walk in parts on both cores).
/// Results come back in part order. A part the other thread did not
/// finish (it could not be started, or panicked: not expected, the
/// searches do not panic) is done here, so the answer is always whole.
pub fn share<R, T: Send>(
    first: impl FnOnce() -> R,
    parts: usize,
    work: impl Fn(usize) -> T + Sync,
) -> (R, Vec<T>) {
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<T>>> = (0..parts).map(|_| Mutex::new(None)).collect();
    let take = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = done.get(i) else { break };
        let result = work(i);
        if let Ok(mut slot) = slot.lock() {
            *slot = Some(result);
        }
    };
    let here = std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("memloop-search".into())
            .spawn_scoped(s, take);
        let here = first();
        take();
        // A panicked helper's parts are redone below.
        if let Ok(h) = helper {
            let _ = h.join();
        }
        here
    });
    let results = done
        .into_iter()
        .enumerate()
        .map(|(i, slot)| match slot.into_inner() {
            Ok(Some(result)) => result,
            _ => work(i),
        })
        .collect();
    (here, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_answered_in_order_and_the_helper_takes_some() {
        let here = std::thread::current().id();
        // `first` waits until the helper has taken a part, so the helper
        // cannot have been left idle.
        let started = AtomicUsize::new(0);
        let (a, parts) = share(
            || {
                while started.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                2 + 2
            },
            8,
            |i| {
                let elsewhere = std::thread::current().id() != here;
                if elsewhere {
                    started.fetch_add(1, Ordering::SeqCst);
                }
                (i * i, elsewhere)
            },
        );
        assert_eq!(a, 4);
        let squares: Vec<usize> = parts.iter().map(|p| p.0).collect();
        assert_eq!(squares, (0..8).map(|i| i * i).collect::<Vec<_>>());
        assert!(parts.iter().any(|p| p.1));
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
