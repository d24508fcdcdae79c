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
    /// The side of the exchange a fact was distilled from (and attributed
    /// to); absent for the episode, which holds both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
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
    /// instead of embedding the same text again (an exchange with a reply
    /// is embedded as stored, both sides).
    pub vector: Option<&'a [f32]>,
    /// The other side of the exchange: the assistant's reply to `text`,
    /// kept with it in one episode.
    pub reply: Option<&'a str>,
    /// Which sides facts are distilled from: those whose role the gate
    /// judged and kept. Each fact is attributed to the side that said it.
    pub distil: Distil,
    /// When everything this turn writes expires (ms), as the caller asked
    /// (REST add's `ttl`); `None`: each memory its kind's default TTL.
    pub expires_at: Option<i64>,
    /// The caller's metadata (Mem0's `add(..., metadata=)`), stored on the
    /// episode and every fact the turn writes. The keys the write sets
    /// itself (`role`, `entities`, a fact's attribute) win over the caller's.
    pub metadata: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// Which sides of an exchange the write distils facts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Distil {
    pub text: bool,
    pub reply: bool,
}

impl Distil {
    /// Facts from the turn's own text only (a message on its own).
    pub const TEXT: Distil = Distil {
        text: true,
        reply: false,
    };
}

impl<'a> TurnToWrite<'a> {
    /// One message of `role` on its own, its facts distilled.
    pub fn message(scope: &'a Scope, turn_id: &'a str, role: Role, text: &'a str, at: i64) -> Self {
        TurnToWrite {
            scope,
            turn_id,
            role,
            text,
            at,
            context: None,
            vector: None,
            reply: None,
            distil: Distil::TEXT,
            expires_at: None,
            metadata: None,
        }
    }

    /// `own` (what the write sets) over the caller's metadata.
    pub fn metadata_with(&self, own: serde_json::Value) -> serde_json::Value {
        match (self.metadata, own) {
            (Some(caller), serde_json::Value::Object(own)) => {
                let mut merged = caller.clone();
                merged.extend(own);
                serde_json::Value::Object(merged)
            }
            (_, own) => own,
        }
    }

    /// The episode's text: the message, or both sides of an exchange, each
    /// named by its role so a reader of the memory knows who said what.
    pub fn episode_text(&self) -> String {
        match self.reply {
            Some(reply) => format!(
                "{}: {}\n{}: {reply}",
                speaker(self.role),
                self.text,
                speaker(Role::Assistant)
            ),
            None => self.text.to_string(),
        }
    }

    /// The sides to distil facts from: (role, text) pairs.
    pub fn distilled_sides(&self) -> Vec<(Role, &'a str)> {
        let mut out = Vec::with_capacity(2);
        if self.distil.text {
            out.push((self.role, self.text));
        }
        if let (true, Some(reply)) = (self.distil.reply, self.reply) {
            out.push((Role::Assistant, reply));
        }
        out
    }
}

/// How a side is named in an episode and in the facts attributed to it.
pub fn speaker(role: Role) -> &'static str {
    match role {
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::System => "System",
        Role::Tool => "Tool",
    }
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
        let mut m = NewMemory::text(turn.episode_text()).kind(Kind::Episode);
        m.context = turn.context.map(str::to_string);
        m.valid_from = Some(turn.at);
        m.expires_at = turn.expires_at;
        m.metadata = turn.metadata_with(match turn.reply {
            Some(_) => serde_json::json!({
                "role": turn.role.as_str(),
                "roles": [turn.role.as_str(), Role::Assistant.as_str()],
            }),
            None => serde_json::json!({ "role": turn.role.as_str() }),
        });
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
                role: None,
            })
            .collect())
    }
}

impl LongTermWriter for EpisodeWriter {
    fn write(&self, memory: &Memory, turn: &TurnToWrite) -> Result<WriteReport> {
        let m = EpisodeWriter::episode(turn);
        let start = std::time::Instant::now();
        let vector = match (turn.vector, turn.reply) {
            (Some(v), None) => v.to_vec(),
            _ => memory.embedder().embed(&m.text)?,
        };
        let embed_us = start.elapsed().as_micros() as u64;
        Ok(WriteReport {
            events: EpisodeWriter::store(memory, turn, m, vector)?,
            embed_us,
            ..WriteReport::default()
        })
    }
}
