//! What a turn did, returned to the caller and logged: the same objects that
//! went into the prompt, never a second query.

use memloop_core::context::TokenCounts;
use memloop_core::short_term::Role;
use memloop_core::{Kind, Replacement, SignalScores};
use memloop_rules::gate::GateDecision;

use crate::events::WriteLog;
use crate::write::WriteEvent;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// A memory the search returned, and whether it made it into the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievedMemory {
    pub id: String,
    pub kind: Kind,
    pub memory: String,
    pub score: f32,
    pub scores: SignalScores,
    pub included: bool,
    /// Set when its claim was superseded: the current memory that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<Replacement>,
    /// A procedure's ranking factors (similarity × success rate × recency),
    /// in three-layer mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure: Option<crate::procedures::ProcedureScores>,
}

/// The gate's decision for one side of an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideGate {
    pub role: Role,
    pub persist: bool,
    pub reason: String,
}

/// Microseconds per stage. `overhead_us` is everything but the LLM and the
/// embedding model: the loop's own cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    pub read_short_term_us: u64,
    pub embed_query_us: u64,
    pub search_us: u64,
    pub assemble_us: u64,
    pub llm_us: u64,
    pub write_short_term_us: u64,
    pub gate_us: u64,
    pub write_long_term_us: u64,
    /// Embedding inside the long-term write (part of write_long_term_us).
    pub write_embed_us: u64,
    /// LLM time inside the gate, the write and the summary.
    pub other_llm_us: u64,
    pub summary_us: u64,
    pub total_us: u64,
    pub overhead_us: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceTokens {
    #[serde(flatten)]
    pub input: TokenCounts,
    /// The reply's tokens (counted locally when the provider does not say).
    pub reply: usize,
}

/// Everything one turn did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnTrace {
    pub turn_id: String,
    /// Whose turn it was: the tenant and user its memories belong to.
    #[serde(default)]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    pub session_id: String,
    pub query: String,
    pub retrieved: Vec<RetrievedMemory>,
    /// Buffer turns in the prompt, and the session's turns left out of it
    /// (those the bounded buffer dropped included).
    pub turns_in_prompt: usize,
    pub turns_left_out: usize,
    pub tokens: TraceTokens,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub llm_attempts: u32,
    /// The gate's decision for the exchange: kept when any side was.
    pub gate: GateDecision,
    /// The gate's decision for each side of the exchange (the user's input,
    /// the assistant's reply), judged by its role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<SideGate>,
    /// What was written, each fact naming the side it was distilled from.
    pub writes: Vec<WriteEvent>,
    /// What went wrong without failing the turn (a deferred write, a summary
    /// that could not be made).
    pub notes: Vec<String>,
    /// An exchange recorded by an agent with its own model (no retrieval,
    /// no LLM call here), not a loop turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recorded: bool,
    /// How the input's words were read for a time ("last week", "the last
    /// session"), when they named one: the window the search used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<crate::TimeReading>,
    pub timings: Timings,
    /// Three-layer mode: each section's share, budget, tokens and counts
    /// (the memories of each are in `retrieved`, by `kind`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<super::LayerTrace>,
    /// What the reranking stage did in each search the turn ran (one, or
    /// one per searched layer in three-layer mode): the reranker, its
    /// latency, and whether its order was used. Empty without a reranker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rerank: Vec<crate::rerank::RerankReport>,
}

/// Whether the loop's events carry texts (queries, memories, reasons):
/// off unless `MEMLOOP_LOG_TEXTS` is `1`/`true` or a caller turns it on.
fn log_texts_flag() -> &'static AtomicBool {
    static FLAG: OnceLock<AtomicBool> = OnceLock::new();
    FLAG.get_or_init(|| {
        let on = std::env::var("MEMLOOP_LOG_TEXTS")
            .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"));
        AtomicBool::new(on)
    })
}

