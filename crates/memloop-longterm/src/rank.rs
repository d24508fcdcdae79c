//! How a search ranks, the same for every backend: each backend finds its
//! candidates (vector and keyword, best first) and hydrates records its own
//! way; fusing the two signals, the speaker boost, decay, the query's time
//! window, the cut, what is visible and the marking of stale hits are
//! decided here, so two backends never rank the same memories differently.

use std::collections::{HashMap, HashSet};

use crate::fusion::{decay, fuse, keyword_part, vector_part, Range};
use memloop_core::{MemoryRecord, Replacement, Result, SearchHit, SignalScores};

use crate::pieces::VectorHit;
use crate::{Decay, SearchQuery, TimeWindow};

/// Candidates scored by the fused signals (and the speaker boost): row,
/// per-signal scores, score in 0..1.
pub struct Ranked {
    rows: Vec<(i64, SignalScores, f32)>,
    decay: Option<Decay>,
    time: Option<TimeWindow>,
    /// What the boosts add at most: scores are scaled back into 0..1 by it.
    extra: f32,
}

/// Fuses the vector candidates (each with its similarity and any pieces
/// discount: they rank and fuse by the similarity less it, and report the
/// two apart) and the keyword candidates (as (row, score)), each best
/// first; `spoken` are the rows said by someone the query names.
pub fn fuse_candidates(
    q: &SearchQuery,
    vector: &[VectorHit],
    keyword: &[(i64, f32)],
    spoken: &HashSet<i64>,
) -> Ranked {
    let mut fused: HashMap<i64, SignalScores> = HashMap::new();
    for (rank, h) in vector.iter().enumerate() {
        let s = fused.entry(h.row).or_default();
        s.vector = Some(h.similarity);
        s.pieces_discount = h.discount;
        s.vector_rank = Some(rank);
    }
    for (rank, &(row, score)) in keyword.iter().enumerate() {
        let s = fused.entry(row).or_default();
        s.bm25 = Some(score);
        s.bm25_rank = Some(rank);
    }
    let vector_range = Range::of(vector.iter().map(VectorHit::score));
    let keyword_range = Range::of(keyword.iter().map(|h| h.1));
    let decay = q.decay.filter(|d| d.weight > 0.0 && d.weight.is_finite());
    let time = q.time;
    let extra = q.speaker_boost.max(0.0)
        + decay.map_or(0.0, |d| d.weight)
        + time.map_or(0.0, |t| t.boost());
    // The reported score: the fused score (0..1) plus the speaker boost
    // (and the weighted decay and time signals), scaled back into 0..1.
    let rows = fused
        .into_iter()
        .map(|(row, mut s)| {
            s.fused = fuse(
                keyword_part(s.bm25, keyword_range),
                vector_part(s.vector.map(|v| v - s.pieces_discount), vector_range),
                q.keyword_weight,
                q.vector_weight,
            );
            if spoken.contains(&row) {
                s.speaker_boost = q.speaker_boost;
            }
            let score = (s.fused + s.speaker_boost) / (1.0 + extra);
            (row, s, score)
        })
        .collect();
    Ranked {
        rows,
        decay,
        time,
        extra,
    }
}

/// What decay and a query's time window rank a candidate by: a few
/// numbers of its record (and its id, to add the retrievals not yet
/// written). A backend reads these for every candidate before the cut and
/// whole records only for the rows that survive it. When only a time
/// window ranks (no decay), only `valid_from` is used, and a backend may
/// give just that (the other fields at their defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct RankInputs {
    pub id: String,
    pub valid_from: i64,
    pub importance: f32,
    pub access_count: u64,
    pub last_accessed_at: Option<i64>,
}

impl RankInputs {
    /// The inputs of a search that ranks by time alone.
    pub fn valid_from(valid_from: i64) -> Self {
        RankInputs {
            id: String::new(),
            valid_from,
            importance: 0.0,
            access_count: 0,
            last_accessed_at: None,
        }
    }
}

