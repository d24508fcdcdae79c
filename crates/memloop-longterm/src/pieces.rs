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
//! lead (its best is high, not merely the best of many); a memory of one
//! window is never touched, so a store without long texts ranks as before.
//!
//! What counts is what the vector search found: the candidate vectors (the
//! `2k` nearest keys for `k` memories), so an exact scan, a graph walk and
//! PostgreSQL's two index walks all discount alike.

/// Expected maximum of n independent standard normal draws, n = 1..=16
/// (numerical integration); beyond, `sqrt(2 ln n) - 0.6` is within 0.06.
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
    for (row, sim) in keys {
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

/// The `k` best rows, each scored by its best similarity less
/// `σ × expected_max(vectors)`, σ being the standard deviation of the
/// candidates' best similarities; best first, ties by row. With no row of
/// several vectors the scores are the similarities themselves.
pub fn discounted(mut hits: Vec<PieceHit>, k: usize) -> Vec<(i64, f32)> {
    let n = hits.len() as f32;
    if hits.iter().any(|h| h.vectors > 1) && n > 1.0 {
        let mean = hits.iter().map(|h| h.best).sum::<f32>() / n;
        let var = hits.iter().map(|h| (h.best - mean).powi(2)).sum::<f32>() / n;
        let sigma = var.sqrt();
        if sigma.is_finite() {
            for h in &mut hits {
                h.best -= sigma * expected_max(h.vectors);
            }
        }
    }
    hits.sort_by(|a, b| b.best.total_cmp(&a.best).then(a.row.cmp(&b.row)));
    hits.truncate(k);
    hits.into_iter().map(|h| (h.row, h.best)).collect()
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
        assert_eq!(discounted(hits, 2), vec![(1, 0.9), (2, 0.7)]);
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
        assert_eq!(ranked[0], (1, 0.60), "{ranked:?}");
        assert_eq!(ranked[1].0, 7);
        // A long text far ahead keeps its place.
        let ranked = discounted(by_row([(7, 0.95), (7, 0.9), (1, 0.6), (2, 0.3)]), 3);
        assert_eq!(ranked[0].0, 7);
    }

    #[test]
    fn ties_and_degenerate_spreads_are_deterministic() {
        let hits = by_row([(5, 0.5), (4, 0.5), (4, 0.5)]);
        // All similarities equal: no spread, no discount; ties by row.
        assert_eq!(discounted(hits, 5), vec![(4, 0.5), (5, 0.5)]);
        assert!(discounted(Vec::new(), 3).is_empty());
        let nan = discounted(by_row([(1, f32::NAN), (1, 0.2), (2, 0.1)]), 2);
        assert_eq!(nan.len(), 2);
    }
}
