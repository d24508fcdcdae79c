//! Rank fusion of the vector and keyword result lists.

/// Reciprocal-rank-fusion constant. 60 is the value of Cormack et al. (2009), the usual default.
pub const RRF_K: f32 = 60.0;

/// One candidate's ranks (0-based) in each list; None where it is absent from a list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranks {
    pub vector: Option<usize>,
    pub keyword: Option<usize>,
}

/// Weighted reciprocal rank fusion: Σ wᵢ / (k + rankᵢ + 1).
pub fn rrf(ranks: Ranks, vector_weight: f32, keyword_weight: f32) -> f32 {
    let term = |rank: Option<usize>, w: f32| rank.map_or(0.0, |r| w / (RRF_K + r as f32 + 1.0));
    term(ranks.vector, vector_weight) + term(ranks.keyword, keyword_weight)
}

/// The best fused score possible (first in both lists), to map scores into 0..1.
pub fn rrf_max(vector_weight: f32, keyword_weight: f32) -> f32 {
    (vector_weight + keyword_weight) / (RRF_K + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_both_lists_scores_the_maximum() {
        let best = rrf(
            Ranks {
                vector: Some(0),
                keyword: Some(0),
            },
            1.0,
            1.0,
        );
        assert!((best - rrf_max(1.0, 1.0)).abs() < 1e-7);
    }

    #[test]
    fn presence_in_both_beats_one_list() {
        let both = rrf(
            Ranks {
                vector: Some(5),
                keyword: Some(5),
            },
            1.0,
            1.0,
        );
        let one = rrf(
            Ranks {
                vector: Some(0),
                keyword: None,
            },
            1.0,
            1.0,
        );
        assert!(both > one);
    }
}
