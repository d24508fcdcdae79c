//! What goes into the store and what comes out, besides records: the
//! queries, a change to one memory, and the reports of forget, stats and
//! entities. Every backend takes and returns exactly these.

use std::collections::HashMap;

use memloop_core::{Filter, Kind, Result, Scope};
use serde_json::Value;

/// The vector signal's weight in the fusion (the keyword signal's is 1).
pub const DEFAULT_VECTOR_WEIGHT: f32 = 0.5;

/// See `SearchQuery::speaker_boost`. On LoCoMo's dev split 0.1 lifts R@5 /
/// R@10 from 0.693 / 0.783 to 0.710 / 0.807. LoCoMo's adversarial questions
/// name the wrong person on purpose; with score fusion they lose little
/// (R@10 0.893 to 0.884; with rank fusion a boost of 0.2 had cost them 0.27),
/// and a boost of 0.2 costs them more (0.844) for no further gain
/// (docs/retrieval.md). Only memories with a `metadata.speaker` are affected.
pub const DEFAULT_SPEAKER_BOOST: f32 = 0.1;

/// The most results one search or list returns.
pub const MAX_LIMIT: usize = 1000;

/// How much a memory's decay signal (recency × importance × use, see
/// `crate::fusion::decay`) counts in a search's ranking beside its
/// relevance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// The signal's weight; the keyword signal's is 1. 0 leaves ranking to
    /// relevance alone (and the signal is not computed).
    pub weight: f32,
    /// Recency halves every `half_life_ms` since the memory became true
    /// or was last retrieved (0: recency not counted).
    pub half_life_ms: i64,
}

impl Decay {
    /// No decay: relevance alone ranks.
    pub const OFF: Decay = Decay {
        weight: 0.0,
        half_life_ms: 0,
    };
}

/// How much being in a search's time window counts, when the window boosts
/// rather than filters (`TimeMode::Boost`). See docs/retrieval.md for the
/// measurement that chose it.
pub const DEFAULT_TIME_BOOST: f32 = 0.3;

/// What a search's time window does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeMode {
    /// Only memories that became true inside the window are candidates: the
    /// window restricts the search before any cut, so memories outside it
    /// never take a place in the top k.
    Filter,
    /// Every memory stays a candidate; the time signal (1 inside the
    /// window, falling with the distance outside it) is added with this
    /// weight (the keyword signal's is 1).
    Boost(f32),
}

/// A window of world time a search is about: what "last week", "in May"
/// or "the last session" in a query resolve to. A memory is in it when its
/// `valid_from` (when what it says became true: the turn's time for an
/// episode) is in `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeWindow {
    /// Unix milliseconds, inclusive; None: open.
    pub start: Option<i64>,
    /// Unix milliseconds, exclusive; None: open.
    pub end: Option<i64>,
    pub mode: TimeMode,
}

impl TimeWindow {
    const DAY_MS: i64 = 86_400_000;

    pub fn contains(&self, t: i64) -> bool {
        self.start.is_none_or(|s| t >= s) && self.end.is_none_or(|e| t < e)
    }

    /// Whether the window filters the candidates.
    pub fn filters(&self) -> bool {
        self.mode == TimeMode::Filter
    }

    /// The boost's weight (0 for a filter, or a weight that is not a
    /// positive number).
    pub fn boost(&self) -> f32 {
        match self.mode {
            TimeMode::Boost(w) if w.is_finite() && w > 0.0 => w,
            _ => 0.0,
        }
    }

    /// The time signal of a memory that became true at `t`: 1 inside the
    /// window; outside, 1 / (1 + distance / length), the length being the
    /// window's (at least a day; a day for an open window), so a memory a
    /// window's length away scores 0.5 whatever the window's size.
    pub fn closeness(&self, t: i64) -> f32 {
        if self.contains(t) {
            return 1.0;
        }
        let length = match (self.start, self.end) {
            (Some(s), Some(e)) => e.saturating_sub(s).max(Self::DAY_MS),
            _ => Self::DAY_MS,
        };
        let distance = match (self.start, self.end) {
            (Some(s), _) if t < s => s.saturating_sub(t),
            (_, Some(e)) => t.saturating_sub(e).saturating_add(1),
            _ => 0,
        };
        (1.0 / (1.0 + distance as f64 / length as f64)) as f32
    }

