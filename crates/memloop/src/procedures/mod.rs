//! The procedural layer: how to do things. A procedure is a memory of kind
//! `procedure` whose text (the task, its steps, its pitfalls) is embedded
//! and keyword-indexed, with its structure in `metadata.procedure`; so
//! every backend stores, versions (UPDATE by supersession, with history),
//! exports and purges it as any memory. See docs/layers.md.

mod merge;
mod model;
mod rank;
pub mod tool_calls;

use memloop_core::{Error, Event, Kind, NewMemory, Provenance, Result, Scope};
use serde::Serialize;

pub use merge::{first, merge, run_key};
pub use model::{
    task_key, Outcome, Pitfall, Procedure, ProcedureRun, Step, MAX_FIELD_BYTES, MAX_STEPS,
    METADATA_KEY,
};
pub use rank::{ProcedureHit, ProcedureQuery, ProcedureScores, RECENCY_HALF_LIFE_MS};
pub use tool_calls::{from_messages, run_of, ToolCall, ToolMessages};

use crate::{Memory, SearchQuery};

/// Two task descriptions ([`task_key`]s) are the same task at this cosine
/// or above (all-MiniLM-L6-v2, measured by the test
/// `the_same_task_line_separates_rewordings_from_other_tasks`): "deploy the
/// web app" / "deploy the webapp" 0.97, "restart the web server" / "…
/// webserver" 0.96; but "… web server" / "… nginx web server" 0.73,
/// "deploy the web app" / "deploy the api server" 0.57. Merging two
/// different tasks would teach the wrong steps, so the line is high.
pub const SAME_TASK_COSINE: f32 = 0.85;
/// Stored procedures compared with a new run's task.
const MATCH_CANDIDATES: usize = 5;

/// What recording a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcedureWrite {
    pub id: String,
    /// ADD (a new task), UPDATE (merged into the stored procedure, which is
    /// superseded and kept in history) or NOOP (this run was counted already).
    pub event: Event,
    /// The memory's text.
    pub memory: String,
    pub procedure: Procedure,
    /// The version this one replaced (UPDATE) or that already counted the run (NOOP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<String>,
}

/// Procedures belong to the user (or agent) across sessions.
fn owner(scope: &Scope) -> Scope {
    Scope {
        session_id: None,
        ..scope.clone()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Memory {
    /// Records one run of a task in `scope`: the first run of a task adds a
    /// procedure; a run of a task already stored (same scope, the same task
    /// by meaning: [`SAME_TASK_COSINE`]) merges into it, superseding the
    /// stored version (history keeps it); a run already counted (same
    /// `run_id`, or the same report with the same `at`) is a NOOP.
    pub fn record_procedure(&self, scope: &Scope, run: ProcedureRun) -> Result<ProcedureWrite> {
        scope.validate()?;
        run.validate()?;
        let now = self.clock().now();
        let stored = self.stored_procedure(scope, &run.task)?;
        let (procedure, previous) = match &stored {
            None => (first(&run, now), None),
            Some((record, p)) => match merge(p, &run, now) {
                Some(merged) => (merged, Some(record)),
                None => {
                    return Ok(ProcedureWrite {
                        id: record.id.clone(),
                        event: Event::Noop,
                        memory: record.text.clone(),
                        procedure: p.clone(),
                        previous_id: Some(record.id.clone()),
                    })
                }
            },
        };
        let text = procedure.text();
        memloop_core::text::validate_text(&text)?;
        let vector = self.embedder().embed(&text)?;
        let mut new = NewMemory::text(text)
            .kind(Kind::Procedure)
            .metadata(procedure.to_metadata()?);
        new.provenance = Provenance {
            session_id: scope.session_id.clone(),
            source: "procedure".into(),
            ..Provenance::default()
        };
        let (id, memory, event) = match previous {
            None => {
                new.valid_from = run.at;
                let w = self.add_embedded(scope, vec![(new, vector)])?;
                let w = w.into_iter().next().ok_or_else(|| {
                    Error::Internal("recording a procedure returned no write".into())
                })?;
                (w.id, w.memory, w.event)
            }
            Some(old) => {
                let reason = format!("a {} run of the task was merged", run.outcome.as_str());
                let (added, _) = self.supersede(scope, &old.id, (new, vector), &reason)?;
                (added.id, added.text, Event::Update)
            }
        };
        Ok(ProcedureWrite {
            id,
            event,
            memory,
            procedure,
            previous_id: previous.map(|r| r.id.clone()),
        })
    }

    /// The current procedure of `scope` for `task`, if one is stored: the
    /// best candidate whose task is the same by text or by meaning.
    fn stored_procedure(
        &self,
        scope: &Scope,
        task: &str,
    ) -> Result<Option<(memloop_core::MemoryRecord, Procedure)>> {
        let mut q = SearchQuery::new(owner(scope), task);
        q.kinds = vec![Kind::Procedure];
        q.top_k = MATCH_CANDIDATES;
        let candidates: Vec<_> = self
            .store()
            .search(&q, &self.embedder().embed_query(task)?)?
            .into_iter()
            .filter_map(|h| Procedure::from_metadata(&h.record.metadata).map(|p| (h.record, p)))
            .collect();
        let wanted = task_key(task);
        if let Some(i) = candidates
            .iter()
            .position(|(_, p)| task_key(&p.task) == wanted)
        {
            return Ok(candidates.into_iter().nth(i));
        }
        if candidates.is_empty() {
            return Ok(None);
        }
        let keys: Vec<String> = candidates.iter().map(|(_, p)| task_key(&p.task)).collect();
        let mut texts = vec![wanted.as_str()];
        texts.extend(keys.iter().map(String::as_str));
        let vectors = self.embedder().embed_batch(&texts)?;
        let Some((query, stored)) = vectors.split_first() else {
            return Ok(None);
        };
        let best = stored
            .iter()
            .map(|v| cosine(query, v))
            .enumerate()
            .filter(|&(_, c)| c >= SAME_TASK_COSINE)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        Ok(best.and_then(|(i, _)| candidates.into_iter().nth(i)))
    }
}
