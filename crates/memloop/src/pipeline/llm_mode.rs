//! The LLM mode: one call per turn that both distils the facts and decides
//! what each does to the stored ones. Stored facts are shown as small
//! integers, so the model cannot invent an id that looks real; an integer it
//! was not shown is rejected (logged in the trace) and that fact falls back
//! to the structural reconciliation of the offline mode.

use std::time::Instant;

use memloop_core::short_term::Role;
use memloop_core::{ChatMessage, ChatRequest, Error, Kind, Llm, Result};
use memloop_rules::extract::{
    attribute_is_multi, may_retire, reconcile, Candidate, Decision, Fact, Polarity,
};
use serde::Deserialize;

use super::apply::{apply, candidate, candidates_for, Decided};
use super::WritePipeline;
use crate::write::{TurnToWrite, WriteReport};
use crate::{Memory, SearchQuery};

/// What the model may do with a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LlmOp {
    Add,
    Update,
    Delete,
    Noop,
}

/// One fact as the model returns it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmFact {
    pub text: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub attribute: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    /// The attribute holds several values side by side (likes, hobbies).
    #[serde(default)]
    pub multi: Option<bool>,
    #[serde(default)]
    pub entities: Vec<String>,
    /// `YYYY-MM-DD`, already resolved from the turn's date.
    #[serde(default)]
    pub date: Option<String>,
    #[serde(default)]
    pub importance: Option<f32>,
    #[serde(default)]
    pub confidence: Option<f32>,
    pub op: LlmOp,
    /// The shown memory it updates, deletes or repeats.
    #[serde(default)]
    pub target: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    facts: Vec<LlmFact>,
}

/// The prompt: the turn (or the exchange, both sides named) with its date,
/// who its facts may come from, and the stored facts as [0], [1], ….
pub fn extraction_prompt(turn: &TurnToWrite, existing: &[&str]) -> String {
    let date = chrono::DateTime::from_timestamp_millis(turn.at)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    let mut shown = String::new();
    for (i, t) in existing.iter().enumerate() {
        shown.push_str(&format!("[{i}] {t}\n"));
    }
    if shown.is_empty() {
        shown.push_str("(none)\n");
    }
    let text = turn.episode_text();
    let (said, whose) = match (turn.reply, turn.distil.reply) {
        (None, _) => ("The user said", String::new()),
        (Some(_), false) => (
            "The exchange",
            "Facts come only from what the user said: the assistant's words are context, \
             never facts about the user. "
                .to_string(),
        ),
        (Some(_), true) => (
            "The exchange",
            "Attribute each fact to who said it: subject \"user\" for what the user said about \
             themselves and their world, \"assistant\" for what the assistant said of itself; \
             never turn one's words into a fact about the other. "
                .to_string(),
        ),
    };
    format!(
        "Today is {date}. {said}:\n\"\"\"\n{text}\n\"\"\"\n\n\
         Stored memories about the user:\n{shown}\n\
         Extract the facts worth remembering long-term (preferences, facts about the user and their world, \
         decisions, plans, corrections). {whose}Each fact: one short self-contained sentence in the third person \
         (\"User lives in Berlin\"), with absolute dates (resolve \"last month\" from today's date). \
         For each fact decide its op against the stored memories: ADD (new), UPDATE (replaces stored memory \
         [target] with a new value of the same single-valued attribute; an attribute with several values side \
         by side, \"multi\": true, such as likes or hobbies, gets ADD), DELETE (the user retracts or negates stored memory \
         [target]), NOOP (stored memory [target] already says it). Only use target numbers listed above. \
         Small talk yields no facts.\n\
         Reply with JSON only: {{\"facts\":[{{\"text\":str,\"kind\":\"fact\"|\"procedure\",\"subject\":str,\
         \"attribute\":str|null,\"value\":str|null,\"multi\":bool,\"entities\":[str],\"date\":\"YYYY-MM-DD\"|null,\
         \"importance\":0..1,\"confidence\":0..1,\"op\":\"ADD\"|\"UPDATE\"|\"DELETE\"|\"NOOP\",\"target\":int|null}}]}}"
    )
}

