//! Ranking metrics over the turn ids a search returned, best first.

use std::collections::HashSet;

pub const KS: [usize; 5] = [1, 5, 10, 25, 50];

/// Fraction of the evidence turns found in the first k (the LoCoMo paper's recall@k).
pub fn recall_at(ranked: &[String], evidence: &HashSet<String>, k: usize) -> f64 {
    if evidence.is_empty() {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| evidence.contains(*id))
        .count();
    found as f64 / evidence.len() as f64
}

/// 1 / rank of the first evidence turn (0 when none was returned).
pub fn reciprocal_rank(ranked: &[String], evidence: &HashSet<String>) -> f64 {
    ranked
        .iter()
        .position(|id| evidence.contains(id))
        .map_or(0.0, |p| 1.0 / (p as f64 + 1.0))
}

/// NDCG@k with binary relevance.
pub fn ndcg_at(ranked: &[String], evidence: &HashSet<String>, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| evidence.contains(*id))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..evidence.len().min(k))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    if ideal == 0.0 {
        0.0
    } else {
        dcg / ideal
    }
}

/// Turn ids in rank order, each once (several memories may come from one turn).
pub fn dedup_in_order(ids: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.into_iter()
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn set(v: &[&str]) -> HashSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn known_ranks_give_known_metrics() {
        // Evidence at ranks 2 and 7 (1-based) of a ranking of 10.
        let ranked = ids(&["a", "E1", "b", "c", "d", "e", "E2", "f", "g", "h"]);
        let ev = set(&["E1", "E2"]);
        assert_eq!(recall_at(&ranked, &ev, 1), 0.0);
        assert_eq!(recall_at(&ranked, &ev, 5), 0.5);
        assert_eq!(recall_at(&ranked, &ev, 10), 1.0);
        assert_eq!(reciprocal_rank(&ranked, &ev), 0.5);
        let want = (1.0 / 3f64.log2() + 1.0 / 8f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&ranked, &ev, 10) - want).abs() < 1e-12);
        assert_eq!(ndcg_at(&ranked, &ev, 1), 0.0);
        // Nothing found.
        assert_eq!(reciprocal_rank(&ids(&["x"]), &ev), 0.0);
        assert_eq!(recall_at(&ranked, &set(&[]), 5), 0.0);
    }

    #[test]
    fn duplicates_count_once() {
        let d = dedup_in_order(ids(&["a", "b", "a", "c", "b"]));
        assert_eq!(d, ids(&["a", "b", "c"]));
    }
}
