//! The loop, one call per turn: read the short-term buffer, search the
//! long-term store, assemble the context within a token budget, call the LLM,
//! write the short-term buffer, decide whether to persist, write long-term,
//! and return the trace of exactly what was done.

mod layers;
mod messages;
mod record;
mod remember;
mod summary;
mod trace;

use std::sync::Arc;
use std::time::Instant;

use memloop_core::context::{assemble, AssembledContext, MemoryLine};
use memloop_core::short_term::{Role, ShortTermStore, Turn, Window};
use memloop_core::{ChatRequest, Error, Llm, Result, Scope, SearchHit};
use memloop_rules::gate::{self, GateDecision};
use serde::{Deserialize, Serialize};

pub use layers::LayerTrace;
pub use messages::{AddMessages, Added};
pub use record::{said_at, Exchanged, Recorded};
pub use remember::{RememberOptions, Remembered};
pub use summary::fold_summary;
pub use trace::{RetrievedMemory, SideGate, Timings, TraceTokens, TurnTrace};

use crate::config::{Layers, LoopConfig, StaleMemories};
use crate::token_count::TokenCounter;
use crate::write::{Distil, LongTermWriter, TurnToWrite};
use crate::{Memory, SearchQuery, TimeReading};

/// The answer to a turn and what it took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnOutcome {
    /// The model's reply; `None` offline (no LLM configured).
    pub reply: Option<String>,
    pub trace: TurnTrace,
    /// The exact request sent (or that would be sent offline).
    #[serde(skip)]
    pub request: Option<ChatRequest>,
}

/// The loop over one memory store, one short-term buffer, an optional LLM
/// and a long-term writer. Cheap to share: every part is behind an `Arc`.
#[derive(Clone)]
pub struct MemoryLoop {
    pub(crate) memory: Arc<Memory>,
    pub(crate) short_term: Arc<dyn ShortTermStore>,
    pub(crate) llm: Option<Arc<dyn Llm>>,
    pub(crate) writer: Arc<dyn LongTermWriter>,
    /// Whether the caller chose the writer (else it follows the LLM).
    pub(crate) custom_writer: bool,
    pub(crate) tokens: TokenCounter,
    pub(crate) cfg: LoopConfig,
}

fn micros(since: Instant) -> u64 {
    since.elapsed().as_micros() as u64
}

/// Steps 1 to 3 of a turn: the assembled context, the hits it drew on, the
/// session's buffer, and the input's embedding (the search query's, reused
/// for the episode if the turn is kept).
struct Prepared {
    ctx: AssembledContext,
    hits: Vec<SearchHit>,
    /// Per hit, a procedure's ranking factors (three-layer mode).
    factors: Vec<Option<crate::procedures::ProcedureScores>>,
    /// The sections of a three-layer prompt (empty in two-layer mode).
    layers: Vec<LayerTrace>,
    /// The turns the session holds; `buffer[0]` is its turn `first`
    /// (older ones were dropped by the bounded buffer).
    buffer: Vec<Turn>,
    first: usize,
    input_vector: Vec<f32>,
    time: Option<TimeReading>,
    /// What the reranking stage did in each search (empty: no stage).
    rerank: Vec<crate::rerank::RerankReport>,
}

/// One exchange handed to the long-term write: the input, the reply, which
/// sides the gate kept, the message before (context), and the input's
/// embedding when the caller has it.
pub(crate) struct Exchange<'a> {
    pub input: &'a Turn,
    pub reply: Option<&'a str>,
    pub distil: Distil,
    pub previous: Option<&'a str>,
    pub vector: Option<&'a [f32]>,
}

/// What [`MemoryLoop::forget`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Forgotten {
    pub memories_deleted: usize,
    pub history_deleted: usize,
    /// Short-term sessions cleared (a purge only).
    pub short_term_sessions_cleared: usize,
}

impl MemoryLoop {
    pub fn with_writer(mut self, writer: Arc<dyn LongTermWriter>) -> Self {
        self.writer = writer;
        self.custom_writer = true;
        self
    }