    /// Refuses a window that ends before it starts or a boost weight that
    /// is negative or not a number.
    pub fn check(&self) -> Result<()> {
        if let (Some(s), Some(e)) = (self.start, self.end) {
            if e <= s {
                return Err(memloop_core::Error::invalid(
                    "the search's time window ends before it starts: give an end after the start",
                ));
            }
        }
        if let TimeMode::Boost(w) = self.mode {
            if !(w.is_finite() && w >= 0.0) {
                return Err(memloop_core::Error::invalid(format!(
                    "the time boost {w} must be 0 or more"
                )));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub scope: Scope,
    pub filter: Option<Filter>,
    pub kinds: Vec<Kind>,
    /// Also return deleted and superseded memories.
    pub include_superseded: bool,
    /// The memories that were current at this time (ms) instead of now.
    pub as_of: Option<i64>,
    pub limit: usize,
    pub offset: usize,
}

#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub scope: Scope,
    pub text: String,
    pub top_k: usize,
    pub filter: Option<Filter>,
    pub kinds: Vec<Kind>,
    /// Hits whose normalised score is below this are dropped.
    pub min_score: f32,
    /// Candidates taken from each signal before fusion.
    pub candidates: usize,
    pub vector_weight: f32,
    pub keyword_weight: f32,
    /// Added to the (0..1) score of a memory whose speaker (`metadata.speaker`)
    /// the query names: a question about someone is usually answered by what
    /// they said, not by what was said to them.
    pub speaker_boost: f32,
    /// Search what was true at this time (ms) instead of now.
    pub as_of: Option<i64>,
    /// Search every version, current, superseded or deleted.
    pub include_superseded: bool,
    /// The decay signal's weight and half-life. None: the facade's
    /// configured one (`[forgetting]`); a store given None uses none.
    pub decay: Option<Decay>,
    /// Entity expansion from the top hits (`graph::Expansion`). None: the
    /// facade's configured one; a store ignores it.
    pub expand: Option<crate::graph::Expansion>,
    /// How many fused hits the facade's reranking stage reorders: None, its
    /// configured `top_n`; 0, no reranking for this search. A store
    /// ignores it.
    pub rerank: Option<usize>,
    /// The world time the query is about ("last week", "in May"): filters
    /// or boosts by each memory's `valid_from`. The facade fills it from
    /// the query's words when asked (`memloop::TimeReading`).
    pub time: Option<TimeWindow>,
}

impl SearchQuery {
    /// Whether a memory that became true at `valid_from` may be returned:
    /// inside the query's time window when the window filters.
    pub fn window_admits(&self, valid_from: i64) -> bool {
        self.time
            .is_none_or(|t| !t.filters() || t.contains(valid_from))
    }

    pub fn new(scope: Scope, text: impl Into<String>) -> Self {
        SearchQuery {
            scope,
            text: text.into(),
            top_k: 10,
            filter: None,
            kinds: Vec::new(),
            min_score: 0.0,
            candidates: 100,
            // Keywords count more than meaning: on LoCoMo's dev split BM25
            // (with turn context) finds 0.755 of evidence turns in the top 10
            // where all-MiniLM-L6-v2 finds 0.502; of the vector weights 0.3 to
            // 1, 0.4 to 0.6 fused best, flat between (docs/retrieval.md).
            vector_weight: DEFAULT_VECTOR_WEIGHT,
            keyword_weight: 1.0,
            speaker_boost: DEFAULT_SPEAKER_BOOST,
            as_of: None,
            include_superseded: false,
            decay: None,
            expand: None,
            rerank: None,
            time: None,
        }
    }

    /// The score below which hits are dropped, as a caller asks for it
    /// under the argument `name`: from 0 to 1.
    pub fn set_min_score(&mut self, name: &str, min: f32) -> Result<()> {
        if !(0.0..=1.0).contains(&min) {
            return Err(memloop_core::Error::invalid(format!(
                "{name} must be between 0 and 1 (got {min})"
            )));
        }
        self.min_score = min;
        Ok(())
    }

    /// The weights of meaning and keywords in the fusion, as a caller asks
    /// for them (None: the default): each from 0 to 10, not both 0.
    pub fn set_weights(&mut self, vector: Option<f32>, keyword: Option<f32>) -> Result<()> {
        for (name, w) in [("vector_weight", vector), ("keyword_weight", keyword)] {
            if let Some(w) = w {
                if !(0.0..=MAX_SIGNAL_WEIGHT).contains(&w) {
                    return Err(memloop_core::Error::invalid(format!(
                        "{name} must be between 0 and {MAX_SIGNAL_WEIGHT} (got {w})"
                    )));
                }
            }
        }
        let (v, k) = (
            vector.unwrap_or(self.vector_weight),
            keyword.unwrap_or(self.keyword_weight),
        );
        if v == 0.0 && k == 0.0 {
            return Err(memloop_core::Error::invalid(
                "vector_weight and keyword_weight cannot both be 0: nothing would rank the hits",
            ));
        }
        self.vector_weight = v;
        self.keyword_weight = k;
        Ok(())
    }
}

/// The largest weight a caller may give meaning or keywords.
pub const MAX_SIGNAL_WEIGHT: f32 = 10.0;

/// A user (or an agent without a user) with current memories.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entity {
    /// "user" or "agent".
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    /// Current memories.
    pub memories: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One session of a user (or agent) on the time axis: `memloop sessions`,
/// REST `GET /v1/sessions`, MCP `memory_sessions`. Derived from the current
/// memories written in it (their `session_id` and `valid_from`, the time
/// they were said), so a conversation written with its own past times
/// (`--at`, `timestamp`) sits where it happened, not where it was imported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionInfo {
    /// The session id the memories were written with.
    pub id: String,
    /// Its place among the scope's sessions by start, oldest first: 1 is the
    /// first session (ties broken by id).
    pub ordinal: u32,
    /// The earliest turn time (ms; RFC 3339 on the wire, as every time):
    /// its episodes' `valid_from`, or, for a session without episodes, its
    /// memories'.
    #[serde(with = "memloop_core::time::millis")]
    pub started_at: i64,
    /// The latest turn time, counted the same way.
    #[serde(with = "memloop_core::time::millis")]
    pub ended_at: i64,
    /// Current memories written in it.
    pub memories: i64,
}

/// Numbers sessions given oldest first as (id, start, end, memories) and
/// returns them newest first, narrowed to `scope`'s session when it names
/// one (still numbered among all of the scope's sessions). Shared by every
/// backend so they number alike.
pub fn number_sessions(
    scope: &Scope,
    mut oldest_first: Vec<(String, i64, i64, i64)>,
) -> Vec<SessionInfo> {
    oldest_first.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut out: Vec<SessionInfo> = oldest_first
        .into_iter()
        .enumerate()
        .map(|(i, (id, started_at, ended_at, memories))| SessionInfo {
            id,
            ordinal: u32::try_from(i + 1).unwrap_or(u32::MAX),
            started_at,
            ended_at,
            memories,
        })
        .filter(|s| scope.session_id.as_ref().is_none_or(|want| *want == s.id))
        .collect();
    out.reverse();
    out
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Stats {
    /// Every stored row: current, superseded or deleted, and expired.
    pub memories: i64,
    /// Neither superseded, deleted nor expired.
    pub current: i64,
    /// Superseded or deleted (kept as history).
    pub superseded: i64,
    /// Past their TTL and not yet deleted by `gc`: counted nowhere as current.
    pub expired: i64,
    pub by_kind: HashMap<String, i64>,
    pub partitions: i64,
    pub history_entries: i64,
    pub database_bytes: u64,
    pub embedder: memloop_core::EmbedderInfo,
    pub schema_version: i64,
    pub loaded_partitions: usize,
    pub hnsw_partitions: usize,
}

/// Embeds a batch of texts, each into all its vectors (reindex takes the
/// embedder as a function).
pub type EmbedFn<'a> = dyn Fn(&[&str]) -> Result<Vec<Embedded>> + 'a;

/// Derives what a memory links to from its text and metadata, as a write
/// does (`Upkeep::relink` takes the rules as a function).
pub type LinksFn<'a> = dyn Fn(&str, &serde_json::Value) -> memloop_core::links::Links + 'a;

/// A text's vectors: the first reads its start (`Embedder::embed_batch`),
/// the pieces what a long text says past the model's window
/// (`Embedder::embed_pieces`, empty for a short text).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Embedded {
    pub vector: Vec<f32>,
    pub pieces: Vec<Vec<f32>>,
}

impl Embedded {
    /// Checks both against the store's embedder.
    pub fn check(&self, embedder: &memloop_core::EmbedderInfo) -> Result<()> {
        crate::checks::check_vector(embedder, &self.vector)?;
        crate::checks::check_pieces(embedder, &self.pieces)
    }
}

/// A change to one memory; fields left None stay as they are.
#[derive(Debug, Clone, Default)]
pub struct MemoryUpdate {
    /// New text and its embedding.
    pub text: Option<(String, Vec<f32>)>,
    /// With a new text: the vectors of its later pieces (see
    /// `NewMemory::pieces`; the facade fills them).
    pub pieces: Vec<Vec<f32>>,
    /// Replaces the metadata object.
    pub metadata: Option<Value>,
    pub expires_at: Option<Option<i64>>,
    pub importance: Option<f32>,
    /// With a new text: the entities and relations it names, replacing the
    /// old text's (the facade fills them).
    pub links: memloop_core::links::Links,
}

/// What deleting expired memories did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExpireReport {
    /// Memories deleted because their TTL had passed.
    pub memories_deleted: usize,
    /// Partitions they were deleted from (whose indexes were updated).
    pub partitions: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ForgetReport {
    pub memories_deleted: usize,
    pub history_deleted: usize,
}

/// A queued write: whose, what (the pipeline's own payload), how it went.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OutboxEntry {
    pub id: i64,
    pub scope: Scope,
    pub payload: Value,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub created_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> Vec<(String, i64, i64, i64)> {
        vec![
            ("late".into(), 300, 350, 2),
            ("first".into(), 100, 150, 4),
            ("b-tie".into(), 200, 210, 1),
            ("a-tie".into(), 200, 220, 3),
        ]
    }