/// Who said a fact the model returned, by its subject: the assistant's own
/// facts name it; everything else is the user's side.
fn side_of(f: &LlmFact) -> Role {
    match f.subject.as_deref().map(|s| s.trim().to_lowercase()) {
        Some(s) if s == "assistant" || s.starts_with("assistant's") => Role::Assistant,
        _ => Role::User,
    }
}

/// Parses and validates the reply. Tolerates a fenced code block around
/// the JSON; anything else malformed is an error (the turn is queued).
pub fn parse_reply(reply: &str) -> Result<Vec<LlmFact>> {
    let trimmed = reply.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .unwrap_or(trimmed);
    let parsed: Reply = serde_json::from_str(body.trim()).map_err(|e| {
        Error::Remote(format!(
            "the LLM's extraction is not the expected JSON ({e}): {}",
            reply.chars().take(200).collect::<String>()
        ))
    })?;
    for f in &parsed.facts {
        memloop_core::text::validate_text(&f.text)
            .map_err(|e| Error::Remote(format!("the LLM returned an unusable fact text: {e}")))?;
        if matches!(f.op, LlmOp::Update | LlmOp::Delete | LlmOp::Noop) && f.target.is_none() {
            return Err(Error::Remote(format!(
                "the LLM said {:?} for \"{}\" without a target",
                f.op, f.text
            )));
        }
    }
    Ok(parsed.facts)
}

fn to_fact(f: &LlmFact) -> Fact {
    let time = f.date.as_deref().and_then(memloop_core::filter::parse_date);
    Fact {
        text: f.text.trim().to_string(),
        kind: match f.kind.as_deref() {
            Some("procedure") => Kind::Procedure,
            _ => Kind::Fact,
        },
        subject: f
            .subject
            .clone()
            .unwrap_or_else(|| "user".into())
            .to_lowercase(),
        attribute: f.attribute.clone().filter(|a| !a.is_empty()),
        value: f.value.clone().filter(|v| !v.is_empty()),
        // The rules' knowledge of a slot wins; else the model's word.
        multi: f
            .attribute
            .as_deref()
            .and_then(attribute_is_multi)
            .or(f.multi)
            .unwrap_or(false),
        polarity: if f.op == LlmOp::Delete {
            Polarity::Retracted
        } else {
            Polarity::Asserted
        },
        entities: f.entities.clone(),
        time,
        importance: f.importance.unwrap_or(0.5).clamp(0.0, 1.0),
        confidence: f.confidence.unwrap_or(0.8).clamp(0.0, 1.0),
    }
}

