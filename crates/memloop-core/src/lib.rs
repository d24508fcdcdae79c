//! Core of memloop: the record model, scopes, filters, errors, the traits that
//! backends and providers implement, and pure ranking logic. No I/O lives here.

pub mod context;
mod error;
pub mod filter;
pub mod links;
pub mod llm;
mod record;
mod scope;
pub mod short_term;
pub mod text;
pub mod time;
mod traits;

pub use error::{shown_value, Error, ErrorClass, Result, StoreError};
pub use filter::Filter;
pub use llm::{ChatMessage, ChatRequest, ChatResponse, Llm};
pub use record::{
    check_time, expires_after, parse_ttl, Event, HistoryEntry, Kind, MemoryRecord, NewMemory,
    Provenance, Replacement, RerankScores, SearchHit, SignalScores, WriteResult, MAX_TIME_MS,
    MAX_TTL_MS, MIN_TIME_MS,
};
pub use scope::{validate_memory_id, Scope, MAX_ID_BYTES};
pub use traits::{Embedder, EmbedderInfo};

/// Longest memory text accepted, in bytes. Longer input is refused, not truncated,
/// so nothing is silently lost; split it before adding.
pub const MAX_TEXT_BYTES: usize = 32 * 1024;
/// Most vectors a memory has beside its first (`NewMemory::pieces`): a
/// text of `MAX_TEXT_BYTES` is about 8,000 tokens, some 42 overlapping
/// windows of 256.
pub const MAX_PIECES: usize = 63;

/// Milliseconds since the Unix epoch, the one clock used for every stored time.
pub fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