    #[test]
    fn sessions_are_numbered_by_start_and_listed_newest_first() {
        let got = number_sessions(&Scope::user("u"), raw());
        let rows: Vec<(&str, u32, i64, i64, i64)> = got
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    s.ordinal,
                    s.started_at,
                    s.ended_at,
                    s.memories,
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                ("late", 4, 300, 350, 2),
                ("b-tie", 3, 200, 210, 1),
                ("a-tie", 2, 200, 220, 3),
                ("first", 1, 100, 150, 4),
            ]
        );
    }

    #[test]
    fn a_scope_naming_a_session_keeps_its_ordinal() {
        let mut scope = Scope::user("u");
        scope.session_id = Some("b-tie".into());
        let got = number_sessions(&scope, raw());
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].id.as_str(), got[0].ordinal), ("b-tie", 3));
        scope.session_id = Some("none".into());
        assert!(number_sessions(&scope, raw()).is_empty());
        assert!(number_sessions(&Scope::user("u"), Vec::new()).is_empty());
    }
}

#[cfg(test)]
mod time_window_tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn closeness_is_one_inside_and_halves_a_window_length_away() {
        let w = TimeWindow {
            start: Some(10 * DAY),
            end: Some(20 * DAY),
            mode: TimeMode::Boost(0.3),
        };
        assert_eq!(w.closeness(10 * DAY), 1.0);
        assert_eq!(w.closeness(20 * DAY - 1), 1.0);
        assert!((w.closeness(0) - 0.5).abs() < 1e-6, "{}", w.closeness(0));
        assert!((w.closeness(30 * DAY - 1) - 0.5).abs() < 1e-3);
        assert!(w.closeness(100 * DAY) < w.closeness(25 * DAY));
        assert_eq!(w.boost(), 0.3);
        let open = TimeWindow {
            start: Some(10 * DAY),
            end: None,
            mode: TimeMode::Filter,
        };
        assert!(open.contains(i64::MAX) && !open.contains(10 * DAY - 1));
        assert_eq!(open.boost(), 0.0);
        assert!((open.closeness(9 * DAY) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn bad_windows_are_refused() {
        let w = |start, end, mode| TimeWindow { start, end, mode };
        assert!(w(Some(2), Some(1), TimeMode::Filter).check().is_err());
        assert!(w(Some(1), Some(1), TimeMode::Filter).check().is_err());
        assert!(w(None, None, TimeMode::Boost(f32::NAN)).check().is_err());
        assert!(w(None, None, TimeMode::Boost(-1.0)).check().is_err());
        assert!(w(Some(1), None, TimeMode::Boost(0.3)).check().is_ok());
    }
}