/// One call: extraction and reconciliation, then the decisions applied.
pub(super) fn write(
    pipeline: &WritePipeline,
    llm: &dyn Llm,
    memory: &Memory,
    turn: &TurnToWrite,
    turn_vector: Option<Vec<f32>>,
    report: &mut WriteReport,
) -> Result<()> {
    // The stored facts nearest the turn are what the model may refer to.
    let turn_vector = match turn_vector {
        Some(v) => v,
        None => {
            let s = Instant::now();
            let v = memory.embedder().embed(&turn.episode_text())?;
            report.embed_us += s.elapsed().as_micros() as u64;
            v
        }
    };
    let mut scope = turn.scope.clone();
    scope.session_id = None;
    let mut q = SearchQuery::new(scope, turn.episode_text());
    q.top_k = 10;
    q.kinds = vec![Kind::Fact, Kind::Procedure];
    let shown = memory.search_by_vector(&q, &turn_vector)?;
    let texts: Vec<&str> = shown.iter().map(|h| h.record.text.as_str()).collect();

    let request = ChatRequest::new(
        "You distil conversations into long-term memories. Reply with JSON only.",
        vec![ChatMessage::new("user", extraction_prompt(turn, &texts))],
    )
    .max_tokens(1024)
    .temperature(0.0)
    .json();
    let s = Instant::now();
    let reply = llm.chat(&request);
    report.llm_us += s.elapsed().as_micros() as u64;
    report.llm_calls += 1;
    let mut llm_facts = parse_reply(&reply?.text)?;
    let source = format!("llm:{}", llm.model_id());
    // Only the sides the gate kept give facts.
    llm_facts.retain(|f| {
        let role = side_of(f);
        let kept = (role == Role::Assistant && turn.distil.reply)
            || (role != Role::Assistant && turn.distil.text);
        if !kept {
            report.notes.push(format!(
                "dropped the LLM's fact \"{}\": the {role} side of this turn is not distilled",
                f.text
            ));
        }
        kept
    });

    let facts: Vec<Fact> = llm_facts.iter().map(to_fact).collect();
    let s = Instant::now();
    let fact_texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
    let vectors = if fact_texts.is_empty() {
        Vec::new()
    } else {
        memory.embedder().embed_batch(&fact_texts)?
    };
    report.embed_us += s.elapsed().as_micros() as u64;
    for (i, ((lf, fact), vector)) in llm_facts.iter().zip(&facts).zip(vectors).enumerate() {
        let target = lf
            .target
            .and_then(|t| usize::try_from(t).ok())
            .and_then(|t| shown.get(t));
        // The LLM may retire only a fact of the same slot (or the same pair
        // of subject and value): anything wider is refused and the fact
        // judged by the rules, which never retire outside that set. The
        // stored facts nearest the fact itself (not the turn) give the
        // cosine that judges a target without structure.
        let near = match (lf.op, target) {
            (LlmOp::Add | LlmOp::Noop, Some(_)) | (LlmOp::Add, None) => Vec::new(),
            _ => candidates_for(
                memory,
                turn,
                std::slice::from_ref(&vector),
                std::slice::from_ref(fact),
            )?
            .into_iter()
            .next()
            .unwrap_or_default(),
        };
        let refusal = match (lf.op, target) {
            (LlmOp::Update | LlmOp::Delete, Some(h)) => {
                let similarity = near
                    .iter()
                    .find(|n| n.record.id == h.record.id)
                    .and_then(|n| n.scores.vector)
                    .unwrap_or(0.0);
                let stored = Candidate {
                    similarity,
                    ..candidate(h)
                };
                may_retire(fact, &stored, &pipeline.thresholds)
                    .err()
                    .map(|why| {
                        format!(
                            "refused the LLM's {:?} of memory {} for \"{}\": {why}; decided by the rules",
                            lf.op, h.record.id, fact.text
                        )
                    })
            }
            (op, None) if op != LlmOp::Add => Some(format!(
                "the LLM named memory {:?} for {op:?} of fact {i}, but was shown only 0..{}: rejected; decided by the rules",
                lf.target,
                shown.len()
            )),
            _ => None,
        };
        let (decision, reason) = match (lf.op, target, refusal) {
            (_, _, Some(note)) => {
                report.notes.push(note);
                let candidates: Vec<Candidate> = near.iter().map(candidate).collect();
                let (d, r) = reconcile(fact, &candidates, &pipeline.thresholds);
                (d, format!("{r} (rules; the LLM's op was refused)"))
            }
            (LlmOp::Add, ..) => (Decision::Add, "new fact (LLM)".to_string()),
            (LlmOp::Update, Some(h), None) => (
                Decision::Update {
                    id: h.record.id.clone(),
                },
                format!("the LLM replaces \"{}\"", h.record.text),
            ),
            (LlmOp::Delete, Some(h), None) => (
                Decision::Delete {
                    id: h.record.id.clone(),
                },
                format!("the LLM retracts it: \"{}\"", lf.text),
            ),
            (LlmOp::Noop, Some(h), None) => (
                Decision::Noop {
                    id: h.record.id.clone(),
                },
                "already known (LLM)".to_string(),
            ),
            (_, None, None) => (Decision::Add, "new fact (LLM)".to_string()),
        };
        // A retraction is applied to the target, never stored as a fact itself.
        let decided = Decided {
            decision,
            reason,
            role: side_of(lf),
        };
        apply(
            pipeline,
            memory,
            turn,
            (fact, vector),
            decided,
            &source,
            report,
        )?;
    }
    Ok(())
}
