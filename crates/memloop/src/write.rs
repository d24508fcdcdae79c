//! The seam between the loop and the long-term write, and the types both
//! sides share: the loop (`turn/`) decides *whether* to persist a turn (the
//! gate); a `LongTermWriter` (`pipeline/` is the distilling one) decides
//! *what* gets stored. Both import from here and neither from the other's
//! types, so the two modules do not form a circle.

use memloop_core::short_term::Role;
use memloop_core::{Event, Kind, NewMemory, Provenance, Result, Scope};
use serde::{Deserialize, Serialize};

use crate::Memory;

/// One change the long-term write made, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteEvent {
    pub id: String,
    pub memory: String,
    pub event: Event,
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_memory: Option<String>,
    pub reason: String,
}

/// A turn handed to the long-term write.
#[derive(Debug, Clone)]
pub struct TurnToWrite<'a> {
    /// The user's scope, with the session the turn belongs to.
    pub scope: &'a Scope,
    pub turn_id: &'a str,
    pub role: Role,
    pub text: &'a str,
    /// When it was said (ms).
    pub at: i64,
    /// The turn before it, indexed as context so a reply like "Yes, in May"
    /// can still be found.
    pub context: Option<&'a str>,
    /// `text`'s embedding when the caller already has it (the loop embedded
    /// the input as its search query): the writer stores it with the episode
    /// instead of embedding the same text again.
    pub vector: Option<&'a [f32]>,
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
        m.metadata = serde_json::json!({ "role": turn.role.as_str() });
        m.provenance = Provenance {
            session_id: turn.scope.session_id.clone(),
            turn_ids: vec![turn.turn_id.to_string()],
            source: "loop".into(),
            confidence: None,
        };
        m
    }

    /// Stores `episode` (made by [`Self::episode`]) with its vector in the
    /// turn's scope: the events it made (ADD, or NOOP for a replay).
    pub fn store(
        memory: &Memory,
        turn: &TurnToWrite,
        episode: NewMemory,
        vector: Vec<f32>,
    ) -> Result<Vec<WriteEvent>> {
        let written = memory.add_embedded(turn.scope, vec![(episode, vector)])?;
        Ok(written
            .into_iter()
            .map(|w| WriteEvent {
                id: w.id,
                memory: w.memory,
                event: w.event,
                kind: Kind::Episode,
                previous_memory: None,
                reason: "the turn as said (episode)".into(),
            })
            .collect())
    }
}

impl LongTermWriter for EpisodeWriter {
    fn write(&self, memory: &Memory, turn: &TurnToWrite) -> Result<WriteReport> {
        let m = EpisodeWriter::episode(turn);
        let start = std::time::Instant::now();
        let vector = match turn.vector {
            Some(v) => v.to_vec(),
            None => memory.embedder().embed(&m.text)?,
        };
        let embed_us = start.elapsed().as_micros() as u64;
        Ok(WriteReport {
            events: EpisodeWriter::store(memory, turn, m, vector)?,
            embed_us,
            ..WriteReport::default()
        })
    }
}
