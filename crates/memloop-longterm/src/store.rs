//! The memory store itself: records with history, their writes (each one
//! transaction) and reads, and hybrid search. Its promises are the crate's
//! (durability, tenants as walls, history kept, single supersession,
//! idempotent inserts, expired is gone, errors that name the store).

use memloop_core::time::Clock;
use memloop_core::{
    EmbedderInfo, Event, HistoryEntry, MemoryRecord, NewMemory, Result, Scope, SearchHit,
};

use crate::{
    Entity, ForgetReport, ListQuery, Lookup, MemoryUpdate, SearchQuery, SessionInfo, Stats,
};

/// Memories with history and search, in partitions by tenant and owner.
/// Shared across threads.
pub trait MemoryStore: Send + Sync {
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

    /// Removes every memory of a scope (narrowed to its agent or session
    /// when it names one) and the scope's queued writes. History records
    /// that they existed, unless `purge`, which deletes it too and leaves
    /// no copy of the text in the store's files.
    fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport>;

    // --- reads ---

    /// One memory of `tenant`, current or not (expired too, until
    /// `expire` deletes it): for the write pipeline's look at past
    /// versions. A read by id on a caller's behalf is [`MemoryStore::read`].
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

    /// Every change of one memory of `tenant`, oldest first.
    fn history(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>>;

    /// Hybrid search (keywords and the query's `vector`) in the query's scope.
    fn search(&self, query: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>>;

    fn stats(&self) -> Result<Stats>;
}
