//! The seam between the loop and the long-term write: the loop decides
//! *whether* to persist a turn (the gate); a `LongTermWriter` decides *what*
//! gets stored (raw episode, distilled facts, reconciliation).

use memloop_core::{Kind, NewMemory, Provenance, Result, Scope};

use super::trace::WriteEvent;
use crate::Memory;

/// A turn handed to the long-term write.
#[derive(Debug, Clone)]
pub struct TurnToWrite<'a> {
    /// The user's scope, with the session the turn belongs to.
    pub scope: &'a Scope,
    pub turn_id: &'a str,
    pub role: &'a str,
    pub text: &'a str,
    /// When it was said (ms).
    pub at: i64,
    /// The turn before it, indexed as context so a reply like "Yes, in May"
    /// can still be found.
    pub context: Option<&'a str>,
}

/// What a write did.
#[derive(Debug, Clone, Default)]
pub struct WriteReport {
    pub events: Vec<WriteEvent>,
    /// Embedding time inside the write (µs), reported apart from the loop's overhead.
    pub embed_us: u64,
    /// LLM calls made and their time (µs).
    pub llm_calls: u32,
    pub llm_us: u64,
    /// Set when the write could not finish now and was queued for a retry.
    pub deferred: Option<String>,
    pub notes: Vec<String>,
}

pub trait LongTermWriter: Send + Sync {
    fn write(&self, memory: &Memory, turn: &TurnToWrite) -> Result<WriteReport>;
}

/// Stores the turn as it was said: one episode with its provenance. The
/// simplest writer, and the raw layer the distilling writer keeps too.
#[derive(Debug, Default, Clone, Copy)]
pub struct EpisodeWriter;

impl EpisodeWriter {
    pub fn episode(turn: &TurnToWrite) -> NewMemory {
        let mut m = NewMemory::text(turn.text).kind(Kind::Episode);
        m.context = turn.context.map(str::to_string);
        m.valid_from = Some(turn.at);
        m.metadata = serde_json::json!({ "role": turn.role });
        m.provenance = Provenance {
            session_id: turn.scope.session_id.clone(),
            turn_ids: vec![turn.turn_id.to_string()],
            source: "loop".into(),
            confidence: None,
        };
        m
    }
}

impl LongTermWriter for EpisodeWriter {
    fn write(&self, memory: &Memory, turn: &TurnToWrite) -> Result<WriteReport> {
        let m = EpisodeWriter::episode(turn);
        let start = std::time::Instant::now();
        let vector = memory.embedder().embed(&m.text)?;
        let embed_us = start.elapsed().as_micros() as u64;
        let written = memory.add_embedded(turn.scope, vec![(m, vector)])?;
        let events = written
            .into_iter()
            .map(|w| WriteEvent {
                id: w.id,
                memory: w.memory,
                event: w.event,
                kind: Kind::Episode,
                previous_memory: None,
                reason: "the turn as said (episode)".into(),
            })
            .collect();
        Ok(WriteReport {
            events,
            embed_us,
            ..WriteReport::default()
        })
    }
}
