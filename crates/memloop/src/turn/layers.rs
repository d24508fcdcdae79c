//! Three-layer mode (`[loop] layers = "three"`): facts, procedures and
//! recent episodes searched apart with the turn's one query vector, and
//! assembled as a section each within its share of the memory budget.

use memloop_core::context::{assemble_sections, AssembledContext, MemoryLine, Section};
use memloop_core::short_term::Turn;
use memloop_core::{Kind, Result, SearchHit};
use serde::{Deserialize, Serialize};

use super::MemoryLoop;
use crate::procedures::{ProcedureQuery, ProcedureScores};
use crate::SearchQuery;

pub const FACTS_HEADING: &str = "What you know about the user (facts, with dates):";
pub const PROCEDURES_HEADING: &str =
    "How tasks were done before (procedures: runs, steps, pitfalls to avoid):";
pub const EPISODES_HEADING: &str = "What happened in earlier sessions (oldest first):";

/// One section of a three-layer prompt, as the trace shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerTrace {
    /// fact, procedure or episode: the kind of every memory it holds.
    pub layer: Kind,
    /// Its share of the memory budget, and that share in tokens.
    pub share: f32,
    pub budget_tokens: usize,
    /// Tokens its block took (more than its budget when others left room).
    pub tokens: usize,
    pub retrieved: usize,
    pub included: usize,
}

/// The hits of every layer, in section order, with the procedures' factors.
pub(super) struct Recalled {
    pub hits: Vec<SearchHit>,
    pub factors: Vec<Option<ProcedureScores>>,
    pub ctx: AssembledContext,
    pub layers: Vec<LayerTrace>,
    pub rerank: Vec<crate::rerank::RerankReport>,
}

/// What the prompt shows of every hit: its text, or what replaced it.
pub(super) fn line_of(h: &SearchHit, text: String, session: &str) -> MemoryLine {
    MemoryLine {
        id: h.record.id.clone(),
        // Shown with its date and what replaced it, so the model reads it
        // as what was once said, not as current.
        text: match &h.superseded_by {
            Some(r) => format!("{text} (no longer true; now: {})", r.text),
            None => text,
        },
        date: h.record.valid_from,
        from_this_session_at: (h.record.provenance.session_id.as_deref() == Some(session))
            .then_some(h.record.created_at),
    }
}

impl MemoryLoop {
    /// One kind's hits for the turn: the turn's query (its time read)
    /// kept to `kind`, by the loop's rules (min_similarity, stale).
    fn layer_hits(
        &self,
        base: &SearchQuery,
        named_session: bool,
        vector: &[f32],
        kind: Kind,
        rerank: &mut Vec<crate::rerank::RerankReport>,
    ) -> Result<Vec<SearchHit>> {
        let mut query = base.clone();
        query.kinds = vec![kind];
        let searched = self.memory.search_by_vector_traced(&query, vector)?;
        rerank.extend(searched.rerank);
        let mut hits = searched.hits;
        hits.retain(|h| self.admits(h, named_session));
        Ok(hits)
    }

    /// Searches the three layers and assembles their sections;
    /// `named_session`: the input names a session (`MemoryLoop::admits`).
    pub(super) fn recall_layers(
        &self,
        (query, named_session): (&SearchQuery, bool),
        session: &str,
        vector: &[f32],
        summary: Option<&str>,
        buffer: &[Turn],
    ) -> Result<Recalled> {
        let input = query.text.as_str();
        let mut rerank = Vec::new();
        let facts = self.layer_hits(query, named_session, vector, Kind::Fact, &mut rerank)?;
        let episodes = self.layer_hits(query, named_session, vector, Kind::Episode, &mut rerank)?;
        let mut pq = ProcedureQuery::new(query.scope.clone(), input);
        pq.top_k = self.cfg.procedure_top_k;
        pq.min_similarity = self.cfg.min_similarity;
        let procedures = self.memory.search_procedures_by_vector(&pq, vector)?;

        let plain = |hits: &[SearchHit]| -> Vec<MemoryLine> {
            hits.iter()
                .map(|h| line_of(h, h.record.text.clone(), session))
                .collect()
        };
        let fact_lines = plain(&facts);
        let episode_lines = plain(&episodes);
        let procedure_lines: Vec<MemoryLine> = procedures
            .iter()
            .map(|p| MemoryLine {
                date: p
                    .procedure
                    .as_ref()
                    .map_or(p.record.valid_from, |x| x.last_run),
                ..line_of(&as_hit(p), p.prompt_text(), session)
            })
            .collect();
        let shares = self.cfg.shares;
        let sections = [
            Section {
                heading: FACTS_HEADING,
                lines: &fact_lines,
                share: shares.facts,
                chronological: false,
            },
            Section {
                heading: PROCEDURES_HEADING,
                lines: &procedure_lines,
                share: shares.procedures,
                chronological: false,
            },
            Section {
                heading: EPISODES_HEADING,
                lines: &episode_lines,
                share: shares.episodes,
                chronological: true,
            },
        ];
        let count = |s: &str| self.tokens.count(s);
        let ctx = assemble_sections(
            &self.cfg.system_prompt,
            &sections,
            summary,
            buffer,
            input,
            &self.cfg.budget,
            &count,
        );
        let room = self.cfg.budget.memory_tokens;
        let mut offset = 0;
        let layers = [
            (Kind::Fact, shares.facts),
            (Kind::Procedure, shares.procedures),
            (Kind::Episode, shares.episodes),
        ]
        .into_iter()
        .zip(&sections)
        .zip(&ctx.section_tokens)
        .map(|(((layer, share), s), &tokens)| {
            let included = ctx.included[offset..offset + s.lines.len()]
                .iter()
                .filter(|&&b| b)
                .count();
            offset += s.lines.len();
            LayerTrace {
                layer,
                share,
                budget_tokens: (room as f64 * f64::from(share)).floor() as usize,
                tokens,
                retrieved: s.lines.len(),
                included,
            }
        })
        .collect();
        let n_facts = facts.len();
        let mut factors = vec![None; n_facts];
        factors.extend(procedures.iter().map(|p| Some(p.scores)));
        factors.extend(std::iter::repeat_n(None, episodes.len()));
        let hits = facts
            .into_iter()
            .chain(procedures.into_iter().map(|p| as_hit(&p)))
            .chain(episodes)
            .collect();
        Ok(Recalled {
            hits,
            factors,
            ctx,
            layers,
            rerank,
        })
    }
}

/// A procedure hit as the search hit it came from (its record and signals).
fn as_hit(p: &crate::procedures::ProcedureHit) -> SearchHit {
    SearchHit {
        record: p.record.clone(),
        score: p.score,
        scores: p.signals,
        superseded_by: None,
    }
}
