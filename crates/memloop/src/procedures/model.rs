//! The procedure as plain data: one run as a caller reports it, and the
//! stored procedure it merges into (kept in a memory's metadata under
//! [`METADATA_KEY`]), with their checks and their text.

use memloop_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// Where a procedure memory keeps its structure in `metadata`.
pub const METADATA_KEY: &str = "procedure";
/// The most steps one run may have: a longer sequence is a log, not a procedure.
pub const MAX_STEPS: usize = 64;
/// The most bytes of one field of a step (tool, arguments, result, error).
pub const MAX_FIELD_BYTES: usize = 2048;
/// The most pitfalls a procedure keeps (the oldest go first).
pub const MAX_PITFALLS: usize = 8;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Failure,
    Partial,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Partial => "partial",
        }
    }
}

/// One step of a run: which tool, with what (a summary of the arguments),
/// and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub tool: String,
    /// The arguments, summarised (a command line, a short JSON).
    #[serde(default, alias = "arguments")]
    pub args: String,
    /// What came back, summarised.
    #[serde(default)]
    pub result: String,
    /// Whether the step worked (a failed step followed by another is a
    /// pitfall the procedure remembers).
    #[serde(default = "yes")]
    pub ok: bool,
    /// The error text of a failed step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn yes() -> bool {
    true
}

impl Step {
    /// The step as one line: `tool args`, or the tool alone.
    pub fn command(&self) -> String {
        if self.args.trim().is_empty() {
            self.tool.clone()
        } else {
            format!("{} {}", self.tool, self.args.trim())
        }
    }

    /// Whether two steps do the same thing (their results may differ).
    pub fn same_action(&self, other: &Step) -> bool {
        self.tool == other.tool && self.args.trim() == other.args.trim()
    }
}

/// One run of a task, as a caller reports it (`memloop procedures add
/// --file run.json`, `POST /v1/procedures`, `memory_record_procedure`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcedureRun {
    /// What the run was for, in words ("deploy the web app").
    pub task: String,
    pub steps: Vec<Step>,
    pub outcome: Outcome,
    /// What went wrong, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it ran (Unix ms); now when absent.
    #[serde(
        default,
        with = "memloop_core::time::opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub at: Option<i64>,
    /// The caller's id for this run: recording it again changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
}

/// A step that failed, what it said, and what worked instead (when a
/// later step or run found it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pitfall {
    /// The failed step as a command line.
    pub step: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
    /// How many runs hit it.
    pub seen: u32,
    /// Where in its run it failed (0 = the first step): a later successful
    /// run's step at the same place is what worked instead.
    #[serde(default)]
    pub position: usize,
}

/// The stored procedure: the task, the steps to follow (those of the
/// latest run that succeeded, else of the latest run), counts, the last
/// outcome and the pitfalls learnt on the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Procedure {
    pub task: String,
    pub steps: Vec<Step>,
    pub successes: u32,
    pub failures: u32,
    #[serde(default)]
    pub partials: u32,
    pub last_outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(with = "memloop_core::time::millis")]
    pub last_run: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pitfalls: Vec<Pitfall>,
    /// The execution ids (or run hashes) already counted (the newest [`MAX_RUN_IDS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub execution_ids: Vec<String>,
}

/// How many run ids a procedure remembers for idempotency.
pub const MAX_RUN_IDS: usize = 64;

fn check_field(what: &str, value: &str, required: bool) -> Result<()> {
    if required && value.trim().is_empty() {
        return Err(Error::invalid(format!(
            "{what} is empty: say what it is in a few words"
        )));
    }
    if value.len() > MAX_FIELD_BYTES {
        return Err(Error::invalid(format!(
            "{what} is {} bytes, over the limit of {MAX_FIELD_BYTES}: summarise it",
            value.len()
        )));
    }
    Ok(())
}

