//! memloop: a memory engine for LLM agents.
//!
//! ```
//! use memloop::{Memory, NewMemory, Scope, SearchQuery};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let data_dir = dir.path();
//! let memory = Memory::open(data_dir)?; // needs the model: scripts/fetch-model.sh
//! let alice = Scope::user("alice");
//! memory.add(&alice, NewMemory::text("Alice is allergic to peanuts"))?;
//! let hits = memory.search(&SearchQuery::new(alice, "what food should I avoid?"))?;
//! assert_eq!(hits[0].record.text, "Alice is allergic to peanuts");
//! println!("{:.3} {:?}", hits[0].score, hits[0].scores);
//! # Ok::<(), memloop::Error>(())
//! ```

mod config;
mod lazy;
mod memory;

pub use config::{default_data_dir, Config, EmbedderConfig};
pub use memory::Memory;

pub use memloop_core::{
    filter, now_millis, short_term, text, time, Embedder, EmbedderInfo, Error, ErrorClass, Event,
    Filter, HistoryEntry, Kind, MemoryRecord, NewMemory, Provenance, Result, Scope, SearchHit,
    SignalScores, WriteResult, MAX_TEXT_BYTES,
};
pub use memloop_embed::{MiniLmEmbedder, OpenAiEmbedder, OpenAiEmbedderConfig};
pub use memloop_store::vector;
pub use memloop_store::{
    Durability, EmbeddedStore, ForgetReport, ListQuery, MemoryUpdate, SearchQuery, Stats,
    StoreOptions,
};
