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
    /// Free label; LoCoMo uses 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<u32>,
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