    /// Whether an LLM writes the replies (else the loop runs offline).
    pub fn has_llm(&self) -> bool {
        self.llm.is_some()
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The memory handle itself, for callers that move it into other threads.
    pub fn shared_memory(&self) -> Arc<Memory> {
        self.memory.clone()
    }

    pub fn short_term(&self) -> &dyn ShortTermStore {
        self.short_term.as_ref()
    }

    pub fn tokens(&self) -> &TokenCounter {
        &self.tokens
    }

    /// Forgets `scope`'s long-term memories and, with `purge`, their history
    /// and the scope's short-term sessions too (the named session, or every
    /// session recorded for the user): a purge leaves nothing of the user in
    /// either layer. The long-term store goes first; if the short-term store
    /// then fails (Redis down), the error says so and running the purge again
    /// finishes it.
    pub fn forget(&self, scope: &Scope, purge: bool) -> Result<Forgotten> {
        let long_term = self.memory.forget(scope, purge)?;
        let short_term_sessions_cleared = if purge {
            self.short_term.forget_scope(scope).map_err(|e| match e {
                Error::Remote(m) => Error::Remote(format!(
                    "the memories were purged, but not the short-term sessions: {m}; \
                     run the purge again once it is back"
                )),
                other => other,
            })?
        } else {
            0
        };
        Ok(Forgotten {
            memories_deleted: long_term.memories_deleted,
            history_deleted: long_term.history_deleted,
            short_term_sessions_cleared,
        })
    }

    pub fn config(&self) -> &LoopConfig {
        &self.cfg
    }

    /// One turn of `scope` (a user and a session) with the user's `input`.
    pub fn turn(&self, scope: &Scope, input: &str) -> Result<TurnOutcome> {
        let started = Instant::now();
        let mut t = Timings::default();
        let session = session_of(scope)?;
        let user_turn = Turn::new(Role::User, input);
        user_turn.validate()?;

        let mut prepared = self.prepare(scope, session, input, &mut t)?;
        let mut trace = self.new_trace(scope, session, input, &mut prepared);
        let Prepared {
            ctx,
            buffer,
            first,
            input_vector,
            ..
        } = prepared;
        let request = ChatRequest::new(ctx.system.clone(), ctx.messages.clone())
            .max_tokens(self.cfg.reply_tokens);

        let reply = match &self.llm {
            Some(llm) => {
                let s = Instant::now();
                let resp = llm.chat(&request)?;
                t.llm_us = micros(s);
                trace.model = Some(resp.model.clone());
                trace.llm_attempts = resp.attempts;
                trace.tokens.reply = resp
                    .output_tokens
                    .map_or_else(|| self.tokens.count(&resp.text), |n| n as usize);
                if let Some(n) = resp.input_tokens {
                    trace
                        .notes
                        .push(format!("the provider counted {n} input tokens"));
                }
                Some(resp.text)
            }
            None => None,
        };

        // Short-term always: the user's turn and the reply, in one atomic append.
        let s = Instant::now();
        let mut new_turns = vec![user_turn.clone()];
        if let Some(r) = reply.as_deref().filter(|r| !r.trim().is_empty()) {
            new_turns.push(Turn::new(Role::Assistant, r));
        }
        // Recorded as the user's session, so a purge of the user clears it.
        self.short_term
            .append_for(&scope.tenant, scope.user_id.as_deref(), session, &new_turns)?;
        t.write_short_term_us = micros(s);

        // Long-term only after the gate, which judges each side by its role.
        let s = Instant::now();
        let reply_text = reply.as_deref().filter(|r| !r.trim().is_empty());
        let distil = self.judge(&user_turn, reply_text, &mut trace, &mut t);
        t.gate_us = micros(s);
        if trace.gate.persist {
            let exchange = Exchange {
                input: &user_turn,
                reply: reply_text,
                distil,
                previous: buffer.last().map(|x| x.content.as_str()),
                vector: Some(&input_vector),
            };
            self.write_long_term(scope, exchange, &mut trace, &mut t);
        }

        let s = Instant::now();
        if self.cfg.summary_tokens > 0 && ctx.turns_left_out > 0 {
            let window = Window {
                first,
                turns: buffer,
            };
            match self.fold(scope, session, &window, ctx.turns_left_out, &mut t) {
                Ok(Some(lost)) => trace.notes.push(format!(
                    "{lost} turns left the short-term buffer before the summary folded them (appended outside a turn)"
                )),
                Ok(None) => {}
                Err(e) => trace
                    .notes
                    .push(format!("the session summary was not updated: {e}")),
            }
        }
        t.summary_us = micros(s);

        t.total_us = micros(started);
        t.overhead_us = t
            .total_us
            .saturating_sub(t.llm_us + t.embed_query_us + t.write_embed_us + t.other_llm_us);
        trace.timings = t;
        trace.log();
        Ok(TurnOutcome {
            reply,
            trace,
            request: Some(request),
        })
    }

    /// The context a turn would send, without calling the LLM or writing
    /// anything (`POST /v1/context`, offline chat).
    pub fn context(&self, scope: &Scope, input: &str) -> Result<(ChatRequest, TurnTrace)> {
        let session = session_of(scope)?;
        Turn::new(Role::User, input).validate()?;
        let mut t = Timings::default();
        let started = Instant::now();
        let mut prepared = self.prepare(scope, session, input, &mut t)?;
        let mut trace = self.new_trace(scope, session, input, &mut prepared);
        let ctx = prepared.ctx;
        let request = ChatRequest::new(ctx.system.clone(), ctx.messages.clone())
            .max_tokens(self.cfg.reply_tokens);
        t.total_us = micros(started);
        t.overhead_us = t.total_us.saturating_sub(t.embed_query_us);
        trace.timings = t;
        trace.gate = GateDecision {
            persist: false,
            reason: "context only: nothing written".into(),
        };
        trace.log();
        Ok((request, trace))
    }

    /// Steps 1 to 3: buffer, search, assembly.
    fn prepare(
        &self,
        scope: &Scope,
        session: &str,
        input: &str,
        t: &mut Timings,
    ) -> Result<Prepared> {
        let s = Instant::now();
        let Window {
            first,
            turns: buffer,
        } = self.short_term.read_window(&scope.tenant, session)?;
        let summary = self.short_term.summary(&scope.tenant, session)?;
        t.read_short_term_us = micros(s);

        let s = Instant::now();
        let vector = self.memory.embedder().embed_query(input)?;
        t.embed_query_us = micros(s);
        let summary_text = summary
            .as_ref()
            .filter(|s| !s.text.is_empty())
            .map(|s| s.text.as_str());
        let s = Instant::now();
        let mut query = SearchQuery::new(long_term_scope(scope), input);
        query.top_k = self.cfg.top_k;
        // "What did we talk about last session?": the words' time, read
        // against the turn's own time, from inside the session going on.
        let now = self.memory.clock().now();
        let time =
            self.memory
                .read_time_during(&mut query, now, self.cfg.time_mode, Some(session))?;
        // Words naming a session ask for what was said there, whatever it
        // was: the session is their relevance, so the floors for weak
        // matches do not apply to its memories.
        let named_session = time.as_ref().is_some_and(|t| t.session.is_some());
        if !named_session {
            query.min_score = self.cfg.min_score;
        }
        if self.cfg.layers == Layers::Three {
            // Searches and assembly interleave per layer: timed as search.
            let r = self.recall_layers(
                (&query, named_session),
                session,
                &vector,
                summary_text,
                &buffer,
            )?;
            t.search_us = micros(s);
            return Ok(Prepared {
                ctx: r.ctx,
                hits: r.hits,
                factors: r.factors,
                layers: r.layers,
                buffer,
                first,
                input_vector: vector,
                time,
                rerank: r.rerank,
            });
        }
        let searched = self.memory.search_by_vector_traced(&query, &vector)?;
        let mut hits = searched.hits;
        hits.retain(|h| self.admits(h, named_session));
        t.search_us = micros(s);

        let s = Instant::now();
        let lines: Vec<MemoryLine> = hits
            .iter()
            .map(|h| layers::line_of(h, h.record.text.clone(), session))
            .collect();
        let count = |s: &str| self.tokens.count(s);
        let ctx = assemble(
            &self.cfg.system_prompt,
            &lines,
            summary_text,
            &buffer,
            input,
            &self.cfg.budget,
            &count,
        );
        t.assemble_us = micros(s);
        Ok(Prepared {
            ctx,
            factors: vec![None; hits.len()],
            hits,
            layers: Vec::new(),
            buffer,
            first,
            input_vector: vector,
            time,
            rerank: searched.rerank.into_iter().collect(),
        })
    }

    /// Whether a hit may be offered to the prompt: from a session the input
    /// names, found by keyword, or by meaning at `min_similarity`; a stale
    /// one only when annotated.
    fn admits(&self, h: &SearchHit, named_session: bool) -> bool {
        (named_session
            || h.scores.bm25.is_some()
            || h.scores.vector.unwrap_or(0.0) >= self.cfg.min_similarity)
            && (self.cfg.stale == StaleMemories::Annotate || h.superseded_by.is_none())
    }

    /// The trace of a prepared turn; its hits move into the trace.
    fn new_trace(&self, scope: &Scope, session: &str, input: &str, p: &mut Prepared) -> TurnTrace {
        let ctx = &p.ctx;
        let factors = std::mem::take(&mut p.factors);
        let layers = std::mem::take(&mut p.layers);
        let retrieved = std::mem::take(&mut p.hits)
            .into_iter()
            .zip(&ctx.included)
            .zip(factors)
            .map(|((h, &included), procedure)| RetrievedMemory {
                id: h.record.id,
                kind: h.record.kind,
                memory: h.record.text,
                score: h.score,
                scores: h.scores,
                included,
                superseded_by: h.superseded_by,
                procedure,
            })
            .collect();
        TurnTrace {
            turn_id: uuid_v7(),
            tenant: scope.tenant.clone(),
            user_id: scope.user_id.clone(),
            session_id: session.to_string(),
            query: input.to_string(),
            retrieved,
            turns_in_prompt: ctx.messages.len().saturating_sub(1),
            turns_left_out: p.first + ctx.turns_left_out,
            tokens: TraceTokens {
                input: ctx.tokens,
                reply: 0,
            },
            model: None,
            llm_attempts: 0,
            gate: GateDecision {
                persist: false,
                reason: String::new(),
            },
            gates: Vec::new(),
            writes: Vec::new(),
            notes: Vec::new(),
            timings: Timings::default(),
            recorded: false,
            time: std::mem::take(&mut p.time),
            layers,
            rerank: std::mem::take(&mut p.rerank),
        }
    }

    /// Judges each side of an exchange by its role, records the decisions
    /// in the trace (the exchange is kept when any side is), and says which
    /// sides to distil facts from.
    pub(crate) fn judge(
        &self,
        input: &Turn,
        reply: Option<&str>,
        trace: &mut TurnTrace,
        t: &mut Timings,
    ) -> Distil {
        let first = self.decide(&input.content, input.role, t);
        let assistant = reply.map(|r| self.decide(r, Role::Assistant, t));
        let distil = Distil {
            text: first.persist,
            reply: assistant.as_ref().is_some_and(|a| a.persist),
        };
        trace.gate = match &assistant {
            None => first.clone(),
            Some(a) => GateDecision {
                persist: distil.text || distil.reply,
                reason: format!("{}: {}; assistant: {}", input.role, first.reason, a.reason),
            },
        };
        trace.gates = std::iter::once((input.role, first))
            .chain(assistant.map(|a| (Role::Assistant, a)))
            .map(|(role, d)| SideGate {
                role,
                persist: d.persist,
                reason: d.reason,
            })
            .collect();
        distil
    }

    /// The heuristic gate, then (if configured, the role is judged and it
    /// said skip) the LLM's tag.
    fn decide(&self, input: &str, role: Role, t: &mut Timings) -> GateDecision {
        let decision = gate::heuristic(input, role.as_str(), &self.cfg.gate);
        let Some(llm) = self.llm.as_ref().filter(|_| {
            self.cfg.llm_gate && !decision.persist && self.cfg.gate.judges(role.as_str())
        }) else {
            return decision;
        };
        let s = Instant::now();
        let request = ChatRequest::new(
            "Answer YES or NO only.",
            vec![memloop_core::ChatMessage::new(
                "user",
                gate::llm_tag_prompt(input),
            )],
        )
        .max_tokens(3);
        let tagged = llm
            .chat(&request)
            .ok()
            .and_then(|r| gate::parse_llm_tag(&r.text));
        t.other_llm_us += micros(s);
        match tagged {
            Some(true) => GateDecision {
                persist: true,
                reason: format!(
                    "the LLM tagged it worth keeping (heuristic: {})",
                    decision.reason
                ),
            },
            Some(false) => GateDecision {
                persist: false,
                reason: format!("{}; the LLM agreed", decision.reason),
            },
            None => decision,
        }
    }

    fn write_long_term(
        &self,
        scope: &Scope,
        exchange: Exchange<'_>,
        trace: &mut TurnTrace,
        t: &mut Timings,
    ) {
        let s = Instant::now();
        let turn_id = trace.turn_id.clone();
        let input = TurnToWrite {
            scope,
            turn_id: &turn_id,
            role: exchange.input.role,
            text: &exchange.input.content,
            at: exchange.input.at,
            context: exchange.previous,
            vector: exchange.vector,
            reply: exchange.reply,
            distil: exchange.distil,
            expires_at: None,
            metadata: None,
        };
        match self.writer.write(&self.memory, &input) {
            Ok(report) => {
                t.write_embed_us += report.embed_us;
                t.other_llm_us += report.llm_us;
                trace.writes = report.events;
                trace.notes.extend(report.notes);
                if let Some(why) = report.deferred {
                    trace.notes.push(format!("long-term write deferred: {why}"));
                }
            }
            // The turn still returns: the reply is the user's, the memory is ours.
            Err(e) => trace.notes.push(format!("long-term write failed: {e}")),
        }
        t.write_long_term_us = micros(s);
    }

    /// Folds the turns that left the prompt window (the window's first
    /// `left_out` turns) into the summary, which counts turns from the
    /// session's start: so the window's turn `i` is the session's
    /// `first + i`. Returns how many turns the buffer dropped before the
    /// summary could fold them (only turns appended outside a turn, which
    /// no fold saw, are ever lost this way).
    fn fold(
        &self,
        scope: &Scope,
        session: &str,
        window: &Window,
        left_out: usize,
        t: &mut Timings,
    ) -> Result<Option<usize>> {
        let current = self
            .short_term
            .summary(&scope.tenant, session)?
            .unwrap_or_default();
        let covers = window.first + left_out;
        if covers <= current.covers {
            return Ok(None);
        }
        let from = current.covers.max(window.first);
        let lost = (from > current.covers).then(|| from - current.covers);
        let s = Instant::now();
        let folded = fold_summary(
            &current,
            &window.turns[from - window.first..left_out],
            covers,
            self.cfg.summary_tokens,
            self.llm.as_deref(),
            &self.tokens,
            &self.cfg.gate,
        )?;
        if self.llm.is_some() {
            t.other_llm_us += micros(s);
        }
        self.short_term
            .set_summary(&scope.tenant, session, &folded)?;
        Ok(lost)
    }
}

fn session_of(scope: &Scope) -> Result<&str> {
    scope.validate()?;
    scope
        .session_id
        .as_deref()
        .ok_or_else(|| Error::invalid("a turn needs a session: pass --session ID (or session_id)"))
}

/// Long-term memories of the user come from every session, not just this one.
fn long_term_scope(scope: &Scope) -> Scope {
    let mut s = scope.clone();
    s.session_id = None;
    s
}

fn uuid_v7() -> String {
    uuid::Uuid::now_v7().to_string()
}
