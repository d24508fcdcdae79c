//! The seam in front of memloop's long-term store. The facade, the write
//! pipeline and every front end reach memories through [`LongTermStore`]
//! only; the embedded SQLite store (`memloop-store`) is one implementation,
//! and a server-backed one is another, not a fork.
//!
//! # What every implementation promises
//!
//! **Acknowledged means durable.** A write method that returns `Ok` has
//! committed: the change survives the process being killed (`kill -9`) at
//! any later moment, and every later read through any handle on the same
//! store (another thread, another process, another server on the same
//! database) sees it. A write that returns `Err` changed nothing: each
//! method is one transaction, all or nothing.
//!
//! **Tenants are walls.** A tenant sees only its own memories. A by-id
//! method given another tenant's id answers [`Error::NotFound`] exactly as
//! for an unknown id, so ids cannot be probed across tenants; searches,
//! lists, counts, entities and forget read and touch one tenant's partition
//! (`Scope::partition`) and nothing else.
//!
//! **History is kept.** `update`, `delete` and `supersede` never lose the
//! old text: it stays in `history`, and a deleted or superseded memory
//! keeps its row with `valid_until` set, readable by id and by `as_of`
//! queries. Only `forget` removes rows (and `forget` with `purge` also
//! their history).
//!
//! **Supersession is atomic and single.** `supersede(scope, old, new)`
//! ends `old`'s validity and adds `new` in one transaction, and only if
//! `old` is still current and in `scope`'s partition: of two concurrent
//! supersessions of the same memory exactly one succeeds, the other answers
//! [`Error::InvalidInput`] ("already deleted or superseded"), so a fact has
//! at most one current successor. In the same transaction the current
//! episodes `old` was distilled from (its session and a turn id in common)
//! are marked as holding a claim `new` replaced (`superseded_by`): they stay
//! current, as what was said, and `search` names the current replacement on
//! them (`SearchHit::superseded_by`, following later supersessions) and
//! ranks them below it when both are found.
//!
//! **Idempotent inserts.** Inserting a text that is current in the same
//! scope with the same kind (the normalised content hash; for an episode
//! also its session and turn) stores nothing and reports `Event::Noop` with
//! the existing memory.
//!
//! **Expired is gone.** A memory whose `expires_at` has passed (by the
//! store's [`Clock`]) is not current from that moment: no search returns
//! it or gives it one of its candidate places, and lists, counts,
//! entities, sessions, graph entities and `Stats::current` leave it out;
//! a read by id ([`LongTermStore::read`], the rule in [`lookup`]) answers
//! it as a deleted one, not found unless deleted ones are asked for. The
//! raw [`LongTermStore::get`] still reads it until
//! [`LongTermStore::expire`] deletes it.
//!
//! **Errors name the store.** Every error that leaves an implementation
//! says which store it is about (a data directory, a database), carries
//! the engine's own error as its `source` where there is one
//! ([`memloop_core::StoreError`]), and is classed ([`Error::class`]) so a
//! front end can tell a busy store (retry) from damage or bad input.
//!
//! [`Error::NotFound`]: memloop_core::Error::NotFound
//! [`Error::InvalidInput`]: memloop_core::Error::InvalidInput
//! [`Error::class`]: memloop_core::Error::class

pub mod access;
pub mod checks;
pub mod dump;
pub mod expiry;
pub mod graph;
pub mod keyword;
pub mod lookup;
pub mod par;
pub mod pieces;
mod query;
pub mod rank;
pub mod write;

use memloop_core::time::Clock;
use memloop_core::{
    EmbedderInfo, Event, HistoryEntry, MemoryRecord, NewMemory, Result, Scope, SearchHit,
};
use serde_json::Value;

pub use lookup::{Lookup, RecordStatus};
pub use query::{
    number_sessions, Decay, EmbedFn, Embedded, Entity, ExpireReport, ForgetReport, ListQuery,
    MemoryUpdate, OutboxEntry, SearchQuery, SessionInfo, Stats, TimeMode, TimeWindow,
    DEFAULT_SPEAKER_BOOST, DEFAULT_TIME_BOOST, DEFAULT_VECTOR_WEIGHT, MAX_LIMIT,
};

/// A long-term store: records with history, hybrid search, and the
/// outbox of writes waiting for a retry. See the crate docs for the
/// promises every implementation keeps. Shared across threads.
pub trait LongTermStore: Send + Sync {
    /// Where the store is, as errors and `memloop stats` name it (a
    /// directory, or a database URL without its password).
    fn location(&self) -> String;

    /// The embedder whose vectors the store holds; vectors of another
    /// model are refused.
    fn embedder(&self) -> &EmbedderInfo;

    /// The clock the store stamps writes and judges expiry and decay by;
    /// the facade reads it too, so a TTL it turns into `expires_at` agrees
    /// with the store (a test sets a manual one instead of waiting).
    fn clock(&self) -> Clock {
        Clock::system()
    }

    // --- writes: each one transaction ---

    /// Stores memories in one scope, with their vectors. A text already
    /// current in the scope is a NOOP returning the existing record.
    fn insert(
        &self,
        scope: &Scope,
        items: Vec<(NewMemory, Vec<f32>)>,
    ) -> Result<Vec<(MemoryRecord, Event)>>;

