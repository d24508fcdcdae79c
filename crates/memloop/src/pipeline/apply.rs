//! Reconciling distilled facts with the store and applying the decisions.

use std::time::Instant;

use memloop_core::short_term::Role;
use memloop_core::{Event, Kind, NewMemory, Provenance, Result, SearchHit};
use memloop_rules::extract::{reconcile, Candidate, Decision, Fact};

use super::{WritePipeline, CANDIDATES};
use crate::write::{TurnToWrite, WriteEvent, WriteReport};
use crate::{Memory, SearchQuery};

/// A fact ready to store: its text embedded, its provenance set.
pub(super) fn new_memory(fact: &Fact, turn: &TurnToWrite, source: &str) -> NewMemory {
    let mut m = NewMemory::text(&fact.text).kind(fact.kind);
    m.metadata = fact.metadata();
    if let (Some(obj), false) = (m.metadata.as_object_mut(), fact.entities.is_empty()) {
        obj.insert("entities".into(), fact.entities.clone().into());
    }
    m.metadata = turn.metadata_with(m.metadata);
    crate::expand::fill_links(&mut m.links, &m.text, &m.metadata);
    for name in &fact.entities {
        m.links
            .mention(name, memloop_core::links::EntityKind::Unknown);
    }
    m.importance = Some(fact.importance.clamp(0.0, 1.0));
    m.expires_at = turn.expires_at;
    // A plan's future date is not when the fact became true: that is now.
    m.valid_from = Some(fact.time.filter(|&t| t <= turn.at).unwrap_or(turn.at));
    m.provenance = Provenance {
        session_id: turn.scope.session_id.clone(),
        turn_ids: vec![turn.turn_id.to_string()],
        source: source.to_string(),
        confidence: Some(fact.confidence.clamp(0.0, 1.0)),
    };
    m
}

/// The stored current facts nearest each fact (one embedding batch).
pub(super) fn candidates_for(
    memory: &Memory,
    turn: &TurnToWrite,
    vectors: &[Vec<f32>],
    facts: &[Fact],
) -> Result<Vec<Vec<SearchHit>>> {
    let mut scope = turn.scope.clone();
    scope.session_id = None;
    facts
        .iter()
        .zip(vectors)
        .map(|(f, v)| {
            let mut q = SearchQuery::new(scope.clone(), &f.text);
            q.top_k = CANDIDATES;
            q.kinds = vec![Kind::Fact, Kind::Procedure];
            memory.search_by_vector(&q, v)
        })
        .collect()
}

/// A stored hit as reconciliation reads it: its text, cosine and structure.
pub(super) fn candidate(h: &SearchHit) -> Candidate<'_> {
    Candidate::from_metadata(
        &h.record.id,
        &h.record.text,
        h.scores.vector.unwrap_or(0.0),
        &h.record.metadata,
    )
}

/// Reconciles each fact with its candidates and applies the decision.
pub(super) fn reconcile_all(
    pipeline: &WritePipeline,
    memory: &Memory,
    turn: &TurnToWrite,
    said: Vec<(Role, Fact)>,
    vectors: Option<Vec<Vec<f32>>>,
    source: &str,
    report: &mut WriteReport,
) -> Result<()> {
    if said.is_empty() {
        return Ok(());
    }
    let (roles, facts): (Vec<Role>, Vec<Fact>) = said.into_iter().unzip();
    let vectors = match vectors {
        Some(v) => v,
        None => {
            let s = Instant::now();
            let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
            let v = memory.embedder().embed_batch(&texts)?;
            report.embed_us += s.elapsed().as_micros() as u64;
            v
        }
    };
    let hits = candidates_for(memory, turn, &vectors, &facts)?;
    for (((fact, role), vector), hits) in facts.iter().zip(roles).zip(vectors).zip(hits) {
        let candidates: Vec<Candidate> = hits.iter().map(candidate).collect();
        let (decision, reason) = reconcile(fact, &candidates, &pipeline.thresholds);
        let decided = Decided {
            decision,
            reason,
            role,
        };
        apply(
            pipeline,
            memory,
            turn,
            (fact, vector),
            decided,
            source,
            report,
        )?;
    }
    Ok(())
}

/// What reconciliation decided for one fact, why, and who said the fact.
pub(super) struct Decided {
    pub decision: Decision,
    pub reason: String,
    pub role: Role,
}

