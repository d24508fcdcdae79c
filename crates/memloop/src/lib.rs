//! memloop: a memory engine for LLM agents.
//!
//! ```no_run
//! use memloop::{Memory, NewMemory, Scope, SearchQuery};
//!
//! let memory = Memory::open("./memloop-data")?;
//! let alice = Scope::user("alice");
//! memory.add(&alice, NewMemory::text("Alice is allergic to peanuts"))?;
//! for hit in memory.search(&SearchQuery::new(alice, "what food should I avoid?"))? {
//!     println!("{:.3} {}", hit.score, hit.record.text);
//! }
//! # Ok::<(), memloop::Error>(())
//! ```

mod config;
mod lazy;
mod memory;

pub use config::{default_data_dir, Config, EmbedderConfig};
pub use memory::Memory;

pub use memloop_core::{
    filter, now_millis, text, time, Embedder, EmbedderInfo, Error, ErrorClass, Event, Filter,
    HistoryEntry, Kind, MemoryRecord, NewMemory, Provenance, Result, Scope, SearchHit,
    SignalScores, WriteResult, MAX_TEXT_BYTES,
};
pub use memloop_embed::{MiniLmEmbedder, OpenAiEmbedder, OpenAiEmbedderConfig};
pub use memloop_store::vector;
pub use memloop_store::{
    Durability, EmbeddedStore, ForgetReport, ListQuery, MemoryUpdate, SearchQuery, Stats,
    StoreOptions,
};
