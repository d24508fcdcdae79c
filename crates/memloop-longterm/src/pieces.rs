//! How a memory read in several windows (a long text's pieces) ranks
//! against memories read in one, the same for every backend.
//!
//! A long reply embedded in n windows gets n draws at the query: its best
//! one is, by chance alone, higher than a one-window memory's single draw,
//! so long texts crowded out the short turns that held the answer
//! (LongMemEval's user turns beside assistant replies of thousands of
//! characters; docs/retrieval.md, "Long turns"). Each candidate memory's
//! best similarity is therefore discounted by what the maximum of its
//! candidate vectors adds by chance: the expected maximum of that many
//! draws of a standard normal, in units of the spread of the candidates'
//! similarities for this query. A memory whose pieces all match keeps a
//! lead when it is ahead by more than what chance gives it; a memory of one
//! window is never touched, so a store without long texts ranks as before.
//! The discount changes the rank, not the similarity a hit reports
//! ([`VectorHit`]): duplicate checks and `min_similarity` compare cosines.
//!
//! What counts is what the vector search found: the candidate vectors (the
//! `2k` nearest keys for `k` memories), so an exact scan, a graph walk and
//! PostgreSQL's two index walks all discount alike.

/// Expected maximum of n independent standard normal draws, n = 1..=16
/// (numerical integration); beyond, `sqrt(2 ln n) - 0.6` is within 0.06
/// up to 64 (a memory's most vectors: its first and 63 pieces).
const EXPECTED_MAX: [f32; 16] = [
    0.0, 0.564, 0.846, 1.029, 1.163, 1.267, 1.352, 1.424, 1.485, 1.539, 1.586, 1.629, 1.668, 1.703,
    1.736, 1.766,
];

/// The expected maximum of `n` standard normal draws (0 for n ≤ 1).
pub fn expected_max(n: usize) -> f32 {
    match n {
        0 | 1 => 0.0,
        n if n <= EXPECTED_MAX.len() => EXPECTED_MAX[n - 1],
        n => (2.0 * (n as f32).ln()).sqrt() - 0.6,
    }
}

/// One candidate memory of a vector search: its row, its best vector's
/// similarity, and how many of its vectors were among the candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieceHit {
    pub row: i64,
    pub best: f32,
    pub vectors: usize,
}

/// Groups candidate vectors `(row, similarity)` by row: each row's best
/// similarity and its count.
pub fn by_row(keys: impl IntoIterator<Item = (i64, f32)>) -> Vec<PieceHit> {
    let mut rows: Vec<PieceHit> = Vec::new();
    let mut at: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    for (row, sim) in keys.into_iter().filter(|(_, s)| s.is_finite()) {
        match at.get(&row) {
            Some(&i) => {
                let h = &mut rows[i];
                h.best = h.best.max(sim);
                h.vectors += 1;
            }
            None => {
                at.insert(row, rows.len());
                rows.push(PieceHit {
                    row,
                    best: sim,
                    vectors: 1,
                });
            }
        }
    }
    rows
}

/// A memory the vector search found: its best vector's cosine similarity,
/// and what its other candidate vectors take off it for ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit {
    pub row: i64,
    /// The best vector's cosine similarity to the query: what thresholds
    /// (duplicates, `min_similarity`) compare.
    pub similarity: f32,
    /// `σ × expected_max(vectors)`; 0 for a memory of one candidate vector.
    pub discount: f32,
}

impl VectorHit {
    /// A hit of one vector: ranked by its similarity.
    pub fn whole(row: i64, similarity: f32) -> VectorHit {
        VectorHit {
            row,
            similarity,
            discount: 0.0,
        }
    }

    /// What the memory ranks by: its similarity less the discount.
    pub fn score(&self) -> f32 {
        self.similarity - self.discount
    }
}

