//! How a search ranks, the same for every backend: each backend finds its
//! candidates (vector and keyword, best first) and hydrates records its own
//! way; fusing the two signals, the speaker boost, decay, the query's time
//! window, the cut, what is visible and the marking of stale hits are
//! decided here, so two backends never rank the same memories differently.

use std::collections::{HashMap, HashSet};

use memloop_core::fusion::{decay, fuse, keyword_part, vector_part, Range};
use memloop_core::{MemoryRecord, Replacement, Result, SearchHit, SignalScores};

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

/// Fuses the vector and keyword candidates (each best first, as (row,
/// score)); `spoken` are the rows said by someone the query names.
pub fn fuse_candidates(
    q: &SearchQuery,
    vector: &[(i64, f32)],
    keyword: &[(i64, f32)],
    spoken: &HashSet<i64>,
) -> Ranked {
    let mut fused: HashMap<i64, SignalScores> = HashMap::new();
    for (rank, &(row, sim)) in vector.iter().enumerate() {
        let s = fused.entry(row).or_default();
        s.vector = Some(sim);
        s.vector_rank = Some(rank);
    }
    for (rank, &(row, score)) in keyword.iter().enumerate() {
        let s = fused.entry(row).or_default();
        s.bm25 = Some(score);
        s.bm25_rank = Some(rank);
    }
    let vector_range = Range::of(vector.iter().map(|h| h.1));
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
                vector_part(s.vector, vector_range),
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

impl Ranked {
    /// Whether decay or a time window ranks too: then every candidate's
    /// record is needed before the cut ([`Ranked::add_decay`],
    /// [`Ranked::add_time`]).
    pub fn needs_records_before_cut(&self) -> bool {
        self.decay.is_some() || self.time.is_some()
    }

    /// The candidates' rows, in their current order.
    pub fn rows(&self) -> Vec<i64> {
        self.rows.iter().map(|r| r.0).collect()
    }

    /// Adds each candidate's weighted decay signal (recency × importance ×
    /// use) to its score, and records the signal in its scores.
    pub fn add_decay(&mut self, records: &HashMap<i64, MemoryRecord>, now: i64) {
        let Some(d) = self.decay else { return };
        for (row, s, score) in &mut self.rows {
            if let Some(r) = records.get(row) {
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
    pub fn add_time(&mut self, records: &HashMap<i64, MemoryRecord>) {
        let Some(t) = self.time else { return };
        let (weight, extra) = (t.boost(), self.extra);
        self.rows.retain_mut(|(row, s, score)| {
            let Some(r) = records.get(row) else {
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
    pub fn cut(&mut self, top_k: usize) {
        self.rows
            .sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        self.rows.truncate(top_k * 2 + 10);
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
            let visible = match q.as_of {
                Some(t) => record.valid_from <= t && record.valid_until.is_none_or(|u| u > t),
                None => q.include_superseded || record.is_current(now),
            };
            let in_window = q
                .time
                .is_none_or(|t| !t.filters() || t.contains(record.valid_from));
            if !visible || !in_window || score < q.min_score {
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

/// A record's decay signal at `now` (see `memloop_core::fusion::decay`):
/// recency counts from when it became true or was last retrieved.
pub fn decay_of(r: &MemoryRecord, d: Decay, now: i64) -> f32 {
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