impl From<&MemoryRecord> for RankInputs {
    fn from(r: &MemoryRecord) -> Self {
        RankInputs {
            id: r.id.clone(),
            valid_from: r.valid_from,
            importance: r.importance,
            access_count: r.access_count,
            last_accessed_at: r.last_accessed_at,
        }
    }
}

impl Ranked {
    /// Cuts the candidates to the best and reads their records, with the
    /// backend's own reads: `inputs` gives the [`RankInputs`] of the rows
    /// it is asked for (every field when its flag, decay, is set; else
    /// `valid_from` suffices), `records` their whole records. With decay or a time
    /// window every candidate's inputs are read first (they move rows
    /// across the cut); then the best `top_k` rows' records, and the rest
    /// of the cut only if those do not settle the hits
    /// ([`Ranked::settled`]). Whole records for every candidate (a hundred
    /// or more, for ten hits) were most of what a served search spent
    /// outside the embedder when its text named a time (docs/benchmarks.md).
    pub fn cut_and_hydrate(
        &mut self,
        q: &SearchQuery,
        now: i64,
        inputs: impl FnOnce(&[i64], bool) -> Result<HashMap<i64, RankInputs>>,
        mut records: impl FnMut(&[i64]) -> Result<HashMap<i64, MemoryRecord>>,
    ) -> Result<HashMap<i64, MemoryRecord>> {
        if self.decay.is_some() || self.time.is_some() {
            let inputs = inputs(&self.rows(), self.decay.is_some())?;
            self.add_decay(&inputs, now);
            self.add_time(&inputs);
        }
        self.cut(q.top_k);
        let (first, rest) = self.hydration_order(q.top_k);
        let mut found = records(&first)?;
        if !self.settled(&found, q, now) {
            found.extend(records(&rest)?);
        }
        Ok(found)
    }

    /// The candidates' rows, in their current order.
    fn rows(&self) -> Vec<i64> {
        self.rows.iter().map(|r| r.0).collect()
    }

    /// Adds each candidate's weighted decay signal (recency × importance ×
    /// use) to its score, and records the signal in its scores.
    fn add_decay(&mut self, inputs: &HashMap<i64, RankInputs>, now: i64) {
        let Some(d) = self.decay else { return };
        for (row, s, score) in &mut self.rows {
            if let Some(r) = inputs.get(row) {
                s.decay = decay_of(r, d, now);
                *score += d.weight * s.decay / (1.0 + self.extra);
            }
        }
    }

    /// Applies the query's time window to the candidates, before the cut:
    /// a filter drops those that did not become true inside it (so they
    /// never take a place in the top k), a boost adds each one's weighted
    /// time signal ([`TimeWindow::closeness`] of its `valid_from`). Either
    /// way the signal is recorded in its scores.
    fn add_time(&mut self, inputs: &HashMap<i64, RankInputs>) {
        let Some(t) = self.time else { return };
        let (weight, extra) = (t.boost(), self.extra);
        self.rows.retain_mut(|(row, s, score)| {
            let Some(r) = inputs.get(row) else {
                return true;
            };
            if t.filters() {
                s.time = 1.0;
                return t.contains(r.valid_from);
            }
            s.time = t.closeness(r.valid_from);
            *score += weight * s.time / (1.0 + extra);
            true
        });
    }

    /// Best first, then a few more than asked for kept: rows that turn out
    /// deleted or invisible when hydrated are dropped after this.
    fn cut(&mut self, top_k: usize) {
        self.rows
            .sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        self.rows.truncate(top_k * 2 + 10);
    }