/// The `k` best rows, each ranked by its best similarity less
/// `σ × expected_max(vectors)`, σ being the standard deviation of the
/// candidates' best similarities; best first, ties by row. With no row of
/// several vectors nothing is discounted. Non-finite similarities are
/// left out.
pub fn discounted(hits: Vec<PieceHit>, k: usize) -> Vec<VectorHit> {
    let hits: Vec<PieceHit> = hits.into_iter().filter(|h| h.best.is_finite()).collect();
    let n = hits.len() as f32;
    let sigma = if hits.iter().any(|h| h.vectors > 1) && n > 1.0 {
        let mean = hits.iter().map(|h| h.best).sum::<f32>() / n;
        let var = hits.iter().map(|h| (h.best - mean).powi(2)).sum::<f32>() / n;
        var.sqrt()
    } else {
        0.0
    };
    let mut out: Vec<VectorHit> = hits
        .into_iter()
        .map(|h| VectorHit {
            row: h.row,
            similarity: h.best,
            discount: sigma * expected_max(h.vectors),
        })
        .collect();
    out.sort_by(|a, b| b.score().total_cmp(&a.score()).then(a.row.cmp(&b.row)));
    out.truncate(k);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_maximum_grows_with_the_draws_and_joins_its_tail() {
        assert_eq!(expected_max(0), 0.0);
        assert_eq!(expected_max(1), 0.0);
        for n in 2..64 {
            assert!(expected_max(n + 1) > expected_max(n), "{n}");
        }
        // The tail formula meets the table (E[max of 17] ≈ 1.794).
        assert!((expected_max(17) - 1.794).abs() < 0.06);
        assert!((expected_max(64) - 2.344).abs() < 0.06);
    }

    #[test]
    fn one_window_memories_rank_by_similarity_alone() {
        let hits = by_row([(3, 0.5), (1, 0.9), (2, 0.7)]);
        assert_eq!(
            discounted(hits, 2),
            vec![VectorHit::whole(1, 0.9), VectorHit::whole(2, 0.7)]
        );
    }

    #[test]
    fn a_long_text_best_of_many_draws_yields_to_a_short_one_it_barely_beats() {
        // Row 7 has four candidate pieces, its best 0.62; row 1 one vector at 0.60.
        let keys = [
            (7, 0.62),
            (7, 0.55),
            (1, 0.60),
            (7, 0.50),
            (7, 0.45),
            (2, 0.30),
            (3, 0.20),
        ];
        let hits = by_row(keys);
        assert_eq!(hits[0].vectors, 4);
        let ranked = discounted(hits, 3);
        assert_eq!(ranked[0], VectorHit::whole(1, 0.60), "{ranked:?}");
        assert_eq!(ranked[1].row, 7);
        // It still reports its cosine; only its rank moved.
        assert_eq!(ranked[1].similarity, 0.62);
        assert!(ranked[1].discount > 0.1 && ranked[1].score() < 0.5);
        // A long text far ahead keeps its place.
        let ranked = discounted(by_row([(7, 0.95), (7, 0.9), (1, 0.6), (2, 0.3)]), 3);
        assert_eq!(ranked[0].row, 7);
    }

    #[test]
    fn ties_and_degenerate_spreads_are_deterministic() {
        let hits = by_row([(5, 0.5), (4, 0.5), (4, 0.5)]);
        // All similarities equal: no spread, no discount; ties by row.
        let ranked = discounted(hits, 5);
        assert_eq!(
            ranked
                .iter()
                .map(|h| (h.row, h.score()))
                .collect::<Vec<_>>(),
            vec![(4, 0.5), (5, 0.5)]
        );
        assert!(discounted(Vec::new(), 3).is_empty());
        // A NaN similarity is no candidate, and spoils no other's discount.
        let ranked = discounted(
            by_row([(1, f32::NAN), (1, 0.2), (2, 0.9), (2, 0.1), (3, f32::NAN)]),
            5,
        );
        assert_eq!(ranked.len(), 2, "{ranked:?}");
        assert!(ranked.iter().all(|h| h.score().is_finite()));
    }
}
