//! The background sweeper a long-lived [`Memory`] owns: every
//! `[forgetting] gc_interval` it replays the queued writes that are due
//! (the outbox) and runs [`Memory::gc`], so forgetting happens wherever
//! memories are held open (`memloop serve`, `memloop mcp`, a library
//! user's handle), not only when someone runs `memloop gc`. A plain
//! thread, since the library needs no async runtime; dropping the handle
//! wakes it at once (a closed channel), so a drop waits at most for a
//! sweep in progress, never for an interval.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use memloop_core::{Error, Result};
use memloop_llm::LlmConfig;

use crate::pipeline::WritePipeline;
use crate::Memory;

/// Queued writes replayed per sweep at most: a backlog is worked off over
/// several sweeps rather than holding one for long.
const REPLAY_PER_SWEEP: usize = 1_000;

/// Replays due outbox entries through a write pipeline; the events applied.
pub(crate) type Replay = Box<dyn FnMut(&Memory) -> Result<usize> + Send>;

/// What the sweeper has done since the handle opened (for `/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepStats {
    /// The interval between sweeps, in milliseconds.
    pub interval_ms: u64,
    /// Sweeps finished, failed ones included.
    pub runs: u64,
    /// Sweeps in which the replay or gc failed (logged; tried again next time).
    pub failures: u64,
    /// When the last sweep finished, by the store's clock (Unix ms).
    pub last_run_at: Option<i64>,
    /// Memories deleted because their TTL had passed, in all sweeps.
    pub expired_deleted: u64,
    /// Events the replayed outbox entries applied, in all sweeps.
    pub outbox_events_applied: u64,
}

#[derive(Default)]
struct Counters {
    runs: AtomicU64,
    failures: AtomicU64,
    /// `i64::MIN` until the first sweep finishes.
    last_run_at: AtomicI64,
    expired_deleted: AtomicU64,
    outbox_events_applied: AtomicU64,
}

/// The running sweeper; stopping it is dropping it.
pub(crate) struct Sweeper {
    /// Dropped first: the thread's `recv_timeout` then returns at once.
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    every: Duration,
}

impl Sweeper {
    /// Starts sweeping `memory` (a handle without a sweeper of its own,
    /// sharing the store) every `every`, the first time one interval from now.
    pub(crate) fn start(memory: Memory, every: Duration, mut replay: Replay) -> Result<Sweeper> {
        let every = every.max(Duration::from_millis(1));
        let counters = Arc::new(Counters {
            last_run_at: AtomicI64::new(i64::MIN),
            ..Counters::default()
        });
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = counters.clone();
        let thread = std::thread::Builder::new()
            .name("memloop-sweeper".into())
            .spawn(move || {
                // Only a closed channel is ever seen: nothing is sent on it.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    sweep(&memory, &mut replay, &shared);
                }
            })
            .map_err(|e| Error::Internal(format!("cannot start the sweeper thread: {e}")))?;
        Ok(Sweeper {
            stop: Some(stop),
            thread: Some(thread),
            counters,
            every,
        })
    }

    pub(crate) fn stats(&self) -> SweepStats {
        let c = &self.counters;
        let last = c.last_run_at.load(Ordering::Relaxed);
        SweepStats {
            interval_ms: self.every.as_millis().min(u64::MAX as u128) as u64,
            runs: c.runs.load(Ordering::Relaxed),
            failures: c.failures.load(Ordering::Relaxed),
            last_run_at: (last != i64::MIN).then_some(last),
            expired_deleted: c.expired_deleted.load(Ordering::Relaxed),
            outbox_events_applied: c.outbox_events_applied.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::warn!("the sweeper thread panicked");
            }
        }
    }
}

/// One sweep: the outbox first (what it writes gets its TTLs like any
/// write), then gc. A failure of either is logged and counted; the other
/// still runs, and both run again at the next interval.
fn sweep(memory: &Memory, replay: &mut Replay, c: &Counters) {
    let mut failed = false;
    match replay(memory) {
        Ok(n) => {
            c.outbox_events_applied
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        Err(e) => {
            failed = true;
            tracing::warn!(error = %e, "sweep: queued writes were not replayed; tried again at the next interval");
        }
    }
    match memory.gc() {
        Ok(r) => {
            c.expired_deleted
                .fetch_add(r.expired_deleted as u64, Ordering::Relaxed);
            tracing::info!(
                expired_deleted = r.expired_deleted,
                index_log_entries_pruned = r.index_log_entries_pruned,
                "sweep: gc"
            );
        }
        Err(e) => {
            failed = true;
            tracing::warn!(error = %e, "sweep: gc failed; it runs again at the next interval");
        }
    }
    if failed {
        c.failures.fetch_add(1, Ordering::Relaxed);
    }
    c.last_run_at.store(memory.clock().now(), Ordering::Relaxed);
    c.runs.fetch_add(1, Ordering::Relaxed);
}

/// Replays due outbox entries as `memloop gc` does: through the write
/// pipeline with the configured LLM (rules without one). The LLM client is
/// built only once an entry waits, so a handle whose outbox stays empty
/// never needs its key.
pub(crate) fn replay_with(llm: Option<LlmConfig>) -> Replay {
    let mut pipeline: Option<WritePipeline> = None;
    Box::new(move |memory: &Memory| {
        if memory.store().outbox_len()? == 0 {
            return Ok(0);
        }
        let p = match &mut pipeline {
            Some(p) => p,
            None => {
                let llm = llm.as_ref().map(LlmConfig::build).transpose()?;
                pipeline.insert(WritePipeline::new(llm.map(Arc::from)))
            }
        };
        Ok(p.drain_outbox(memory, REPLAY_PER_SWEEP, false)?.len())
    })
}