/// A retrieved memory as logged without its text.
#[derive(Serialize)]
struct RetrievedLog<'a> {
    id: &'a str,
    kind: Kind,
    score: f32,
    bytes: usize,
    included: bool,
}

impl TurnTrace {
    /// Makes every later `memory_retrieval` / `memory_write` event carry
    /// (or stop carrying) the query, the memories' texts and the reasons,
    /// process-wide. Logs are often shipped and kept where memories should
    /// not be, so this is off by default (`MEMLOOP_LOG_TEXTS=1` turns it on).
    pub fn set_log_texts(on: bool) {
        log_texts_flag().store(on, Ordering::Relaxed);
    }

    /// Whether the events carry texts (see [`TurnTrace::set_log_texts`]).
    pub fn logs_texts() -> bool {
        log_texts_flag().load(Ordering::Relaxed)
    }

    /// Emits the `memory_retrieval` and `memory_write` events.
    pub fn log(&self) {
        self.log_with(TurnTrace::logs_texts());
    }

    /// `memory_write` says which call wrote: a loop turn, or an exchange
    /// recorded by an agent with its own model.
    fn source(&self) -> &'static str {
        if self.recorded {
            "record"
        } else {
            "turn"
        }
    }

    /// Emits the events with texts or, when `texts` is false, with ids,
    /// scores, sizes and counts only.
    pub fn log_with(&self, texts: bool) {
        if texts {
            self.log_texts();
            return;
        }
        let retrieved: Vec<RetrievedLog> = self
            .retrieved
            .iter()
            .map(|m| RetrievedLog {
                id: &m.id,
                kind: m.kind,
                score: m.score,
                bytes: m.memory.len(),
                included: m.included,
            })
            .collect();
        let retrieved = serde_json::to_string(&retrieved).unwrap_or_default();
        tracing::info!(
            event = "memory_retrieval",
            turn_id = %self.turn_id,
            tenant = %self.tenant,
            user_id = self.user_id.as_deref().unwrap_or(""),
            session_id = %self.session_id,
            query_bytes = self.query.len(),
            count = self.retrieved.len(),
            included = self.retrieved.iter().filter(|m| m.included).count(),
            memories = %retrieved,
            input_tokens = self.tokens.input.total_input,
            "memory_retrieval"
        );
        let writes: Vec<WriteLog> = self.writes.iter().map(WriteLog::of).collect();
        let writes = serde_json::to_string(&writes).unwrap_or_default();
        tracing::info!(
            event = "memory_write",
            source = self.source(),
            turn_id = %self.turn_id,
            tenant = %self.tenant,
            user_id = self.user_id.as_deref().unwrap_or(""),
            session_id = %self.session_id,
            persisted = self.gate.persist,
            writes = %writes,
            notes = self.notes.len(),
            overhead_us = self.timings.overhead_us,
            "memory_write"
        );
    }

    /// The events with every text: for debugging, when asked for.
    fn log_texts(&self) {
        let retrieved = serde_json::to_string(&self.retrieved).unwrap_or_default();
        tracing::info!(
            event = "memory_retrieval",
            turn_id = %self.turn_id,
            tenant = %self.tenant,
            user_id = self.user_id.as_deref().unwrap_or(""),
            session_id = %self.session_id,
            query = %self.query,
            count = self.retrieved.len(),
            included = self.retrieved.iter().filter(|m| m.included).count(),
            memories = %retrieved,
            input_tokens = self.tokens.input.total_input,
            "memory_retrieval"
        );
        let writes = serde_json::to_string(&self.writes).unwrap_or_default();
        tracing::info!(
            event = "memory_write",
            source = self.source(),
            turn_id = %self.turn_id,
            tenant = %self.tenant,
            user_id = self.user_id.as_deref().unwrap_or(""),
            session_id = %self.session_id,
            persisted = self.gate.persist,
            reason = %self.gate.reason,
            writes = %writes,
            notes = ?self.notes,
            overhead_us = self.timings.overhead_us,
            "memory_write"
        );
    }
}
