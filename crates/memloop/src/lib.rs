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
mod events;
mod expand;
mod forgetting;
mod lazy;
mod memory;
mod open;
mod pipeline;
pub mod procedures;
mod query_time;
pub mod rerank;
/// The short-term buffer's types (the core's), for a library user and the
/// front ends; the configured buffer is opened by `short_term_open.rs`.
pub mod short_term {
    pub use memloop_core::short_term::*;
    #[cfg(feature = "redis")]
    pub use memloop_shortterm::redacted;
}
#[cfg(feature = "redis")]
mod lazy_redis;
mod short_term_open;
mod store_open;
mod sweeper;
mod token_count;
mod turn;
mod write;

pub use config::{
    check_hops, default_data_dir, Config, EmbedderConfig, LayerShares, Layers, LoopConfig,
    SearchConfig, ShortTermConfig, StaleMemories, MAX_HOPS,
};
pub use forgetting::{
    ForgettingConfig, GcReport, KindTtls, DEFAULT_DECAY_WEIGHT, DEFAULT_HALF_LIFE_MS,
};
pub use memory::{Memory, MemoryById, Searched, DEFAULT_EXPANSION};
pub use pipeline::WritePipeline;
pub use procedures::{
    Outcome, Procedure, ProcedureHit, ProcedureQuery, ProcedureRun, ProcedureScores,
    ProcedureWrite, Step, ToolCall,
};
pub use query_time::{parse_reference_time, QueryTimeMode, TimeReading};
pub use sweeper::SweepStats;
pub use token_count::{Encoding, TokenCounter};
pub use turn::{
    said_at, AddMessages, Added, Exchanged, Forgotten, MemoryLoop, Recorded, RememberOptions,
    Remembered, RetrievedMemory, SideGate, Timings, TraceTokens, TurnOutcome, TurnTrace,
};
pub use write::{
    speaker, Distil, EpisodeWriter, LongTermWriter, TurnToWrite, WriteEvent, WriteReport,
};

pub use memloop_core::{
    check_time, expires_after, parse_ttl, MAX_TIME_MS, MAX_TTL_MS, MIN_TIME_MS,
};
pub use memloop_core::{
    context, filter, llm, now_millis, text, time, ChatMessage, ChatRequest, ChatResponse, Embedder,
    EmbedderInfo, Error, ErrorClass, Event, Filter, HistoryEntry, Kind, Llm, MemoryRecord,
    NewMemory, Provenance, Result, Scope, SearchHit, SignalScores, WriteResult, MAX_TEXT_BYTES,
};
pub use memloop_core::{shown_value, validate_memory_id, MAX_ID_BYTES};
pub use memloop_embed::{
    locate_model, locate_model_dir, LocalEmbedder, LocalModel, OpenAiEmbedder, OpenAiEmbedderConfig,
};
pub use memloop_llm::{AnthropicLlm, LlmConfig, OpenAiLlm, Provider};
pub use memloop_longterm::dump;
pub use memloop_longterm::graph;
/// The store's traits, to call their methods on `Memory::store()`: `use memloop::prelude::*`.
pub use memloop_longterm::prelude;
pub use memloop_longterm::{
    check_limit, Decay, Embedded, Entity, ExpireReport, ForgetReport, GraphStore, ListQuery,
    LongTermStore, Lookup, MemoryStore, MemoryUpdate, Outbox, OutboxEntry, RecordStatus,
    SearchQuery, SessionInfo, Stats, TimeMode, TimeWindow, Upkeep, DEFAULT_TIME_BOOST, MAX_LIMIT,
};
pub use memloop_rules::gate;
#[cfg(feature = "redis")]
pub use memloop_shortterm::RedisBuffer;
pub use memloop_shortterm::{InProcessBuffer, Limits as ShortTermLimits};
pub use memloop_store::{Durability, StoreOptions};

/// The README's library examples, compiled by `cargo test --doc` so they
/// stay true to the API (not run: they write to `./memloop-data`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