    /// The rows after the cut in the order to hydrate them: the best
    /// `top_k` first, then the rest, which are read only if the first ones'
    /// records do not settle the result ([`Ranked::settled`]). Reading the
    /// rest every time tripled the rows a search read for nothing in the
    /// usual case, and at a million memories reading records was a quarter
    /// of a search (docs/benchmarks.md).
    fn hydration_order(&self, top_k: usize) -> (Vec<i64>, Vec<i64>) {
        let rows = self.rows();
        let first = rows.len().min(top_k);
        (rows[..first].to_vec(), rows[first..].to_vec())
    }

    /// Whether the best `top_k` rows' records alone decide the hits: each
    /// is found and shown, or scores below `min_score` (so does every row
    /// after it), and none holds a superseded claim, which
    /// [`finish`] may rank below its replacement and so let a later row in.
    fn settled(&self, records: &HashMap<i64, MemoryRecord>, q: &SearchQuery, now: i64) -> bool {
        self.rows.iter().take(q.top_k).all(|(row, _, score)| {
            *score < q.min_score
                || records
                    .get(row)
                    .is_some_and(|r| shown(r, q, now) && r.superseded_by.is_none())
        })
    }

    /// The hits the query may see (current, or true at `as_of`, at or above
    /// `min_score`), best first; stale ones not yet marked.
    pub fn into_hits(
        self,
        records: &HashMap<i64, MemoryRecord>,
        q: &SearchQuery,
        now: i64,
    ) -> Vec<SearchHit> {
        let mut out = Vec::with_capacity(self.rows.len());
        for (row, scores, score) in self.rows {
            let Some(record) = records.get(&row) else {
                continue;
            };
            if !shown(record, q, now) || score < q.min_score {
                continue;
            }
            out.push(SearchHit {
                record: record.clone(),
                score,
                scores,
                superseded_by: None,
            });
        }
        out
    }
}

/// Whether a search may show this record: current (or true at `as_of`,
/// or any version when superseded ones are asked for), and inside the
/// query's time window when the window filters.
fn shown(record: &MemoryRecord, q: &SearchQuery, now: i64) -> bool {
    let visible = match q.as_of {
        Some(t) => record.valid_from <= t && record.valid_until.is_none_or(|u| u > t),
        None => q.include_superseded || record.is_current(now),
    };
    visible && q.window_admits(record.valid_from)
}

/// A record's decay signal at `now` (see `crate::fusion::decay`):
/// recency counts from when it became true or was last retrieved.
pub fn decay_of(r: &RankInputs, d: Decay, now: i64) -> f32 {
    let fresh_since = r
        .last_accessed_at
        .map_or(r.valid_from, |t| t.max(r.valid_from));
    decay(
        now.saturating_sub(fresh_since),
        d.half_life_ms,
        r.importance,
        r.access_count,
    )
}

