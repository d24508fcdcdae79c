//! Fusion of the vector and keyword signals into one score.
//!
//! Each signal's scores are scaled into 0..1 over the query's candidates —
//! BM25 by the best candidate's score, cosine similarity from the worst
//! candidate's (0) to the best's (1) — and summed with the signals' weights.
//! Unlike reciprocal-rank fusion, this keeps how far ahead a candidate is:
//! a turn that matches a question's rare words far better than anything
//! else stays first, and a close second in one list is not worth as much as
//! a clear first. On LoCoMo's dev split it lifted R@5 / R@10 from 0.666 /
//! 0.760 (weighted RRF, its best weights) to 0.693 / 0.783 (docs/retrieval.md).

/// The range of one signal's scores over a query's candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f32,
    pub max: f32,
}

impl Range {
    /// The range of `scores`; None for no candidates.
    pub fn of(scores: impl IntoIterator<Item = f32>) -> Option<Range> {
        scores.into_iter().fold(None, |r, s| {
            Some(match r {
                None => Range { min: s, max: s },
                Some(Range { min, max }) => Range {
                    min: min.min(s),
                    max: max.max(s),
                },
            })
        })
    }
}

/// A BM25 score scaled by the best candidate's (BM25 scores are ≥ 0; a
/// candidate that matched nothing scores 0).
pub fn keyword_part(bm25: Option<f32>, range: Option<Range>) -> f32 {
    match (bm25, range) {
        (Some(s), Some(r)) if r.max > 0.0 => (s / r.max).clamp(0.0, 1.0),
        _ => 0.0,
    }
}

/// A cosine similarity scaled from the worst candidate's (0) to the best's
/// (1). Cosines of one query's candidates bunch together (say 0.2 to 0.6),
/// so the raw value would weigh the signal by the model's habits rather than
/// by how the candidates compare. A lone candidate keeps its cosine.
pub fn vector_part(cosine: Option<f32>, range: Option<Range>) -> f32 {
    match (cosine, range) {
        (Some(c), Some(r)) if r.max > r.min => ((c - r.min) / (r.max - r.min)).clamp(0.0, 1.0),
        (Some(c), Some(_)) => c.clamp(0.0, 1.0),
        _ => 0.0,
    }
}

/// The fused score in 0..1: the weighted mean of the two parts.
pub fn fuse(keyword: f32, vector: f32, keyword_weight: f32, vector_weight: f32) -> f32 {
    let total = keyword_weight + vector_weight;
    if total <= 0.0 {
        return 0.0;
    }
    (keyword_weight * keyword + vector_weight * vector) / total
}

/// The decay signal of a memory, in 0..1: recency × importance × use.
///
/// - recency: `2^(-age / half_life)`, the age counted from the later of
///   when the memory became true (`valid_from`) and when it was last
///   retrieved, so a memory in use stays fresh; a future `valid_from`
///   counts as now, and a half-life of 0 or less turns recency off (1).
/// - importance: as stored, 0..1 (0.5 unless the write gave one).
/// - use: `(1 + n) / (2 + n)` for `n` retrievals: 0.5 never used, 0.67
///   once, 0.91 after nine, approaching 1: use doubles the signal at
///   most, so it cannot outweigh recency or importance.
pub fn decay(age_ms: i64, half_life_ms: i64, importance: f32, uses: u64) -> f32 {
    let recency = if half_life_ms > 0 {
        0.5f64.powf(age_ms.max(0) as f64 / half_life_ms as f64) as f32
    } else {
        1.0
    };
    let importance = if importance.is_nan() {
        0.0
    } else {
        importance.clamp(0.0, 1.0)
    };
    let uses = uses.min(u64::from(u32::MAX)) as f32;
    let use_ = (1.0 + uses) / (2.0 + uses);
    recency * importance * use_
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_halves_with_each_half_life_and_grows_with_importance_and_use() {
        const DAY: i64 = 86_400_000;
        let fresh = decay(0, 30 * DAY, 0.5, 0);
        assert!((fresh - 0.25).abs() < 1e-6, "{fresh}");
        let month_old = decay(30 * DAY, 30 * DAY, 0.5, 0);
        assert!((month_old - 0.125).abs() < 1e-6, "{month_old}");
        assert!(decay(0, 30 * DAY, 1.0, 0) > fresh);
        assert!(decay(0, 30 * DAY, 0.5, 3) > fresh);
        assert!(decay(0, 30 * DAY, 1.0, 1_000) < 1.0);
        // A future valid_from is fresh; no half-life, no recency.
        assert_eq!(decay(-DAY, 30 * DAY, 0.5, 0), fresh);
        assert_eq!(decay(1000 * DAY, 0, 0.5, 0), fresh);
        for v in [
            decay(i64::MAX, 1, f32::NAN, u64::MAX),
            decay(i64::MIN, i64::MAX, f32::INFINITY, 0),
            decay(i64::MAX, i64::MIN, -3.0, 7),
        ] {
            assert!((0.0..=1.0).contains(&v), "{v}");
        }
    }

    #[test]
    fn the_best_in_both_signals_scores_one_and_absence_scores_nothing() {
        let kw = Range::of([2.0, 8.0, 4.0]);
        let vec = Range::of([0.2, 0.6, 0.4]);
        assert_eq!(kw, Some(Range { min: 2.0, max: 8.0 }));
        let best = fuse(
            keyword_part(Some(8.0), kw),
            vector_part(Some(0.6), vec),
            1.0,
            0.5,
        );
        assert!((best - 1.0).abs() < 1e-6);
        assert_eq!(keyword_part(None, kw), 0.0);
        assert_eq!(vector_part(None, vec), 0.0);
        assert_eq!(vector_part(Some(0.2), vec), 0.0);
        assert!((vector_part(Some(0.4), vec) - 0.5).abs() < 1e-6);
        assert!((keyword_part(Some(4.0), kw) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn margins_survive_fusion() {
        // A clear keyword winner with a middling cosine beats a candidate
        // that is a close second in both lists (rank fusion would not).
        let kw = Range::of([10.0, 3.0, 2.9]);
        let vec = Range::of([0.50, 0.52, 0.30]);
        let winner = fuse(
            keyword_part(Some(10.0), kw),
            vector_part(Some(0.50), vec),
            1.0,
            0.5,
        );
        let runner_up = fuse(
            keyword_part(Some(3.0), kw),
            vector_part(Some(0.52), vec),
            1.0,
            0.5,
        );
        assert!(winner > runner_up, "{winner} vs {runner_up}");
    }

    #[test]
    fn degenerate_inputs_stay_in_range() {
        assert_eq!(Range::of(std::iter::empty()), None);
        let one = Range::of([0.3]);
        assert!((vector_part(Some(0.3), one) - 0.3).abs() < 1e-6);
        assert_eq!(keyword_part(Some(0.0), Range::of([0.0])), 0.0);
        assert_eq!(fuse(1.0, 1.0, 0.0, 0.0), 0.0);
        assert!((fuse(1.0, 0.0, 0.0, 1.0)).abs() < 1e-6);
    }
}
