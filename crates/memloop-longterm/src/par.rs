//! One search on two cores (in a large partition, the keyword index's
//! walk in parts, beside the vector search). The parts are shared with
//! one long-lived helper thread: the search's own thread posts them,
//! does its first work, then takes whatever parts are left. It waits only
//! for parts the helper has claimed, never for the helper to start: a
//! helper the scheduler has not run yet (its core held by another
//! thread) finds nothing left to do. So the work the helper reads must be
//! its own to reach (`Arc`s, its own lock on the index): it may start
//! after the search has ended.
//!
//! Only when a core is free for it: a search split while every core is
//! busy (other searches, gc) gains nothing from the second thread. This
//! process's searches and gc mark their threads [`Busy`]; a search splits
//! only while fewer threads are busy than the machine has cores.
//! Background work that must not hold a core a search could use (the
//! retrieval-count writer) waits for them instead ([`wait_for_idle`]) and
//! runs at the least priority ([`lower_this_threads_priority`]).

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

/// Threads of this process running a search or maintenance now.
static BUSY: AtomicUsize = AtomicUsize::new(0);
/// Threads in `wait_for_idle`, and what wakes them when BUSY falls to 0.
static WAITING: AtomicUsize = AtomicUsize::new(0);
static IDLE: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// Marks the calling thread busy with a search or maintenance while it lives.
#[must_use = "the thread counts as busy only while the guard lives"]
pub struct Busy(());

impl Busy {
    pub fn start() -> Busy {
        BUSY.fetch_add(1, Ordering::SeqCst);
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        // Under the lock, so a waiter between its look at BUSY and its
        // wait cannot miss the wake-up.
        if BUSY.fetch_sub(1, Ordering::SeqCst) == 1 && WAITING.load(Ordering::SeqCst) > 0 {
            let _g = hold(&IDLE.0);
            IDLE.1.notify_all();
        }
    }
}

/// Whether work could take one more core: fewer busy threads (the caller
/// among them, if it marked itself) than the machine has cores.
pub fn core_to_spare() -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    BUSY.load(Ordering::Relaxed) < cores
}

/// Waits until no thread of this process is busy with a search or
/// maintenance, or `max` has passed: for background work that should
/// not take a core a search could use (`access.rs`). Woken by the last
/// busy thread's end, so it neither polls nor starts late.
pub fn wait_for_idle(max: std::time::Duration) {
    let deadline = std::time::Instant::now() + max;
    WAITING.fetch_add(1, Ordering::SeqCst);
    let mut g = hold(&IDLE.0);
    while BUSY.load(Ordering::SeqCst) > 0 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        g = IDLE
            .1
            .wait_timeout(g, left)
            .map_or_else(|e| e.into_inner().0, |r| r.0);
    }
    drop(g);
    WAITING.fetch_sub(1, Ordering::SeqCst);
}

/// Gives the calling thread the least scheduling priority (nice 19), for
/// background work that must not delay a search: when a search's thread
/// wakes on the core this one holds, the scheduler switches to it, where
/// at equal priority it let this one finish its time slice (up to
/// milliseconds). Linux sets it per thread; elsewhere nothing changes.
pub fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
    }
}

/// A mutex's guard, poisoned or not: every state kept here stays whole
/// across a panic (each change is one assignment).
fn hold<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The parts of one piece of work, each claimed once, by the thread that
/// posted them or by the helper.
pub struct Parts<T> {
    state: Mutex<PartsState<T>>,
    helper_done: Condvar,
}

struct PartsState<T> {
    next: usize,
    /// Parts the helper has claimed and not yet put back.
    helping: usize,
    results: Vec<Option<T>>,
}

impl<T> Parts<T> {
    fn new(n: usize) -> Parts<T> {
        Parts {
            state: Mutex::new(PartsState {
                next: 0,
                helping: 0,
                results: (0..n).map(|_| None).collect(),
            }),
            helper_done: Condvar::new(),
        }
    }

    /// Whether a part is left to claim: looked at before the helper's
    /// task takes any lock for the work.
    fn open(&self) -> bool {
        let s = hold(&self.state);
        s.next < s.results.len()
    }

    fn claim(&self, by_helper: bool) -> Option<usize> {
        let mut s = hold(&self.state);
        let i = s.next;
        if i >= s.results.len() {
            return None;
        }
        s.next += 1;
        if by_helper {
            s.helping += 1;
        }
        Some(i)
    }

    /// Does parts with `work` until none is left to claim. The helper
    /// calls it from the task it was posted.
    pub fn help(&self, work: impl Fn(usize) -> T) {
        self.take_all(work, true);
    }

    fn take_all(&self, work: impl Fn(usize) -> T, by_helper: bool) {
        while let Some(i) = self.claim(by_helper) {
            // Put back even if `work` panics (not expected: the searches
            // do not panic), so the poster never waits for it; the part
            // is then redone by the poster.
            let mut putback = PutBack {
                parts: self,
                i,
                result: None,
                by_helper,
            };
            putback.result = Some(work(i));
        }
    }
}

/// Puts a claimed part's result back (or its absence, on a panic) and
/// tells a poster waiting for the helper.
struct PutBack<'a, T> {
    parts: &'a Parts<T>,
    i: usize,
    result: Option<T>,
    by_helper: bool,
}

impl<T> Drop for PutBack<'_, T> {
    fn drop(&mut self) {
        let mut s = hold(&self.parts.state);
        if let Some(slot) = s.results.get_mut(self.i) {
            *slot = self.result.take();
        }
        if self.by_helper {
            s.helping -= 1;
            if s.helping == 0 {
                self.parts.helper_done.notify_all();
            }
        }
    }
}

