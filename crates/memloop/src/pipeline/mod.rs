//! The long-term write pipeline: a turn in, the raw episode kept, compact
//! facts distilled (by the LLM when one is configured, by rules otherwise)
//! and reconciled with what is stored: ADD, UPDATE (supersede), DELETE (end
//! validity), NOOP. When the LLM fails, the turn's facts wait in a durable
//! outbox and are replayed by a later turn or `memloop gc`.

mod apply;
mod llm_mode;

use std::sync::Arc;
use std::time::Instant;

use memloop_core::short_term::Role;
use memloop_core::{Llm, Result};
use memloop_rules::extract::{extract_rules, Fact, Thresholds};
use serde::{Deserialize, Serialize};

use crate::write::{
    speaker, Distil, EpisodeWriter, LongTermWriter, TurnToWrite, WriteEvent, WriteReport,
};
use crate::Memory;

/// Stored facts shown to reconciliation for each new fact.
const CANDIDATES: usize = 5;
/// Queued writes replayed at the start of a write (bounds a turn's latency).
const DRAIN_PER_TURN: usize = 2;

#[derive(Clone)]
pub struct WritePipeline {
    llm: Option<Arc<dyn Llm>>,
    thresholds: Thresholds,
}

/// A turn as kept in the outbox: everything needed to write it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct QueuedTurn {
    turn_id: String,
    role: Role,
    text: String,
    at: i64,
    context: Option<String>,
    /// The assistant's reply, when the exchange had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<String>,
    /// Whether the text's facts are distilled (older entries: always).
    #[serde(default = "yes")]
    distil_text: bool,
    #[serde(default)]
    distil_reply: bool,
    /// The caller's expiry for what the turn writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    /// The caller's metadata for what the turn writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

fn yes() -> bool {
    true
}

/// Facts stated by the sides the turn distils, each attributed to who said
/// it: the assistant's "I can't eat peanuts either" is a fact about the
/// assistant, never about the user.
fn rule_facts(turn: &TurnToWrite) -> Vec<(Role, Fact)> {
    turn.distilled_sides()
        .into_iter()
        .flat_map(|(role, text)| {
            extract_rules(text, speaker(role), turn.at)
                .into_iter()
                .map(move |f| (role, f))
        })
        .collect()
}

impl Default for WritePipeline {
    fn default() -> Self {
        WritePipeline::new(None)
    }
}

impl WritePipeline {
    /// With an LLM: one call per turn extracts and reconciles. Without: rules.
    pub fn new(llm: Option<Arc<dyn Llm>>) -> WritePipeline {
        WritePipeline {
            llm,
            thresholds: Thresholds::default(),
        }
    }

    /// Replays queued writes (at most `limit`): those due, or with `force`
    /// all of them (`memloop gc`). Returns the events they applied. An entry
    /// that fails again stays, backing off.
    pub fn drain_outbox(
        &self,
        memory: &Memory,
        limit: usize,
        force: bool,
    ) -> Result<Vec<WriteEvent>> {
        let mut events = Vec::new();
        for entry in memory.store().outbox_due(limit, force)? {
            let Ok(turn) = serde_json::from_value::<QueuedTurn>(entry.payload.clone()) else {
                // Not ours to understand: keep it out of the way, visibly.
                memory
                    .store()
                    .outbox_failed(entry.id, "payload is not a queued turn")?;
                continue;
            };
            let input = TurnToWrite {
                scope: &entry.scope,
                turn_id: &turn.turn_id,
                role: turn.role,
                text: &turn.text,
                at: turn.at,
                context: turn.context.as_deref(),
                vector: None,
                reply: turn.reply.as_deref(),
                distil: Distil {
                    text: turn.distil_text,
                    reply: turn.distil_reply,
                },
                expires_at: turn.expires_at,
                metadata: turn.metadata.as_ref(),
            };
            let mut report = WriteReport::default();
            match self.facts(memory, &input, &mut report) {
                Ok(()) => {
                    memory.store().outbox_done(entry.id)?;
                    events.extend(report.events);
                }
                Err(e) => memory.store().outbox_failed(entry.id, &e.to_string())?,
            }
        }
        Ok(events)
    }

