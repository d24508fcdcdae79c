//! The fact, in the same shape from the rules and the LLM mode, and how it
//! is stored in a memory's metadata. Its own module so that both the
//! extraction (`mod.rs`) and the reconciliation (`reconcile.rs`) read it
//! from here rather than from each other.

use memloop_core::Kind;
use serde::{Deserialize, Serialize};

/// The key under which [`Fact::metadata`] stores a fact's structure.
pub const METADATA_KEY: &str = "fact";

/// Whether a fact states something, denies it, or asks to forget it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Polarity {
    #[default]
    Asserted,
    /// "I no longer live in Paris", "I don't eat meat", "I hate cilantro".
    Negated,
    /// "Forget that I live in Paris": an instruction to delete, never stored.
    Retracted,
}

impl Polarity {
    pub fn as_str(self) -> &'static str {
        match self {
            Polarity::Asserted => "asserted",
            Polarity::Negated => "negated",
            Polarity::Retracted => "retracted",
        }
    }
}

/// One distilled fact, in the same shape from the rules and the LLM mode.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Fact {
    /// Compact and self-contained, in the third person, with absolute dates:
    /// "User lives in Berlin (since October 2026)".
    pub text: String,
    #[serde(default)]
    pub kind: Kind,
    /// Lower case: "user" (or the speaker's name), "user's sister".
    pub subject: String,
    /// Normalised key: "lives_in", "works_at", "job", "name", "age",
    /// "favourite_color", "likes", … None when the rules found no slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The attribute holds several values side by side (likes, allergies,
    /// languages): a new value is added, not an update of the old one.
    #[serde(default)]
    pub multi: bool,
    #[serde(default)]
    pub polarity: Polarity,
    /// Proper names mentioned ("Berlin", "Acme Corp").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    /// When it happened or began, resolved from the turn's time (start of
    /// the period: "last month" → the 1st of the previous month).
    #[serde(
        default,
        with = "memloop_core::time::opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub time: Option<i64>,
    /// 0..1: how much it matters to remember (names and allergies most).
    #[serde(default = "half")]
    pub importance: f32,
    /// 0..1: how sure the extractor is (rules below explicit statements).
    #[serde(default = "half")]
    pub confidence: f32,
}

fn half() -> f32 {
    0.5
}

impl Fact {
    /// The structure to store in the memory's metadata under
    /// [`METADATA_KEY`], read back by
    /// [`Candidate::from_metadata`](super::Candidate::from_metadata):
    /// `{"fact": {"subject", "attribute", "value", "multi", "polarity"}}`.
    pub fn metadata(&self) -> serde_json::Value {
        let mut slot = serde_json::Map::new();
        slot.insert("subject".into(), self.subject.clone().into());
        if let Some(a) = &self.attribute {
            slot.insert("attribute".into(), a.clone().into());
        }
        if let Some(v) = &self.value {
            slot.insert("value".into(), v.clone().into());
        }
        slot.insert("multi".into(), self.multi.into());
        slot.insert("polarity".into(), self.polarity.as_str().into());
        serde_json::json!({ METADATA_KEY: slot })
    }
}

/// Attributes the rules fill with several values side by side.
const MULTI_VALUED: &[&str] = &[
    "likes",
    "dislikes",
    "allergies",
    "traits",
    "hobbies",
    "languages",
    "visited",
    "has",
    "lives_with",
    "graduated_from",
    "instruction",
];

/// Attributes the rules fill with one current value.
const SINGLE_VALUED: &[&str] = &[
    "name",
    "age",
    "lives_in",
    "works_at",
    "works_in",
    "job",
    "nationality",
    "religion",
    "born_in",
    "birth_date",
    "origin",
    "grew_up_in",
    "relationship_status",
    "moving_to",
    "diet",
];

/// Whether an attribute, as the rules name it, holds several values side
/// by side (`likes`) or one (`lives_in`); None for a name the rules do not
/// use. A fact named by an LLM is then reconciled as the rules would
/// reconcile it: a second liking never replaces the first.
pub fn attribute_is_multi(attribute: &str) -> Option<bool> {
    let a = attribute.trim().to_lowercase();
    if MULTI_VALUED.contains(&a.as_str()) {
        Some(true)
    } else if SINGLE_VALUED.contains(&a.as_str()) || a.starts_with("favourite_") {
        Some(false)
    } else {
        None
    }
}
