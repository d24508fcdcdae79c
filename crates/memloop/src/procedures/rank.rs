//! Retrieval for planning: procedures found by the task's meaning and
//! keywords (the hybrid search), ranked by similarity × success rate ×
//! recency, each factor in the result.

use memloop_core::{Kind, MemoryRecord, Result, Scope, SearchHit, SignalScores};
use serde::Serialize;

use super::model::Procedure;
use crate::{Memory, SearchQuery};

/// Recency halves its distance to its floor every 30 days.
pub const RECENCY_HALF_LIFE_MS: i64 = 30 * 86_400_000;
/// A procedure is never worth less than half for being old: recency breaks
/// ties between equally similar and equally successful procedures, it does
/// not bury the only one that ever worked.
const RECENCY_FLOOR: f32 = 0.5;
/// Hits read per procedure returned: the ranking may reorder them.
const CANDIDATES_PER_RESULT: usize = 4;

/// A search of the procedural layer.
#[derive(Debug, Clone)]
pub struct ProcedureQuery {
    pub scope: Scope,
    pub text: String,
    pub top_k: usize,
    /// A procedure found by meaning alone needs this cosine (as the loop's
    /// `min_similarity`).
    pub min_similarity: f32,
}

impl ProcedureQuery {
    pub fn new(scope: Scope, text: impl Into<String>) -> ProcedureQuery {
        ProcedureQuery {
            scope,
            text: text.into(),
            top_k: 5,
            min_similarity: 0.3,
        }
    }
}

/// The factors of a procedure's rank; `score` is their product.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct ProcedureScores {
    /// The hybrid search's score (meaning and keywords), 0..1.
    pub similarity: f32,
    /// Laplace-smoothed: (successes + partials/2 + 1) / (runs + 2); 0.5 for
    /// a procedure with no runs recorded (an instruction such as "always …").
    pub success_rate: f32,
    /// 0.5..1 by the age of the last run (half-life 30 days).
    pub recency: f32,
    pub score: f32,
}

/// A procedure found for a task.
#[derive(Debug, Clone, Serialize)]
pub struct ProcedureHit {
    pub id: String,
    pub memory: String,
    pub score: f32,
    pub scores: ProcedureScores,
    /// The search's own signals (cosine, BM25, ranks).
    pub signals: SignalScores,
    /// The structure; None for a procedure memory written as plain text
    /// (an always/never instruction).
    pub procedure: Option<Procedure>,
    /// The pitfalls as sentences: "`npm run deploy` failed with EACCES;
    /// `sudo -u deploy npm run deploy` worked".
    pub pitfalls: Vec<String>,
    #[serde(skip)]
    pub record: MemoryRecord,
}

/// Recency of a run at `last_run` seen at `now`.
pub fn recency(last_run: i64, now: i64) -> f32 {
    let age = (now - last_run).max(0) as f64 / RECENCY_HALF_LIFE_MS as f64;
    RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * 0.5f64.powf(age) as f32
}

impl ProcedureHit {
    /// Scores one search hit of kind procedure at `now`.
    pub fn of(hit: SearchHit, now: i64) -> ProcedureHit {
        let procedure = Procedure::from_metadata(&hit.record.metadata);
        let (success_rate, last_run) = match &procedure {
            Some(p) => (p.success_rate(), p.last_run),
            None => (0.5, hit.record.valid_from),
        };
        let scores = ProcedureScores {
            similarity: hit.score,
            success_rate,
            recency: recency(last_run, now),
            score: 0.0,
        };
        let scores = ProcedureScores {
            score: scores.similarity * scores.success_rate * scores.recency,
            ..scores
        };
        let pitfalls = procedure
            .iter()
            .flat_map(|p| p.pitfalls.iter().map(|f| f.sentence()))
            .collect();
        ProcedureHit {
            id: hit.record.id.clone(),
            memory: hit.record.text.clone(),
            score: scores.score,
            scores,
            signals: hit.scores,
            procedure,
            pitfalls,
            record: hit.record,
        }
    }

    /// The procedure as one line of the prompt: the task, how its runs
    /// went, the steps, and each pitfall as "last time … failed".
    pub fn prompt_text(&self) -> String {
        let Some(p) = &self.procedure else {
            return self.memory.clone();
        };
        let mut line = format!("{} ({}): {}", p.task, p.tally(), p.steps_line());
        for f in &p.pitfalls {
            line.push_str("; pitfall: last time ");
            line.push_str(&f.sentence());
        }
        line
    }
}

/// Ranks procedure hits by their product of factors, best first.
pub fn rank(hits: Vec<SearchHit>, now: i64, top_k: usize) -> Vec<ProcedureHit> {
    let mut ranked: Vec<ProcedureHit> =
        hits.into_iter().map(|h| ProcedureHit::of(h, now)).collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    ranked.truncate(top_k);
    ranked
}

impl Memory {
    /// Procedures of the query's user (or agent), across sessions, for the
    /// task it describes; ranked by similarity × success rate × recency.
    pub fn search_procedures(&self, query: &ProcedureQuery) -> Result<Vec<ProcedureHit>> {
        if query.text.trim().is_empty() {
            return Err(memloop_core::Error::invalid(
                "the task to search for is empty: describe it in a few words",
            ));
        }
        let v = self.embedder().embed_query(&query.text)?;
        self.search_procedures_by_vector(query, &v)
    }

    /// `search_procedures` with the query's vector computed elsewhere (the
    /// loop's, shared by its searches).
    pub fn search_procedures_by_vector(
        &self,
        query: &ProcedureQuery,
        vector: &[f32],
    ) -> Result<Vec<ProcedureHit>> {
        query.scope.validate()?;
        let mut q = SearchQuery::new(super::owner(&query.scope), query.text.clone());
        q.kinds = vec![Kind::Procedure];
        q.top_k = query
            .top_k
            .saturating_mul(CANDIDATES_PER_RESULT)
            .clamp(1, 1000);
        let hits = self
            .search_by_vector(&q, vector)?
            .into_iter()
            .filter(|h| {
                h.scores.bm25.is_some() || h.scores.vector.unwrap_or(0.0) >= query.min_similarity
            })
            .collect();
        Ok(rank(hits, self.clock().now(), query.top_k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recency_is_one_now_and_never_below_its_floor() {
        assert!((recency(1_000, 1_000) - 1.0).abs() < 1e-6);
        assert!((recency(0, RECENCY_HALF_LIFE_MS) - 0.75).abs() < 1e-6);
        assert!(recency(0, 100 * RECENCY_HALF_LIFE_MS) >= RECENCY_FLOOR);
        // A run "in the future" (clock skew) counts as now.
        assert!((recency(2_000, 1_000) - 1.0).abs() < 1e-6);
    }
}
