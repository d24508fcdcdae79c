//! The outbox: writes that failed (an LLM or embedder down) waiting for a
//! retry. An entry is as durable as a memory (acknowledged means
//! committed), is replayed in its own scope by the caller, and is dropped
//! by a `forget` of the scope it would write to
//! (`write::forget_drops_queued`).

use memloop_core::{Result, Scope};
use serde_json::Value;

use crate::OutboxEntry;

/// Writes waiting for a retry, of every tenant, kept beside the memories.
pub trait Outbox: Send + Sync {
    /// Queues a write (the caller's own payload) that failed with `error`;
    /// returns its id.
    fn outbox_push(&self, scope: &Scope, payload: &Value, error: &str) -> Result<i64>;

    /// Queued writes due now (with `all`, due or not), oldest first, of
    /// every tenant: the caller replays each in its own scope.
    fn outbox_due(&self, limit: usize, all: bool) -> Result<Vec<OutboxEntry>>;

    /// The write went through: drop the entry.
    fn outbox_done(&self, id: i64) -> Result<()>;

    /// It failed again: try later, backing off with the number of attempts.
    fn outbox_failed(&self, id: i64, error: &str) -> Result<()>;

    /// How many writes wait.
    fn outbox_len(&self) -> Result<usize>;
}