impl ProcedureRun {
    /// Checks every field, naming the first bad one and what to do.
    pub fn validate(&self) -> Result<()> {
        check_field("task", &self.task, true)?;
        if self.steps.is_empty() {
            return Err(Error::invalid(
                "steps is empty: give the tool calls of the run in order, each {\"tool\", \"args\", \"result\"}",
            ));
        }
        if self.steps.len() > MAX_STEPS {
            return Err(Error::invalid(format!(
                "steps has {} entries, over the limit of {MAX_STEPS}: record the steps that mattered",
                self.steps.len()
            )));
        }
        for (i, s) in self.steps.iter().enumerate() {
            check_field(&format!("steps[{i}].tool"), &s.tool, true)?;
            check_field(&format!("steps[{i}].args"), &s.args, false)?;
            check_field(&format!("steps[{i}].result"), &s.result, false)?;
            check_field(
                &format!("steps[{i}].error"),
                s.error.as_deref().unwrap_or(""),
                false,
            )?;
        }
        check_field("error", self.error.as_deref().unwrap_or(""), false)?;
        if let Some(at) = self.at {
            memloop_core::check_time("at", at)?;
        }
        if let Some(id) = &self.execution_id {
            if id.trim().is_empty() || id.len() > memloop_core::MAX_ID_BYTES {
                return Err(Error::invalid(format!(
                    "execution_id must be 1 to {} bytes: the same id for a retry of the same run, or none",
                    memloop_core::MAX_ID_BYTES
                )));
            }
        }
        Ok(())
    }

    /// Reads a run from JSON, naming the field a bad document got wrong.
    pub fn from_json(value: serde_json::Value) -> Result<ProcedureRun> {
        let run: ProcedureRun = serde_json::from_value(value).map_err(|e| {
            Error::invalid(format!(
                "not a procedure run: {e} (give {{\"task\", \"steps\": [{{\"tool\", \"args\", \"result\", \"ok\"?, \"error\"?}}], \"outcome\": \"success\"|\"failure\"|\"partial\", \"error\"?, \"at\"?, \"execution_id\"?}})"
            ))
        })?;
        run.validate()?;
        Ok(run)
    }
}

impl Procedure {
    /// Runs counted so far.
    pub fn runs(&self) -> u32 {
        self.successes + self.failures + self.partials
    }

    /// The success rate smoothed by Laplace's rule, (s + 1) / (n + 2), a
    /// partial run counting half: one failure does not zero a procedure,
    /// nor does one success make it certain.
    pub fn success_rate(&self) -> f32 {
        let s = self.successes as f32 + 0.5 * self.partials as f32;
        (s + 1.0) / (self.runs() as f32 + 2.0)
    }

    /// Reads the procedure a memory's metadata holds, if any.
    pub fn from_metadata(metadata: &serde_json::Value) -> Option<Procedure> {
        serde_json::from_value(metadata.get(METADATA_KEY)?.clone()).ok()
    }

    /// The metadata to store it under.
    pub fn to_metadata(&self) -> Result<serde_json::Value> {
        let v = serde_json::to_value(self).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(serde_json::json!({ METADATA_KEY: v }))
    }

    /// The memory's text, what is embedded and keyword-indexed: the task,
    /// the steps, the counts and the pitfalls, on one line each.
    pub fn text(&self) -> String {
        let mut out = format!(
            "Procedure: {} ({})\nSteps: {}",
            self.task,
            self.tally(),
            self.steps_line()
        );
        for p in &self.pitfalls {
            out.push_str("\nPitfall: ");
            out.push_str(&p.sentence());
        }
        out
    }

    /// "2 successes, 1 failure": how the runs went.
    pub fn tally(&self) -> String {
        let n = |k: u32, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        let mut parts = vec![
            n(self.successes, "success", "successes"),
            n(self.failures, "failure", "failures"),
        ];
        if self.partials > 0 {
            parts.push(n(self.partials, "partial", "partials"));
        }
        format!("{}; last {}", parts.join(", "), self.last_outcome.as_str())
    }

    /// The steps to follow, as commands joined by arrows.
    pub fn steps_line(&self) -> String {
        self.steps
            .iter()
            .map(Step::command)
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

impl Pitfall {
    /// "last time `npm run deploy` failed with EACCES; `sudo -u deploy …` worked".
    pub fn sentence(&self) -> String {
        let mut s = format!("`{}` failed", self.step);
        if let Some(e) = &self.error {
            s.push_str(&format!(" with {e}"));
        }
        if self.seen > 1 {
            s.push_str(&format!(" ({} runs)", self.seen));
        }
        if let Some(r) = &self.replaced_by {
            s.push_str(&format!("; `{r}` worked"));
        }
        s
    }
}

/// A task as runs of it are matched: lower case, words only ("Deploy the
/// web app." and "deploy the web app" are one task; a full stop alone
/// moves all-MiniLM-L6-v2's cosine from 1 to 0.78).
pub fn task_key(task: &str) -> String {
    task.chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
