//! Recording an exchange that an agent ran with its own model (an
//! OpenClaw hook, a framework's callback): the write half of a turn. The
//! messages go to the session's short-term buffer, each side is judged by
//! the gate, and the kept sides go through the same long-term writer as a
//! loop turn. A retried call with the same turn id writes nothing twice.

use std::time::Instant;

use memloop_core::short_term::{Role, Turn};
use memloop_core::{Error, Result, Scope, MAX_ID_BYTES};
use memloop_rules::gate::GateDecision;
use serde::Serialize;

use crate::procedures::{run_of, ToolCall};
use crate::write::WriteEvent;
use memloop_core::Kind;

use super::{micros, session_of, Exchange, MemoryLoop, Timings, TraceTokens, TurnTrace};

/// A finished exchange to record.
#[derive(Debug, Clone, Copy)]
pub struct Exchanged<'a> {
    /// The caller's id for the exchange: a retry with the same id appends
    /// nothing again and stores nothing twice. A fresh id when absent.
    pub turn_id: Option<&'a str>,
    /// The messages since the last recorded exchange, oldest first. The
    /// user's messages are the input, the assistant's the reply; tool and
    /// system messages go to the buffer only.
    pub messages: &'a [Turn],
}

/// What recording did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recorded {
    pub turn_id: String,
    /// The session already held this exchange: nothing was appended again,
    /// and the long-term write found what it holds (NOOPs).
    pub replayed: bool,
    pub trace: TurnTrace,
}

impl Recorded {
    /// The answer REST and MCP give: the turn id, whether it was a replay,
    /// the gate and the writes up front, and the whole trace.
    pub fn answer(&self) -> serde_json::Value {
        serde_json::json!({
            "turn_id": self.turn_id,
            "replayed": self.replayed,
            "gate": self.trace.gate,
            "writes": self.trace.writes,
            "trace": self.trace,
        })
    }
}

/// Messages as a REST or MCP body gives them, `(role, content)`, made
/// turns said at `at` (now when absent). An unknown role is refused.
pub fn said_at<I>(messages: I, at: Option<i64>) -> Result<Vec<Turn>>
where
    I: IntoIterator<Item = (String, String)>,
{
    messages
        .into_iter()
        .map(|(role, content)| {
            let mut turn = Turn::new(Role::parse(&role)?, content);
            if let Some(at) = at {
                turn.at = at;
            }
            Ok(turn)
        })
        .collect()
}

/// The messages of `role`, joined: one side of the exchange.
fn side(messages: &[Turn], role: Role) -> Option<(String, i64)> {
    let said: Vec<&Turn> = messages.iter().filter(|m| m.role == role).collect();
    let first = said.first()?;
    let text = said
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    Some((text, first.at))
}

fn check_turn_id(id: &str) -> Result<()> {
    if id.trim().is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "{} is not a turn id: give 1 to {MAX_ID_BYTES} bytes without control characters (the same id for a retry of the same exchange), or none for a fresh one",
            memloop_core::shown_value(id)
        )));
    }
    Ok(())
}

impl MemoryLoop {
    /// Records `exchange` in `scope` (a user and a session): appends its
    /// messages to the session, judges the user's and the assistant's side
    /// by role, and writes the kept sides long-term (one episode holding
    /// both, facts attributed to who said them). Returns the trace: the
    /// gate per side and every write.
    pub fn record(&self, scope: &Scope, exchange: Exchanged<'_>) -> Result<Recorded> {
        self.record_with_tools(scope, exchange, &[])
    }

    /// [`MemoryLoop::record_with_tools`] of an exchange as the front ends
    /// receive it: messages as JSON, tool calls in OpenAI's or Anthropic's
    /// shape among them, said at `at` (Unix ms; now when absent). REST,
    /// MCP and the Python package all record through here.
    pub fn record_messages(
        &self,
        scope: &Scope,
        turn_id: Option<&str>,
        messages: &[serde_json::Value],
        at: Option<i64>,
    ) -> Result<Recorded> {
        let parsed = crate::procedures::from_messages(messages)?;
        let said = said_at(parsed.messages, at)?;
        self.record_with_tools(
            scope,
            Exchanged {
                turn_id,
                messages: &said,
            },
            &parsed.tool_calls,
        )
    }

