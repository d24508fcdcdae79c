//! Retrieval counts, kept in memory and written in batches, for any
//! backend (`MemoryStore::record_access`): a search must not pay for a
//! write transaction (and its sync) to count its hits. Pending counts are
//! written by a background thread every few seconds, or at once when too
//! many are pending (the thread is woken: the search that filled the
//! batch does not write it inside its own time), on a flush and on stop;
//! a backend may also carry them in its next write's own transaction
//! (`take`). A crash loses at most those few seconds of counts:
//! statistics that feed decay, never memories. The same handle's reads
//! add what is pending (`merge_into`), so its searches see their counts
//! at once.

use std::collections::HashMap;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use memloop_core::{MemoryRecord, Result};

use crate::rank::RankInputs;

/// How often the background thread writes what is pending.
const WRITE_EVERY: Duration = Duration::from_secs(5);
/// Past this many pending memories the counts are written at once.
const MAX_PENDING: usize = 4096;
/// Counts per transaction of the background writer. Few, so each holds
/// a core briefly: 4,096 in one transaction held one for 4–5 ms at a
/// million memories (each update reads its pages, the commit writes them
/// all), and a search's helper thread waiting for that core waited as
/// long (docs/benchmarks.md, "A helper that is never waited for").
const CHUNK: usize = 32;
/// The longest the background writer holds a chunk back while a search
/// (or gc) runs: counts are statistics, a search's latency is not, but
/// the counts must still be written under a steady load.
const MAX_DEFER: Duration = Duration::from_millis(5);

/// Per (tenant, memory id): retrievals not yet written, and the latest
/// one's time (ms).
pub type PendingAccess = HashMap<(String, String), (u64, i64)>;

/// What carries a memory's retrieval counts: its id, its count and when
/// it was last retrieved.
pub trait Retrieved {
    fn counts(&mut self) -> (&str, &mut u64, &mut Option<i64>);
}

impl Retrieved for MemoryRecord {
    fn counts(&mut self) -> (&str, &mut u64, &mut Option<i64>) {
        (&self.id, &mut self.access_count, &mut self.last_accessed_at)
    }
}

impl Retrieved for RankInputs {
    fn counts(&mut self) -> (&str, &mut u64, &mut Option<i64>) {
        (&self.id, &mut self.access_count, &mut self.last_accessed_at)
    }
}

/// Writes a batch of counts in one transaction: `access_count` + n,
/// `last_accessed_at` the later of the stored one and the batch's.
/// Unknown ids are ignored.
pub type WriteAccess = dyn Fn(&PendingAccess) -> Result<()> + Send + Sync;

/// What the background writer is told.
enum Wake {
    /// Too many counts are pending: write them now.
    Write,
    /// The store is closing.
    Stop,
}

