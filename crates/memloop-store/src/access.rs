//! Retrieval counts, kept in memory and written in batches: a search must
//! not pay for a write transaction (and, with `Durability::Full`, an
//! fsync) to count its hits. Pending counts go into the next write's own
//! transaction, a flush, the store's drop, or, on an idle store, a
//! transaction of their own every few seconds from a background thread,
//! which is also woken when too many are pending (the search that found
//! them full used to write them itself, a transaction of thousands of
//! updates inside one search's time).
//! A crash loses at most those few seconds of counts: statistics that
//! feed decay, never memories. The transactions of their own run on a
//! connection of their own, so their sync never holds up the searches
//! waiting on the store's shared connection.

use std::collections::HashMap;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use memloop_core::time::Clock;
use memloop_core::Result;
use rusqlite::{params, Connection, Transaction};

use crate::{lock, sql_err, write_tx};

/// How often the background thread writes what is pending.
const WRITE_EVERY: Duration = Duration::from_secs(5);
/// Past this many pending memories the counts are written at once.
const MAX_PENDING: usize = 4096;

/// Per (tenant, id): retrievals not yet written, and the latest one's time.
type Pending = HashMap<(String, String), (u64, i64)>;

/// What the background writer is told.
enum Wake {
    /// Too many counts are pending: write them now.
    Write,
    /// The store is closing.
    Stop,
}

pub(crate) struct AccessLog {
    pending: Arc<Mutex<Pending>>,
    /// This log's own connection, shared with its thread.
    conn: Arc<Mutex<Connection>>,
    clock: Clock,
    wake: Mutex<Option<Sender<Wake>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl AccessLog {
    /// Starts the background writer on `conn`, a connection of its own.
    pub(crate) fn start(conn: Connection, clock: Clock) -> AccessLog {
        let conn = Arc::new(Mutex::new(conn));
        let pending: Arc<Mutex<Pending>> = Arc::default();
        let (wake, woken) = channel::<Wake>();
        let (bg_conn, bg_pending) = (conn.clone(), pending.clone());
        let thread = std::thread::Builder::new()
            .name("memloop-access".into())
            .spawn(move || loop {
                match woken.recv_timeout(WRITE_EVERY) {
                    Err(RecvTimeoutError::Timeout) | Ok(Wake::Write) => {
                        // Failure (a busy store) keeps nothing back for
                        // long: the next write or flush tries again.
                        let _ = write_pending(&bg_conn, &bg_pending);
                    }
                    Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                }
            })
            .ok();
        AccessLog {
            pending,
            conn,
            clock,
            wake: Mutex::new(Some(wake)),
            thread: Mutex::new(thread),
        }
    }

    /// Counts one retrieval of each id, now.
    pub(crate) fn record(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        let now = self.clock.now();
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
                write_pending(&self.conn, &self.pending)?;
            }
        }
        Ok(())
    }

    /// Retrievals of a memory not yet written: (count, latest time).
    pub(crate) fn pending(&self, tenant: &str, id: &str) -> Option<(u64, i64)> {
        let p = lock(&self.pending);
        if p.is_empty() {
            return None;
        }
        p.get(&(tenant.to_string(), id.to_string())).copied()
    }

    /// Writes what is pending inside a write's own transaction (the caller
    /// holds the connection). If that transaction then fails, those counts
    /// are lost with it.
    pub(crate) fn write_in(&self, tx: &Transaction<'_>) -> Result<()> {
        let batch = std::mem::take(&mut *lock(&self.pending));
        apply(tx, &batch)
    }

    /// Writes what is pending in a transaction of its own.
    pub(crate) fn flush(&self) -> Result<()> {
        write_pending(&self.conn, &self.pending)
    }

    /// Writes what is pending and stops the background thread.
    pub(crate) fn stop(&self) {
        let _ = self.flush();
        if let Some(wake) = lock(&self.wake).take() {
            let _ = wake.send(Wake::Stop);
        }
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }
}

fn write_pending(conn: &Mutex<Connection>, pending: &Mutex<Pending>) -> Result<()> {
    let mut conn = lock(conn);
    if lock(pending).is_empty() {
        return Ok(());
    }
    // Taken once the transaction holds the lock: a busy store keeps them.
    let tx = write_tx(&mut conn)?;
    let batch = std::mem::take(&mut *lock(pending));
    apply(&tx, &batch)?;
    tx.commit().map_err(sql_err)
}

fn apply(tx: &Transaction<'_>, batch: &Pending) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut stmt = tx
        .prepare_cached(
            "UPDATE memories SET access_count = access_count + ?1, \
             last_accessed_at = max(coalesce(last_accessed_at, ?2), ?2) \
             WHERE id = ?3 AND tenant = ?4",
        )
        .map_err(sql_err)?;
    for ((tenant, id), (count, at)) in batch {
        stmt.execute(params![*count as i64, at, id, tenant])
            .map_err(sql_err)?;
    }
    Ok(())
}