    /// [`MemoryLoop::record`] of an exchange in which the agent called
    /// tools: the calls, in order, are also recorded as a run of the task
    /// the user asked for (the procedural layer, docs/layers.md), whatever
    /// the gate says of the words, with the turn id as the run id (so a
    /// replay counts nothing twice). Its write is in the trace's `writes`
    /// (kind `procedure`).
    pub fn record_with_tools(
        &self,
        scope: &Scope,
        exchange: Exchanged<'_>,
        tool_calls: &[ToolCall],
    ) -> Result<Recorded> {
        let started = Instant::now();
        let mut t = Timings::default();
        let session = session_of(scope)?;
        if exchange.messages.is_empty() {
            return Err(Error::invalid(
                "an exchange to record needs at least one message: give messages [{role, content}]",
            ));
        }
        exchange.messages.iter().try_for_each(Turn::validate)?;
        let turn_id = match exchange.turn_id {
            Some(id) => {
                check_turn_id(id)?;
                id.to_string()
            }
            None => super::uuid_v7(),
        };

        let s = Instant::now();
        let before = self.short_term.read(&scope.tenant, session)?;
        t.read_short_term_us = micros(s);
        let s = Instant::now();
        let appended = self.short_term.append_exchange(
            &scope.tenant,
            scope.user_id.as_deref(),
            session,
            &turn_id,
            exchange.messages,
        )?;
        t.write_short_term_us = micros(s);

        let user = side(exchange.messages, Role::User);
        let user_at = user.as_ref().map(|u| u.1);
        let assistant = side(exchange.messages, Role::Assistant);
        let mut trace = TurnTrace {
            turn_id: turn_id.clone(),
            tenant: scope.tenant.clone(),
            user_id: scope.user_id.clone(),
            session_id: session.to_string(),
            query: user.as_ref().map(|u| u.0.clone()).unwrap_or_default(),
            retrieved: Vec::new(),
            turns_in_prompt: 0,
            turns_left_out: 0,
            tokens: TraceTokens::default(),
            model: None,
            llm_attempts: 0,
            gate: GateDecision {
                persist: false,
                reason: "no user or assistant message".into(),
            },
            gates: Vec::new(),
            writes: Vec::new(),
            notes: Vec::new(),
            timings: Timings::default(),
            recorded: true,
            time: None,
            layers: Vec::new(),
            rerank: Vec::new(),
        };
        // The first side present is the input (an assistant-only exchange,
        // a proactive message, is judged as the assistant's).
        let (input, reply) = match (user, assistant) {
            (Some(u), a) => (
                Some(Turn {
                    at: u.1,
                    ..Turn::new(Role::User, u.0)
                }),
                a.map(|a| a.0),
            ),
            (None, Some(a)) => (
                Some(Turn {
                    at: a.1,
                    ..Turn::new(Role::Assistant, a.0)
                }),
                None,
            ),
            (None, None) => (None, None),
        };
        if let Some(input) = input {
            let s = Instant::now();
            let distil = self.judge(&input, reply.as_deref(), &mut trace, &mut t);
            t.gate_us = micros(s);
            if trace.gate.persist {
                let exchange = Exchange {
                    input: &input,
                    reply: reply.as_deref(),
                    distil,
                    previous: before.last().map(|x| x.content.as_str()),
                    vector: None,
                };
                self.write_long_term(scope, exchange, &mut trace, &mut t);
            }
        }
        if let Some(run) = trace_task(&trace)
            .and_then(|task| run_of(task, tool_calls, None, user_at, Some(&turn_id)))
        {
            let s = Instant::now();
            match self.memory.record_procedure(scope, run) {
                Ok(w) => trace.writes.push(WriteEvent {
                    id: w.id,
                    memory: w.memory,
                    event: w.event,
                    kind: Kind::Procedure,
                    previous_memory: None,
                    reason: format!(
                        "the exchange's {} tool call(s), as a run of the task ({})",
                        tool_calls.len(),
                        w.procedure.tally()
                    ),
                    role: None,
                }),
                Err(e) => trace.notes.push(format!(
                    "the tool calls were not recorded as a procedure: {e}"
                )),
            }
            t.write_long_term_us += micros(s);
        } else if !tool_calls.is_empty() {
            trace
                .notes
                .push("tool calls without a user message: no task to record them under".into());
        }
        if !appended {
            trace.notes.push(format!(
                "exchange {turn_id} was already recorded in this session: nothing appended again"
            ));
        }
        t.total_us = micros(started);
        t.overhead_us = t.total_us.saturating_sub(t.write_embed_us + t.other_llm_us);
        trace.timings = t;
        trace.log();
        Ok(Recorded {
            turn_id,
            replayed: !appended,
            trace,
        })
    }
}

/// The task a recorded exchange's tool calls ran for: what the user said.
fn trace_task(trace: &TurnTrace) -> Option<&str> {
    Some(trace.query.as_str()).filter(|q| !q.trim().is_empty())
}
