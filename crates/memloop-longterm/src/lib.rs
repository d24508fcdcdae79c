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
//! a read by id ([`MemoryStore::read`], the rule in [`lookup`]) answers
//! it as a deleted one, not found unless deleted ones are asked for. The
//! raw [`MemoryStore::get`] still reads it until
//! [`Upkeep::expire`] deletes it.
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
pub mod fusion;
pub mod graph;
pub mod keyword;
pub mod lookup;
pub mod outbox;
pub mod par;
pub mod pieces;
mod query;
pub mod rank;
pub mod store;
pub mod upkeep;
pub mod write;

pub use checks::check_limit;
pub use graph::GraphStore;
pub use lookup::{Lookup, RecordStatus};
pub use outbox::Outbox;
pub use query::{
    number_sessions, Decay, EmbedFn, Embedded, Entity, ExpireReport, ForgetReport, LinksFn,
    ListQuery, MemoryUpdate, OutboxEntry, SearchQuery, SessionInfo, Stats, TimeMode, TimeWindow,
    DEFAULT_SPEAKER_BOOST, DEFAULT_TIME_BOOST, DEFAULT_VECTOR_WEIGHT, MAX_LIMIT,
};
pub use store::MemoryStore;
pub use upkeep::Upkeep;

/// A long-term store: the memory store, its outbox, its graph and its
/// upkeep, which a backend implements as four traits (each with its
/// promises in its docs). The facade holds one as `Arc<dyn
/// LongTermStore>`; bring the traits into scope with `use
/// memloop_longterm::prelude::*` to call their methods on it.
pub trait LongTermStore: MemoryStore + Outbox + GraphStore + Upkeep {}

impl<T: MemoryStore + Outbox + GraphStore + Upkeep + ?Sized> LongTermStore for T {}

/// The store's traits, to call any of their methods on a `dyn LongTermStore`.
pub mod prelude {
    pub use crate::graph::GraphStore;
    pub use crate::outbox::Outbox;
    pub use crate::store::MemoryStore;
    pub use crate::upkeep::Upkeep;
    pub use crate::LongTermStore;
}
