use serde::{Deserialize, Serialize};

use crate::Scope;

/// What a long-term memory holds: a distilled fact, a raw episode (a turn of a
/// past session), or a procedure (a sequence of steps that worked or failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Fact,
    Episode,
    Procedure,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fact => "fact",
            Kind::Episode => "episode",
            Kind::Procedure => "procedure",
        }
    }

    pub fn parse(s: &str) -> crate::Result<Kind> {
        match s {
            "fact" => Ok(Kind::Fact),
            "episode" => Ok(Kind::Episode),
            "procedure" => Ok(Kind::Procedure),
            other => Err(crate::Error::invalid(format!(
                "unknown kind {other:?}: use fact, episode or procedure"
            ))),
        }
    }
}

/// Where a memory came from, so a wrong memory can be traced and corrected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Session the memory was written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Turn ids it was distilled from (or the turn it is, for an episode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_ids: Vec<String>,
    /// How it was written: "raw" (add), "rule", "llm", "import".
    #[serde(default = "default_source")]
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}

fn default_source() -> String {
    "raw".to_string()
}

/// A memory to be written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewMemory {
    pub text: String,
    /// Text indexed with the memory for keyword search but not returned
    /// (for an episode: the turns around it), weighted below the text itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default)]
    pub kind: Kind,
    #[serde(default = "empty_object")]
    pub metadata: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// When the fact became true (defaults to the write time).
    #[serde(
        default,
        with = "crate::time::opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub valid_from: Option<i64>,
    #[serde(
        default,
        with = "crate::time::opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<i64>,
    #[serde(default)]
    pub provenance: Provenance,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

impl NewMemory {
    pub fn text(text: impl Into<String>) -> Self {
        NewMemory {
            text: text.into(),
            metadata: empty_object(),
            provenance: Provenance {
                source: default_source(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    pub fn kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = metadata;
        self
    }
}

/// A stored memory: the complete record model. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub id: String,
    /// The text (named `memory` on the wire, as Mem0 clients expect).
    #[serde(rename = "memory")]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub kind: Kind,
    #[serde(flatten)]
    pub scope: Scope,
    pub metadata: serde_json::Value,
    #[serde(with = "crate::time::millis")]
    pub created_at: i64,
    #[serde(with = "crate::time::millis")]
    pub updated_at: i64,
    #[serde(with = "crate::time::millis")]
    pub valid_from: i64,
    /// Set when the memory was superseded or deleted; it is kept for history and `as_of` queries.
    #[serde(with = "crate::time::opt_millis")]
    pub valid_until: Option<i64>,
    #[serde(with = "crate::time::opt_millis")]
    pub expires_at: Option<i64>,
    pub importance: f32,
    pub access_count: u64,
    #[serde(with = "crate::time::opt_millis")]
    pub last_accessed_at: Option<i64>,
    pub provenance: Provenance,
    /// sha256 of the normalised text (for an episode, with its turn ids):
    /// equal hashes in one scope are the same memory.
    pub content_hash: String,
}

impl MemoryRecord {
    pub fn is_current(&self, now: i64) -> bool {
        self.valid_until.is_none() && self.expires_at.is_none_or(|t| t > now)
    }
}

/// One change in a memory's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Event {
    Add,
    Update,
    Delete,
    Noop,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Add => "ADD",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
            Event::Noop => "NOOP",
        }
    }

    pub fn parse(s: &str) -> Option<Event> {
        match s {
            "ADD" => Some(Event::Add),
            "UPDATE" => Some(Event::Update),
            "DELETE" => Some(Event::Delete),
            "NOOP" => Some(Event::Noop),
            _ => None,
        }
    }
}

/// The outcome of one write, as returned to callers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteResult {
    pub id: String,
    pub memory: String,
    pub event: Event,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_memory: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub id: i64,
    pub memory_id: String,
    pub event: Event,
    pub old_memory: Option<String>,
    pub new_memory: Option<String>,
    #[serde(with = "crate::time::millis")]
    pub at: i64,
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Per-signal scores of a search hit, so a caller can see why it ranked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SignalScores {
    /// Cosine similarity to the query (None: not among the vector candidates).
    pub vector: Option<f32>,
    pub vector_rank: Option<usize>,
    /// BM25 score (None: no query term matched).
    pub bm25: Option<f32>,
    pub bm25_rank: Option<usize>,
    /// The fused score before normalisation.
    pub fused: f32,
    /// Added because the query names who said this memory (0 otherwise).
    #[serde(default)]
    pub speaker_boost: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    #[serde(flatten)]
    pub record: MemoryRecord,
    /// The ranking score in 0..1 (higher is better).
    pub score: f32,
    pub scores: SignalScores,
}