pub struct AccessBatch {
    pending: Arc<Mutex<PendingAccess>>,
    write: Arc<WriteAccess>,
    wake: Mutex<Option<Sender<Wake>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counts stay consistent after a panic elsewhere: each update is whole.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AccessBatch {
    /// Starts the background writer, which writes with `write` (on a
    /// connection of the backend's choosing: its sync should not hold up
    /// searches).
    pub fn start(write: impl Fn(&PendingAccess) -> Result<()> + Send + Sync + 'static) -> Self {
        Self::start_every(WRITE_EVERY, write)
    }

    /// [`start`](Self::start), writing every `every` when not woken (the
    /// tests set an hour, so only a wake can write).
    fn start_every(
        every: Duration,
        write: impl Fn(&PendingAccess) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        let write: Arc<WriteAccess> = Arc::new(write);
        let pending: Arc<Mutex<PendingAccess>> = Arc::default();
        let (wake, woken) = channel::<Wake>();
        let (bg_write, bg_pending) = (write.clone(), pending.clone());
        let thread = std::thread::Builder::new()
            .name("memloop-access".into())
            .spawn(move || {
                crate::par::lower_this_threads_priority();
                loop {
                    match woken.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) | Ok(Wake::Write) => {
                            // A failure (a busy store) keeps the counts: the
                            // next round, write or flush tries again.
                            let _ = write_in_chunks(bg_write.as_ref(), &bg_pending);
                        }
                        Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .ok();
        AccessBatch {
            pending,
            write,
            wake: Mutex::new(Some(wake)),
            thread: Mutex::new(thread),
        }
    }

    /// Counts one retrieval of each id at `now`.
    pub fn record(&self, tenant: &str, ids: &[&str], now: i64) -> Result<()> {
        let filled = {
            let mut p = lock(&self.pending);
            let before = p.len();
            for id in ids {
                let e = p
                    .entry((tenant.to_string(), (*id).to_string()))
                    .or_insert((0, now));
                e.0 += 1;
                e.1 = e.1.max(now);
            }
            before < MAX_PENDING && p.len() >= MAX_PENDING
        };
        if filled {
            // Written by the background thread; here only without one.
            let woke = lock(&self.wake)
                .as_ref()
                .is_some_and(|w| w.send(Wake::Write).is_ok());
            if !woke {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Retrievals of a memory not yet written: (count, latest time).
    /// (Readers use `merge_into`; the tests look at one memory.)
    #[cfg(test)]
    fn pending(&self, tenant: &str, id: &str) -> Option<(u64, i64)> {
        let p = lock(&self.pending);
        if p.is_empty() {
            return None;
        }
        p.get(&(tenant.to_string(), id.to_string())).copied()
    }

    /// Adds the retrievals not yet written to the records' counts (whole
    /// records or a search's [`RankInputs`]).
    pub fn merge_into<'a, R: Retrieved + 'a>(
        &self,
        tenant: &str,
        records: impl IntoIterator<Item = &'a mut R>,
    ) {
        let p = lock(&self.pending);
        if p.is_empty() {
            return;
        }
        let mut key = (tenant.to_string(), String::new());
        for r in records {
            let (id, count, last) = r.counts();
            id.clone_into(&mut key.1);
            if let Some(&(n, at)) = p.get(&key) {
                *count = count.saturating_add(n);
                *last = Some(last.map_or(at, |t| t.max(at)));
            }
        }
    }

    /// Takes what is pending, for a write to carry in its own transaction
    /// (if that transaction then fails, those counts are lost with it).
    pub fn take(&self) -> PendingAccess {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Writes what is pending now.
    pub fn flush(&self) -> Result<()> {
        write_pending(self.write.as_ref(), &self.pending)
    }

    /// Writes what is pending and stops the background thread.
    pub fn stop(&self) {
        let _ = self.flush();
        if let Some(wake) = lock(&self.wake).take() {
            let _ = wake.send(Wake::Stop);
        }
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }
}

/// Takes the pending counts and writes them.
fn write_pending(write: &WriteAccess, pending: &Mutex<PendingAccess>) -> Result<()> {
    let batch = std::mem::take(&mut *lock(pending));
    write_or_put_back(write, pending, batch)
}

/// The background writer's round: the counts pending when it starts, a
/// chunk at a time, each once no search runs (or after `MAX_DEFER`). The
/// rest stay pending meanwhile, so searches still see them.
fn write_in_chunks(write: &WriteAccess, pending: &Mutex<PendingAccess>) -> Result<()> {
    let mut left = lock(pending).len();
    while left > 0 {
        crate::par::wait_for_idle(MAX_DEFER);
        let chunk: PendingAccess = {
            let mut p = lock(pending);
            let keys: Vec<(String, String)> = p.keys().take(CHUNK).cloned().collect();
            keys.into_iter()
                .filter_map(|k| p.remove_entry(&k))
                .collect()
        };
        if chunk.is_empty() {
            break;
        }
        left = left.saturating_sub(chunk.len());
        write_or_put_back(write, pending, chunk)?;
    }
    Ok(())
}

/// Writes `batch`; if the write fails its counts go back (added to what
/// came meanwhile), for the next try.
fn write_or_put_back(
    write: &WriteAccess,
    pending: &Mutex<PendingAccess>,
    batch: PendingAccess,
) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let result = write(&batch);
    if result.is_err() {
        let mut p = lock(pending);
        for (key, (n, at)) in batch {
            let e = p.entry(key).or_insert((0, at));
            e.0 += n;
            e.1 = e.1.max(at);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full batch wakes the background writer, which writes it in small
    /// transactions, all of them, holding the first back while a search
    /// runs (for `MAX_DEFER`).
    #[test]
    fn the_background_writer_writes_small_chunks_after_searches() {
        use std::time::Instant;
        let chunks: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
        let c = chunks.clone();
        // Never written on the clock: only the full batch's wake writes.
        let batch = AccessBatch::start_every(Duration::from_secs(3600), move |b| {
            lock(&c).push((b.len(), Instant::now()));
            Ok(())
        });
        // A search runs while a full batch wakes the writer.
        let search = crate::par::Busy::start();
        let ids: Vec<String> = (0..MAX_PENDING).map(|i| format!("m{i}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let recorded = Instant::now();
        batch.record("t", &ids, 1).unwrap();
        std::thread::sleep(MAX_DEFER * 4);
        drop(search);
        // A bound for a hang, not a timing: a loaded machine takes far less.
        let deadline = Instant::now() + Duration::from_secs(60);
        while lock(&chunks).iter().map(|c| c.0).sum::<usize>() < MAX_PENDING {
            assert!(Instant::now() < deadline, "a full batch woke no write");
            std::thread::sleep(Duration::from_millis(2));
        }
        batch.stop();
        let got = lock(&chunks).clone();
        assert_eq!(got.iter().map(|c| c.0).sum::<usize>(), MAX_PENDING);
        assert!(got.iter().all(|c| c.0 <= CHUNK));
        assert!(got[0].1 >= recorded + MAX_DEFER, "the first chunk waited");
    }

    /// A failed write keeps its counts, added to those recorded since.
    #[test]
    fn a_failed_write_puts_its_counts_back() {
        let fail = Arc::new(Mutex::new(true));
        let written: Arc<Mutex<Vec<PendingAccess>>> = Arc::default();
        let (f, w) = (fail.clone(), written.clone());
        let batch = AccessBatch::start(move |b| {
            if *lock(&f) {
                return Err(memloop_core::Error::Internal("store busy".into()));
            }
            lock(&w).push(b.clone());
            Ok(())
        });
        batch.record("t", &["a", "b"], 10).unwrap();
        assert!(batch.flush().is_err());
        batch.record("t", &["a"], 20).unwrap();
        assert_eq!(batch.pending("t", "a"), Some((2, 20)));
        *lock(&fail) = false;
        batch.flush().unwrap();
        assert_eq!(batch.pending("t", "a"), None);
        let got = lock(&written).clone();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0][&("t".to_string(), "a".to_string())], (2, 20));
        assert_eq!(got[0][&("t".to_string(), "b".to_string())], (1, 10));
        batch.stop();
    }
}