type Task = Box<dyn FnOnce() + Send>;

/// The long-lived helper and the tasks posted to it, oldest first (a
/// task whose parts were all taken meanwhile returns at once).
struct Helper {
    tasks: Mutex<VecDeque<Task>>,
    posted: Condvar,
}

fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<&'static Helper>> = OnceLock::new();
    *HELPER.get_or_init(|| {
        let h: &'static Helper = Box::leak(Box::new(Helper {
            tasks: Mutex::new(VecDeque::new()),
            posted: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("memloop-search".into())
            .spawn(move || loop {
                let task = {
                    let mut tasks = hold(&h.tasks);
                    loop {
                        if let Some(t) = tasks.pop_front() {
                            break t;
                        }
                        tasks = h.posted.wait(tasks).unwrap_or_else(|e| e.into_inner());
                    }
                };
                // A panicking task loses only its own parts (redone by
                // its poster); the helper lives on.
                let _ = catch_unwind(AssertUnwindSafe(task));
            })
            .ok()
            .map(|_| h)
    })
}

/// Runs `first` here, then helps with `parts` parts: `work(i)` for each
/// part i, taken in order by whichever of two threads is free. The helper
/// is posted `help` at once: given the parts, it reaches the work's data
/// by itself (an `Arc`, a lock of its own taken before it claims any part,
/// so that no lock this thread holds can be waiting on it) and calls
/// [`Parts::help`]. So the parts share the second core with `first`
/// unevenly, as the time each takes decides. Results come back in part
/// order; a part the helper did not finish (it panicked) is done here, so
/// the answer is always whole.
pub fn share<R, T: Send + 'static>(
    first: impl FnOnce() -> R,
    parts: usize,
    help: impl FnOnce(&Parts<T>) + Send + 'static,
    work: impl Fn(usize) -> T,
) -> (R, Vec<T>) {
    let shared = Arc::new(Parts::new(parts));
    if let Some(h) = helper() {
        let mine = shared.clone();
        hold(&h.tasks).push_back(Box::new(move || {
            if mine.open() {
                help(&mine);
            }
        }));
        h.posted.notify_one();
    }
    let here = first();
    shared.take_all(&work, false);
    let results = {
        let mut s = hold(&shared.state);
        while s.helping > 0 {
            s = shared
                .helper_done
                .wait(s)
                .unwrap_or_else(|e| e.into_inner());
        }
        std::mem::take(&mut s.results)
    };
    let results = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|| work(i)))
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
        let started = Arc::new(AtomicUsize::new(0));
        let seen = started.clone();
        let work = move |i: usize| {
            let elsewhere = std::thread::current().id() != here;
            if elsewhere {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            (i * i, elsewhere)
        };
        let theirs = work.clone();
        let (a, parts) = share(
            || {
                while started.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                2 + 2
            },
            8,
            move |p| p.help(theirs),
            work,
        );
        assert_eq!(a, 4);
        let squares: Vec<usize> = parts.iter().map(|p| p.0).collect();
        assert_eq!(squares, (0..8).map(|i| i * i).collect::<Vec<_>>());
        assert!(parts.iter().any(|p| p.1));
    }

    #[test]
    fn a_helper_that_never_starts_is_not_waited_for() {
        // The helper's task blocks before it claims anything until the
        // poster has returned: the poster must do every part itself and
        // return without waiting for it.
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let theirs = gate.clone();
        let (_, parts) = share(
            || (),
            6,
            move |p: &Parts<usize>| {
                let (open, cv) = &*theirs;
                let mut g = hold(open);
                while !*g {
                    g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                drop(g);
                // Too late: every part was taken.
                p.help(|_| usize::MAX);
            },
            |i| i + 1,
        );
        assert_eq!(parts, vec![1, 2, 3, 4, 5, 6]);
        let (open, cv) = &*gate;
        *hold(open) = true;
        cv.notify_all();
    }

    #[test]
    fn a_part_whose_helper_panicked_is_redone_here() {
        let here = std::thread::current().id();
        let (_, parts) = share(
            || {
                // Give the helper the time to claim a part and panic.
                std::thread::sleep(std::time::Duration::from_millis(50));
            },
            3,
            |p: &Parts<u32>| p.help(|_| panic!("a helper's part that fails")),
            move |i| {
                assert_eq!(std::thread::current().id(), here);
                i as u32 * 10
            },
        );
        assert_eq!(parts, vec![0, 10, 20]);
    }

    #[test]
    fn waiting_for_idle_waits_while_a_thread_is_busy_up_to_its_bound() {
        let busy = Busy::start();
        let start = std::time::Instant::now();
        wait_for_idle(std::time::Duration::from_millis(20));
        assert!(start.elapsed() >= std::time::Duration::from_millis(20));
        drop(busy);
    }

    #[test]
    fn waiting_for_idle_ends_when_the_last_busy_thread_does() {
        let busy = Busy::start();
        let worker = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(busy);
        });
        let start = std::time::Instant::now();
        wait_for_idle(std::time::Duration::from_secs(30));
        // Woken, not timed out (other tests' guards are short).
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        let _ = worker.join();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_background_thread_runs_at_the_least_priority() {
        let nice = std::thread::spawn(|| {
            lower_this_threads_priority();
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
            // The fields after the command's closing parenthesis start
            // at the third; nice is the nineteenth.
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            after.split(' ').nth(16).unwrap().parse::<i32>().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(nice, 19);
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