/// Names, on each hit holding a claim that was superseded, the current
/// memory that replaced it (following successors through `get`, which
/// answers a memory of the tenant by id, or None), ranks the hit just
/// below that memory when both were found (the current fact answers the
/// question the stale episode seemed to), then keeps the best `top_k`.
pub fn finish(
    hits: &mut Vec<SearchHit>,
    top_k: usize,
    now: i64,
    mut get: impl FnMut(&str) -> Result<Option<MemoryRecord>>,
) -> Result<()> {
    // A chain of corrections is short; the bound only guards against a cycle.
    const MAX_CHAIN: usize = 32;
    if hits.iter().any(|h| h.record.superseded_by.is_some()) {
        let scores: HashMap<String, f32> = hits
            .iter()
            .map(|h| (h.record.id.clone(), h.score))
            .collect();
        for hit in hits.iter_mut() {
            let Some(mut next) = hit.record.superseded_by.clone() else {
                continue;
            };
            let mut current = None;
            for _ in 0..MAX_CHAIN {
                let Some(rec) = get(&next)? else { break };
                if rec.is_current(now) {
                    current = Some(rec);
                    break;
                }
                match rec.superseded_by {
                    Some(id) => next = id,
                    None => break,
                }
            }
            let Some(rec) = current else { continue };
            if let Some(&above) = scores.get(&rec.id) {
                hit.score = hit.score.min(above - 1e-6).max(0.0);
            }
            hit.superseded_by = Some(Replacement {
                id: rec.id,
                text: rec.text,
            });
        }
        // Stable: hits a demotion did not touch keep their order.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
    hits.truncate(top_k);
    Ok(())
}

/// The words of who said a text that the speaker boost matches: lower
/// case, three letters or more, at most [`MAX_SPEAKER_WORDS`] of them (a
/// name is a few words; metadata could hold anything).
pub fn speaker_words(speaker: &str) -> Vec<String> {
    speaker
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .take(MAX_SPEAKER_WORDS)
        .map(String::from)
        .collect()
}

/// The words of a query that a speaker's words are looked for among.
pub fn query_words(text: &str) -> HashSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// The most words of a speaker's name kept for the speaker match.
pub const MAX_SPEAKER_WORDS: usize = 64;

#[cfg(test)]
mod tests {
    use memloop_core::{Kind, Provenance, Scope};

    use super::*;

    fn record(row: i64) -> MemoryRecord {
        MemoryRecord {
            id: format!("m{row}"),
            text: format!("memory {row}"),
            context: None,
            kind: Kind::Episode,
            scope: Scope::user("u"),
            metadata: serde_json::Value::Null,
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_until: None,
            expires_at: None,
            importance: 0.5,
            access_count: 0,
            last_accessed_at: None,
            provenance: Provenance::default(),
            content_hash: String::new(),
            superseded_by: None,
        }
    }

    /// The hits as a search gives them when it reads `read` of the
    /// hydration order (the first rows, then the rest only if unsettled).
    fn hits(records: &HashMap<i64, MemoryRecord>, q: &SearchQuery) -> (Vec<String>, bool) {
        // Thirty candidates, row r scoring (30 - r) / 30 by keyword alone.
        let keyword: Vec<(i64, f32)> = (0..30).map(|r| (r, (30 - r) as f32)).collect();
        let mut ranked = fuse_candidates(q, &[], &keyword, &HashSet::new());
        ranked.cut(q.top_k);
        let (first, rest) = ranked.hydration_order(q.top_k);
        let mut read: HashMap<i64, MemoryRecord> = first
            .iter()
            .filter_map(|r| records.get(r).map(|rec| (*r, rec.clone())))
            .collect();
        let settled = ranked.settled(&read, q, 1);
        if !settled {
            read.extend(
                rest.iter()
                    .filter_map(|r| records.get(r).map(|rec| (*r, rec.clone()))),
            );
        }
        let mut out = ranked.into_hits(&read, q, 1);
        finish(&mut out, q.top_k, 1, |id| {
            Ok(records.values().find(|r| r.id == id).cloned())
        })
        .unwrap();
        (out.into_iter().map(|h| h.record.id).collect(), settled)
    }

    /// Reading only the best `top_k` records must give the hits reading
    /// every candidate's gives; each case that needs the rest reads it.
    #[test]
    fn the_first_records_settle_the_hits_only_when_nothing_later_can_enter() {
        let q = SearchQuery::new(Scope::user("u"), "q");
        let all: HashMap<i64, MemoryRecord> = (0..30).map(|r| (r, record(r))).collect();
        let want: Vec<String> = (0..10).map(|r| format!("m{r}")).collect();
        assert_eq!(hits(&all, &q), (want.clone(), true));

        // A candidate deleted since it was indexed: the eleventh takes its place.
        let mut gone = all.clone();
        gone.remove(&3);
        let (got, settled) = hits(&gone, &q);
        assert!(!settled);
        assert_eq!(got.len(), 10);
        assert_eq!(got[9], "m10");

        // One no longer current is not shown either.
        let mut ended = all.clone();
        ended.get_mut(&5).unwrap().valid_until = Some(0);
        let (got, settled) = hits(&ended, &q);
        assert!(!settled && !got.contains(&"m5".to_string()) && got[9] == "m10");

        // A stale claim in the top ten whose replacement ranks 20th: it is
        // ranked just below its replacement, so the 11th row enters.
        let mut stale = all.clone();
        stale.get_mut(&2).unwrap().superseded_by = Some("m20".into());
        let (got, settled) = hits(&stale, &q);
        assert!(!settled);
        assert!(!got.contains(&"m2".to_string()), "{got:?}");
        assert_eq!(got[9], "m10");

        // Below min_score from the 7th on: nothing later can be shown.
        let keyword: Vec<(i64, f32)> = (0..30).map(|r| (r, (30 - r) as f32)).collect();
        let mut ranked = fuse_candidates(&q, &[], &keyword, &HashSet::new());
        ranked.cut(q.top_k);
        let mut high = q.clone();
        high.min_score = (ranked.rows[5].2 + ranked.rows[6].2) / 2.0;
        let (got, settled) = hits(&all, &high);
        assert!(settled);
        assert_eq!(got.len(), 6, "{got:?}");
    }

    /// With decay or a time window, every candidate's rank inputs are read
    /// but whole records only for the rows that survive the cut; the hits
    /// are those reading every record gives, and the signals move rows
    /// across the cut (here a late row, recent and important, enters).
    #[test]
    fn rank_inputs_for_every_candidate_records_only_for_the_cut() {
        const DAY: i64 = 86_400_000;
        let now = 400 * DAY;
        let all: HashMap<i64, MemoryRecord> = (0..100)
            .map(|r| {
                let mut rec = record(r);
                rec.valid_from = if r == 90 { now } else { DAY };
                rec.importance = if r == 90 { 1.0 } else { 0.1 };
                (r, rec)
            })
            .collect();
        let keyword: Vec<(i64, f32)> = (0..100).map(|r| (r, (100 - r) as f32)).collect();
        let mut with_decay = SearchQuery::new(Scope::user("u"), "q");
        with_decay.decay = Some(Decay {
            weight: 2.0,
            half_life_ms: 30 * DAY,
        });
        let mut with_time = SearchQuery::new(Scope::user("u"), "q");
        with_time.time = Some(TimeWindow {
            start: Some(now - DAY),
            end: Some(now + DAY),
            mode: crate::TimeMode::Boost(2.0),
        });
        for q in [with_decay, with_time] {
            let mut ranked = fuse_candidates(&q, &[], &keyword, &HashSet::new());
            let (mut asked_inputs, mut asked_records) = (0, 0);
            let read = ranked
                .cut_and_hydrate(
                    &q,
                    now,
                    |rows, _| {
                        asked_inputs += rows.len();
                        Ok(rows
                            .iter()
                            .map(|r| (*r, RankInputs::from(&all[r])))
                            .collect())
                    },
                    |rows| {
                        asked_records += rows.len();
                        Ok(rows.iter().map(|r| (*r, all[r].clone())).collect())
                    },
                )
                .unwrap();
            assert_eq!(asked_inputs, 100);
            assert_eq!(asked_records, q.top_k, "the first ten settle the hits");
            let got: Vec<String> = ranked
                .into_hits(&read, &q, now)
                .into_iter()
                .map(|h| h.record.id)
                .collect();
            // Reading every record and ranking them all gives the same.
            let mut every = fuse_candidates(&q, &[], &keyword, &HashSet::new());
            let inputs = all
                .iter()
                .map(|(r, rec)| (*r, RankInputs::from(rec)))
                .collect();
            every.add_decay(&inputs, now);
            every.add_time(&inputs);
            every.cut(q.top_k);
            let want: Vec<String> = every
                .into_hits(&all, &q, now)
                .into_iter()
                .take(q.top_k)
                .map(|h| h.record.id)
                .collect();
            assert_eq!(got, want);
            assert_eq!(got[0], "m90", "{got:?}");
        }
    }
}
