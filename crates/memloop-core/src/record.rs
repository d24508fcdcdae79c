use serde::{Deserialize, Serialize};

use crate::Scope;

/// What a long-term memory holds: a distilled fact, a raw episode (a turn of a
/// past session), or a procedure (a sequence of steps that worked or failed).
/// Read from JSON through [`Kind::parse`], so every front end refuses an
/// unknown kind with the same message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase", try_from = "String")]
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

impl TryFrom<String> for Kind {
    type Error = String;

    fn try_from(s: String) -> Result<Kind, String> {
        Kind::parse(&s).map_err(|e| match e {
            crate::Error::InvalidInput(m) => m,
            other => other.to_string(),
        })
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
    /// The entities it names and relations it states, written with it
    /// (the facade fills them when empty; see `crate::links`).
    #[serde(skip)]
    pub links: crate::links::Links,
    /// Vectors of what the text's embedding does not read of it (a long
    /// text's later windows, `Embedder::embed_pieces`), stored and searched
    /// with it: the best of its vectors ranks it. The facade fills them.
    #[serde(skip)]
    pub pieces: Vec<Vec<f32>>,
}

/// The earliest time a memory may carry: 0000-01-01T00:00:00Z. Times are
/// bounded to years 0 to 9999 so every stored time prints as RFC 3339 (a
/// four-digit year), which is what clients parse.
pub const MIN_TIME_MS: i64 = -62_167_219_200_000;
/// The latest: 9999-12-31T23:59:59.999Z.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The longest TTL accepted: 100 years (of 365.25 days). Longer is no
/// expiry in practice and is refused rather than stored as a date nobody
/// can read back.
pub const MAX_TTL_MS: i64 = 36_525 * 86_400_000;

/// Checks that `ms` (a time called `field` in messages) lies in years 0 to 9999.
pub fn check_time(field: &str, ms: i64) -> crate::Result<()> {
    if !(MIN_TIME_MS..=MAX_TIME_MS).contains(&ms) {
        return Err(crate::Error::invalid(format!(
            "{field} {ms} (Unix milliseconds) is outside the years 0 to 9999: give a date between 0000-01-01 and 9999-12-31"
        )));
    }
    Ok(())
}

/// Parses a TTL such as 30s, 15m, 12h, 7d or 2w into milliseconds, at most
/// [`MAX_TTL_MS`] (100 years).
pub fn parse_ttl(s: &str) -> crate::Result<i64> {
    let bad = || {
        crate::Error::invalid(format!(
            "{s:?} is not a duration: use a number and a unit, like 30s, 15m, 12h, 7d or 2w"
        ))
    };
    let t = s.trim();
    // Split off the last character, not the last byte: a multi-byte unit
    // ("3日") must be refused, not split inside a character.
    let unit = t.chars().next_back().ok_or_else(bad)?;
    let num = &t[..t.len() - unit.len_utf8()];
    let n: i64 = num.parse().map_err(|_| bad())?;
    let unit_ms: i64 = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 604_800_000,
        _ => return Err(bad()),
    };
    if n <= 0 {
        return Err(bad());
    }
    match n.checked_mul(unit_ms) {
        Some(ms) if ms <= MAX_TTL_MS => Ok(ms),
        _ => Err(crate::Error::invalid(format!(
            "{s:?} is longer than the longest TTL, 100 years (36525d): give a shorter one, or none to keep the memory until it is deleted"
        ))),
    }
}