    /// Changes a current memory in place; returns it and its old text,
    /// which stays in its history.
    fn update(
        &self,
        tenant: &str,
        id: &str,
        change: MemoryUpdate,
    ) -> Result<(MemoryRecord, String)>;

    /// Ends a current memory's validity (it stays readable by id and in
    /// history); `reason` goes into its history.
    fn delete(&self, tenant: &str, id: &str, reason: Option<&str>) -> Result<MemoryRecord>;

    /// Replaces the current memory `old_id` by `new` in `scope`, atomically;
    /// returns (the new record, the old one with `valid_until` set).
    fn supersede(
        &self,
        scope: &Scope,
        old_id: &str,
        new: (NewMemory, Vec<f32>),
        reason: &str,
    ) -> Result<(MemoryRecord, MemoryRecord)>;

    /// Counts a use of memories (a retrieval, a NOOP write that met them
    /// again), for decay. Unknown ids and other tenants' are ignored.
    fn touch(&self, tenant: &str, ids: &[&str]) -> Result<()>;

    /// Counts a retrieval of memories (the hits a search returned), for
    /// decay. Unlike `touch`, an implementation may batch it: the count
    /// may reach storage later (with the next write, a flush, on drop, or
    /// after a few seconds), so a crash can lose the last few seconds of
    /// counts, which are statistics, never memories. Searches of the same
    /// handle see the counts at once. Unknown ids are ignored.
    fn record_access(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        self.touch(tenant, ids)
    }

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

    /// Removes every memory of a scope (narrowed to its agent or session
    /// when it names one) and the scope's queued writes. History records
    /// that they existed, unless `purge`, which deletes it too and leaves
    /// no copy of the text in the store's files.
    fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport>;

    /// Re-embeds every memory, current and past, then records `embed`'s
    /// model as the store's. Returns how many were re-embedded.
    fn reindex(&self, embed: &EmbedFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize>;

    // --- reads ---

    /// One memory of `tenant`, current or not (expired too, until
    /// `expire` deletes it): for the write pipeline's look at past
    /// versions. A read by id on a caller's behalf is [`LongTermStore::read`].
    fn get(&self, tenant: &str, id: &str) -> Result<MemoryRecord>;

    /// One memory of `tenant` as `lookup` admits it by the store's clock:
    /// a deleted, superseded or expired one is `Error::NotCurrent` (class
    /// not found) unless `Lookup::IncludeDeleted`. Written once here, so
    /// every backend answers alike.
    fn read(&self, tenant: &str, id: &str, lookup: Lookup) -> Result<MemoryRecord> {
        lookup.admit(self.get(tenant, id)?, self.clock().now())
    }

    fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>>;

    /// How many memories `list` pages through (its limit and offset ignored).
    fn count(&self, query: &ListQuery) -> Result<usize>;

    /// The users, and agents without a user, with current (not expired)
    /// memories in `tenant`.
    fn entities(&self, tenant: &str) -> Result<Vec<Entity>>;

    /// The sessions of `scope`'s user (or agent without a user), narrowed
    /// to its agent when it names one, newest first: each with its ordinal
    /// (1 = the first), start and end, from the current (not expired)
    /// memories written in it; memories without a session are in none.
    /// When `scope` names a session, that one alone (ordinal unchanged).
    fn sessions(&self, scope: &Scope) -> Result<Vec<SessionInfo>>;

    /// The entities named by current memories of `scope` (its partition,
    /// narrowed as `scope` narrows it), most mentioned first. A backend
    /// without a graph answers none.
    fn graph_entities(&self, scope: &Scope) -> Result<Vec<graph::GraphEntity>> {
        let _ = scope;
        Ok(Vec::new())
    }

    /// One entity of `scope` by name (any case), with its relations, the
    /// entities named beside it and the memories naming it, or None.
    fn entity_links(&self, scope: &Scope, name: &str) -> Result<Option<graph::EntityLinks>> {
        let _ = (scope, name);
        Ok(None)
    }

    /// The current memories of `scope` that share an entity with one of
    /// the memories `seed_ids` (themselves left out), within `limits`.
    fn linked(
        &self,
        scope: &Scope,
        seed_ids: &[&str],
        limits: &graph::LinkLimits,
    ) -> Result<Vec<graph::Linked>> {
        let _ = (scope, seed_ids, limits);
        Ok(Vec::new())
    }

    /// Every change of one memory of `tenant`, oldest first.
    fn history(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>>;

    /// Hybrid search (keywords and the query's `vector`) in the query's scope.
    fn search(&self, query: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>>;

    fn stats(&self) -> Result<Stats>;

    // --- upkeep: never needed for durability ---

    /// Saves derived indexes so the next open is fast.
    fn flush(&self) -> Result<()>;

    /// Saves derived indexes and prunes what they no longer need; returns
    /// how many change-log entries were deleted.
    fn compact(&self) -> Result<usize>;

    // --- the outbox: writes waiting for a retry, as durable as memories ---

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
