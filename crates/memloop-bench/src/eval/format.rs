//! The generic evaluation format (docs/eval-format.md): one JSON object per
//! line, a conversation with its sessions, turns and questions.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub sessions: Vec<Session>,
    pub questions: Vec<Question>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    /// When the session took place (RFC 3339); turns without a timestamp take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    pub turns: Vec<Turn>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// Unique within the conversation; questions cite it as evidence.
    pub id: String,
    pub speaker: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Question {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Ids of the turns that hold the answer.
    pub evidence: Vec<String>,
    /// Free label, a number or a name; LoCoMo uses 1 multi-hop, 2 temporal,
    /// 3 open-domain, 4 single-hop, 5 adversarial.
    #[serde(
        default,
        deserialize_with = "label",
        skip_serializing_if = "Option::is_none"
    )]
    pub category: Option<String>,
    /// The category's name, when the file gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category_name: Option<String>,
    /// When the question is asked (RFC 3339): the reference time for the
    /// time its words name ("last week"). Default: just after the
    /// conversation's last turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

impl Question {
    /// Unanswerable by design: reported apart, left out of the overall figures.
    pub fn adversarial(&self) -> bool {
        [&self.category_name, &self.category].iter().any(|c| {
            c.as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case("adversarial"))
        })
    }
}

/// A category written as a number or as text, kept as text.
fn label<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

pub fn read_jsonl(path: &Path) -> anyhow::Result<Vec<Conversation>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                memloop::Error::invalid(format!(
                    "{} line {}: not a conversation in the eval format ({e}); see docs/eval-format.md",
                    path.display(),
                    i + 1
                ))
                .into()
            })
        })
        .collect()
}

pub fn write_jsonl(path: &Path, conversations: &[Conversation]) -> anyhow::Result<()> {
    let mut out = String::new();
    for c in conversations {
        out.push_str(&serde_json::to_string(c)?);
        out.push('\n');
    }
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}