    /// Distils and reconciles the turn's facts, appending to `report`.
    fn facts(&self, memory: &Memory, turn: &TurnToWrite, report: &mut WriteReport) -> Result<()> {
        match &self.llm {
            Some(llm) => llm_mode::write(self, llm.as_ref(), memory, turn, None, report),
            None => {
                let facts = rule_facts(turn);
                apply::reconcile_all(self, memory, turn, facts, None, "rules", report)
            }
        }
    }
}

impl LongTermWriter for WritePipeline {
    fn write(&self, memory: &Memory, turn: &TurnToWrite) -> Result<WriteReport> {
        let mut report = WriteReport::default();
        if self.llm.is_some() {
            match self.drain_outbox(memory, DRAIN_PER_TURN, false) {
                Ok(events) if !events.is_empty() => {
                    report
                        .notes
                        .push(format!("replayed queued writes: {} events", events.len()));
                    report.events.extend(events);
                }
                Ok(_) => {}
                Err(e) => report.notes.push(format!("outbox replay failed: {e}")),
            }
        }
        // The turn as said stays searchable: distilled text alone loses keywords.
        let episode = EpisodeWriter::episode(turn);
        // Offline, the facts are known before any embedding: one batch for
        // the episode and its facts (the LLM mode reuses the episode's vector
        // to find the stored facts it shows the model).
        let rule_facts = match self.llm {
            Some(_) => Vec::new(),
            None => rule_facts(turn),
        };
        // The episode's vector is the caller's when it has one for the same
        // text (the loop's query embedding of a message on its own): then
        // only the facts are embedded.
        let reuse = turn.vector.filter(|_| turn.reply.is_none());
        let mut texts = Vec::with_capacity(1 + rule_facts.len());
        if reuse.is_none() {
            texts.push(episode.text.as_str());
        }
        texts.extend(rule_facts.iter().map(|(_, f)| f.text.as_str()));
        let s = Instant::now();
        let mut vectors = if texts.is_empty() {
            Vec::new()
        } else {
            memory.embedder().embed_batch(&texts)?
        };
        report.embed_us += s.elapsed().as_micros() as u64;
        if vectors.len() != texts.len() {
            return Err(memloop_core::Error::Embedding(
                "the embedder returned a wrong number of vectors".into(),
            ));
        }
        let turn_vector = match reuse {
            Some(v) => v.to_vec(),
            None => vectors.remove(0),
        };
        report.events.extend(EpisodeWriter::store(
            memory,
            turn,
            episode,
            turn_vector.clone(),
        )?);
        // Any failure here (the LLM down or talking nonsense, mostly) leaves
        // the episode stored and queues the facts: the turn still returns.
        let facts = match &self.llm {
            Some(llm) => llm_mode::write(
                self,
                llm.as_ref(),
                memory,
                turn,
                Some(turn_vector),
                &mut report,
            ),
            None => apply::reconcile_all(
                self,
                memory,
                turn,
                rule_facts,
                Some(vectors),
                "rules",
                &mut report,
            ),
        };
        if let Err(e) = facts {
            {
                let queued = QueuedTurn {
                    turn_id: turn.turn_id.to_string(),
                    role: turn.role,
                    text: turn.text.to_string(),
                    at: turn.at,
                    context: turn.context.map(str::to_string),
                    reply: turn.reply.map(str::to_string),
                    distil_text: turn.distil.text,
                    distil_reply: turn.distil.reply,
                    expires_at: turn.expires_at,
                    metadata: turn.metadata.cloned(),
                };
                let payload = serde_json::to_value(&queued)
                    .map_err(|e| memloop_core::Error::Internal(e.to_string()))?;
                let id = memory
                    .store()
                    .outbox_push(turn.scope, &payload, &e.to_string())?;
                report.deferred = Some(format!(
                    "fact extraction failed ({e}); queued as outbox entry {id}, replayed by the next turn or `memloop gc`"
                ));
            }
        }
        Ok(report)
    }
}