/// When a memory written at `now` with a TTL of `ttl_ms` expires, refused
/// when the TTL is not positive, exceeds 100 years or ends after year 9999.
pub fn expires_after(now: i64, ttl_ms: i64) -> crate::Result<i64> {
    if !(1..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(crate::Error::invalid(format!(
            "a TTL of {ttl_ms} ms is outside 1 ms to 100 years"
        )));
    }
    let at = now.saturating_add(ttl_ms);
    check_time("expires_at", at)?;
    Ok(at)
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

    /// Checks `valid_from` and `expires_at` lie in years 0 to 9999 (see
    /// [`check_time`]). The store calls it on every write, whoever parsed
    /// the times (CLI, REST, MCP, a library caller).
    pub fn validate_times(&self) -> crate::Result<()> {
        if let Some(t) = self.valid_from {
            check_time("valid_from", t)?;
        }
        if let Some(t) = self.expires_at {
            check_time("expires_at", t)?;
        }
        Ok(())
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
    /// The id of what replaced this memory's claim: a superseded fact's
    /// successor, or for an episode the fact that superseded one distilled
    /// from it. Not on the wire as such: a search hit shows the current
    /// replacement (`SearchHit::superseded_by`).
    #[serde(skip)]
    pub superseded_by: Option<String>,
}

impl MemoryRecord {
    pub fn is_current(&self, now: i64) -> bool {
        self.valid_until.is_none() && !self.is_expired(now)
    }

    /// Its TTL has passed: it is no longer current, and `gc` deletes it.
    pub fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
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

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

/// Per-signal scores of a search hit, so a caller can see why it ranked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SignalScores {
    /// Cosine similarity to the query (None: not among the vector candidates).
    pub vector: Option<f32>,
    pub vector_rank: Option<usize>,
    /// Taken off `vector` for ranking because the memory is a long text
    /// read in several windows, several of them among the nearest
    /// (`memloop_longterm::pieces`); 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pieces_discount: f32,
    /// BM25 score (None: no query term matched).
    pub bm25: Option<f32>,
    pub bm25_rank: Option<usize>,
    /// The fused score before normalisation.
    pub fused: f32,
    /// Added because the query names who said this memory (0 otherwise).
    #[serde(default)]
    pub speaker_boost: f32,
    /// The decay signal, 0..1: recency × importance × use
    /// (`memloop_longterm::fusion::decay`); 0 when the search weighs it 0.
    #[serde(default)]
    pub decay: f32,
    /// Reached from a direct hit through an entity both name (entity
    /// expansion): the score that link gave it; 0 for a direct hit only.
    #[serde(default)]
    pub graph: f32,
    /// The time signal, 0..1, when the query names a time ("last week",
    /// "in May"): 1 when the memory became true inside its window, less
    /// the farther outside (`TimeWindow::closeness`); 0 when the query
    /// names none.
    #[serde(default)]
    pub time: f32,
    /// Set when a reranking stage reordered the fused top N and this hit
    /// was among them: the reranker's score and the hit's positions
    /// before and after (docs/retrieval.md, "Reranking").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankScores>,
}

/// A hit's place in a reranking: what the reranker gave it and where it
/// stood in the fused order and after reranking (1 = first).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RerankScores {
    /// The reranker's relevance score (its own units: higher is better);
    /// None when it left this candidate out (it then follows the scored
    /// ones, in fused order).
    pub score: Option<f32>,
    pub fused_position: usize,
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    #[serde(flatten)]
    pub record: MemoryRecord,
    /// The ranking score in 0..1 (higher is better).
    pub score: f32,
    pub scores: SignalScores,
    /// Set when the hit holds a claim that is no longer true: the current
    /// memory that replaced it. Such a hit ranks below that memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<Replacement>,
}

/// The current memory that replaced a stale hit's claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replacement {
    pub id: String,
    #[serde(rename = "memory")]
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_units_and_bounds() {
        assert_eq!(parse_ttl("30s").unwrap(), 30_000);
        assert_eq!(parse_ttl("2w").unwrap(), 2 * 604_800_000);
        assert_eq!(parse_ttl(" 7d ").unwrap(), 7 * 86_400_000);
        assert_eq!(parse_ttl("36525d").unwrap(), MAX_TTL_MS);
        for bad in [
            "",
            "  ",
            "d",
            "-1d",
            "0s",
            "5y",
            "1.5h",
            "3日",
            "日",
            "5dé",
            // Fits an i64 but ends in year ~27 million: was stored, and
            // printed as a bare number instead of RFC 3339.
            "9999999999d",
            "36526d",
            "5219w",
            "9999999999999999w",
        ] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
        let long = parse_ttl("9999999999d").unwrap_err().to_string();
        assert!(long.contains("100 years"), "{long}");
    }

    proptest::proptest! {
        /// Any text is a TTL within bounds or an error, and any TTL added to
        /// any clock gives a printable expiry or an error, never a wrap.
        #[test]
        fn ttls_are_bounded_or_refused(
            text in "\\PC{0,16}",
            shaped in "[ +-]?[0-9]{1,22}[smhdwy日]?",
            now in proptest::num::i64::ANY,
        ) {
            for t in [&text, &shaped] {
                if let Ok(ms) = parse_ttl(t) {
                    proptest::prop_assert!((1..=MAX_TTL_MS).contains(&ms), "{t} -> {ms}");
                    if let Ok(at) = expires_after(now, ms) {
                        proptest::prop_assert!(check_time("t", at).is_ok());
                        let _ = crate::time::to_rfc3339(at);
                    }
                }
            }
        }
    }

    #[test]
    fn times_stay_within_years_0_to_9999() {
        let now = 1_700_000_000_000;
        assert_eq!(expires_after(now, 1_000).unwrap(), now + 1_000);
        assert!(expires_after(now, MAX_TTL_MS).is_ok());
        assert!(expires_after(now, MAX_TTL_MS + 1).is_err());
        assert!(expires_after(now, 0).is_err());
        assert!(expires_after(MAX_TIME_MS - 10, 1_000).is_err());
        assert_eq!(
            crate::time::to_rfc3339(MAX_TIME_MS),
            "9999-12-31T23:59:59.999Z"
        );
        assert_eq!(
            crate::time::to_rfc3339(MIN_TIME_MS),
            "0000-01-01T00:00:00.000Z"
        );
        assert!(check_time("t", MAX_TIME_MS + 1).is_err());
        assert!(check_time("t", MIN_TIME_MS - 1).is_err());
        let mut m = NewMemory::text("x");
        assert!(m.validate_times().is_ok());
        m.expires_at = Some(i64::MAX);
        assert!(m.validate_times().is_err());
        m.expires_at = None;
        m.valid_from = Some(i64::MIN);
        assert!(m.validate_times().is_err());
    }
}
