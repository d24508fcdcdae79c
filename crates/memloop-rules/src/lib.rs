//! The offline English rules of memloop: the persistence gate's heuristics
//! ([`gate`]: is a turn worth writing to long-term memory?) and rule-based
//! fact extraction and reconciliation ([`extract`]: which facts a turn
//! states, and whether each adds to, updates or deletes what is stored).
//!
//! Everything here is pure logic over the types of `memloop-core`, with no
//! model call and no I/O. The LLM paths (the gate's second opinion, LLM fact
//! extraction) are run by the `memloop` facade, which builds their prompts
//! with the helpers here and falls back to these rules without a model.

pub mod extract;
pub mod gate;
mod sentences;

pub use gate::{GateConfig, GateDecision};