/// Times a fact is decided again after its target stopped being current.
const REDECIDE: usize = 3;

/// Applies one decision, recording the event, its reason and its side.
/// When the stored fact it acts on stopped being current after the
/// decision was made (another writer, another server, superseded or
/// deleted it first), the fact is decided again by the rules against the
/// store as it is now, so the loser of a race supersedes the winner
/// instead of failing or adding a second current fact.
pub(super) fn apply(
    pipeline: &WritePipeline,
    memory: &Memory,
    turn: &TurnToWrite,
    (fact, vector): (&Fact, Vec<f32>),
    mut decided: Decided,
    source: &str,
    report: &mut WriteReport,
) -> Result<()> {
    let mut attempt = 0;
    loop {
        let target = decided.decision.target().map(str::to_string);
        let role = decided.role;
        let err = match apply_once(memory, turn, fact, vector.clone(), decided, source, report) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let lost = match &target {
            Some(id) if attempt < REDECIDE => no_longer_current(memory, turn, id)?,
            _ => false,
        };
        if !lost {
            return Err(err);
        }
        attempt += 1;
        let hits = candidates_for(
            memory,
            turn,
            std::slice::from_ref(&vector),
            std::slice::from_ref(fact),
        )?;
        let candidates: Vec<Candidate> = hits.iter().flatten().map(candidate).collect();
        let (decision, reason) = reconcile(fact, &candidates, &pipeline.thresholds);
        report.notes.push(format!(
            "memory {} stopped being current before \"{}\" was applied (another writer got there first); decided again: {reason}",
            target.unwrap_or_default(),
            fact.text
        ));
        decided = Decided {
            decision,
            reason,
            role,
        };
    }
}

/// Whether memory `id` is stored but no longer current (superseded or
/// deleted): then a decision about it is out of date, not wrong.
fn no_longer_current(memory: &Memory, turn: &TurnToWrite, id: &str) -> Result<bool> {
    match memory.store().get(&turn.scope.tenant, id) {
        Ok(rec) => Ok(rec.valid_until.is_some()),
        Err(memloop_core::Error::NotFound(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Applies one decision as it stands.
fn apply_once(
    memory: &Memory,
    turn: &TurnToWrite,
    fact: &Fact,
    vector: Vec<f32>,
    decided: Decided,
    source: &str,
    report: &mut WriteReport,
) -> Result<()> {
    let store = memory.store();
    let tenant = turn.scope.tenant.as_str();
    let Decided {
        decision,
        reason,
        role,
    } = decided;
    let event = match decision {
        Decision::Add => {
            let written =
                memory.add_embedded(turn.scope, vec![(new_memory(fact, turn, source), vector)])?;
            written.into_iter().next().map(|w| WriteEvent {
                id: w.id,
                memory: w.memory,
                event: w.event,
                kind: fact.kind,
                previous_memory: None,
                reason,
                role: None,
            })
        }
        Decision::Noop { id } => {
            store.touch(tenant, &[id.as_str()])?;
            Some(WriteEvent {
                memory: store.get(tenant, &id)?.text,
                id,
                event: Event::Noop,
                kind: fact.kind,
                previous_memory: None,
                reason,
                role: None,
            })
        }
        Decision::Update { id } => {
            // Through `Memory` so the new version gets its kind's TTL.
            let (new, old) = memory.supersede(
                turn.scope,
                &id,
                (new_memory(fact, turn, source), vector),
                &reason,
            )?;
            report.notes.push(format!(
                "conflict resolved: \"{}\" supersedes \"{}\" (memory {})",
                new.text, old.text, old.id
            ));
            Some(WriteEvent {
                id: new.id,
                memory: new.text,
                event: Event::Update,
                kind: fact.kind,
                previous_memory: Some(old.text),
                reason,
                role: None,
            })
        }
        Decision::Delete { id } => {
            let old = store.delete(tenant, &id, Some(&reason))?;
            Some(WriteEvent {
                id: old.id,
                memory: old.text,
                event: Event::Delete,
                kind: fact.kind,
                previous_memory: None,
                reason,
                role: None,
            })
        }
        Decision::Skip => {
            report.notes.push(format!(
                "nothing to retract for \"{}\": {reason}",
                fact.text
            ));
            None
        }
    };
    report.events.extend(event.map(|e| WriteEvent {
        role: Some(role),
        ..e
    }));
    Ok(())
}
