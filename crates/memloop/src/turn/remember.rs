//! Remembering one user message outside a loop turn (`memloop remember`,
//! MCP `memory_remember`, REST add with `infer: true`): the same gate, as
//! configured in `[loop]`, and the same long-term writer as a turn, so the
//! three front ends cannot drift apart.

use memloop_core::short_term::Role;
use memloop_core::{Result, Scope};
use memloop_rules::gate::GateDecision;
use serde::Serialize;

use super::{MemoryLoop, Timings};
use crate::events::{log_writes, WriteLog};
use crate::write::{Distil, TurnToWrite, WriteEvent};

/// How to remember a message.
#[derive(Debug, Clone, Copy, Default)]
pub struct RememberOptions<'a> {
    /// Write without asking the gate (the caller has decided).
    pub skip_gate: bool,
    /// When it was said (ms); now when absent.
    pub at: Option<i64>,
    /// The message before it, indexed as context (a reply like "Yes, in May").
    pub context: Option<&'a str>,
    /// When what it writes expires (ms); each kind's default TTL when absent.
    pub expires_at: Option<i64>,
    /// Stored on everything it writes (under the keys the write sets).
    pub metadata: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// What remembering a message did, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remembered {
    pub gate: GateDecision,
    pub events: Vec<WriteEvent>,
    /// What the writer noted, and why a write was deferred if it was.
    pub notes: Vec<String>,
}

impl MemoryLoop {
    /// Gates `text` as a user message of `scope` and, if kept, hands it to
    /// the long-term writer (episode, facts, reconciliation). The same words
    /// in the same session are the same turn, so remembering them again
    /// changes nothing (NOOP).
    pub fn remember(
        &self,
        scope: &Scope,
        text: &str,
        options: RememberOptions<'_>,
    ) -> Result<Remembered> {
        memloop_core::text::validate_text(text)?;
        scope.validate()?;
        let gate = if options.skip_gate {
            GateDecision {
                persist: true,
                reason: "gate skipped: the caller asked to keep it".into(),
            }
        } else {
            self.decide(text, Role::User, &mut Timings::default())
        };
        if !gate.persist {
            log_writes(scope, "remember", false, &[]);
            return Ok(Remembered {
                gate,
                events: Vec::new(),
                notes: Vec::new(),
            });
        }
        let hash = memloop_core::text::content_hash(&format!(
            "{}\n{text}",
            scope.session_id.as_deref().unwrap_or("")
        ));
        let turn_id = format!("remember-{}", hash.get(..16).unwrap_or(&hash));
        let turn = TurnToWrite {
            scope,
            turn_id: &turn_id,
            role: Role::User,
            text,
            at: options.at.unwrap_or_else(memloop_core::now_millis),
            context: options.context,
            vector: None,
            reply: None,
            distil: Distil::TEXT,
            expires_at: options.expires_at,
            metadata: options.metadata,
        };
        let report = self.writer.write(&self.memory, &turn)?;
        let logged: Vec<WriteLog> = report.events.iter().map(WriteLog::of).collect();
        log_writes(scope, "remember", true, &logged);
        let mut notes = report.notes;
        notes.extend(report.deferred);
        Ok(Remembered {
            gate,
            events: report.events,
            notes,
        })
    }
}
