use std::sync::Arc;
use std::time::Duration;

use memloop_core::{Kind, MemoryRecord, Provenance, Scope, SearchHit, SignalScores};

use super::*;

/// Answers with a fixed list of pairs, after an optional delay.
struct Scripted(Vec<(usize, f32)>, Duration);

impl Reranker for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }
    fn scores(&self, _: &str, _: &[String]) -> Result<Vec<(usize, f32)>> {
        std::thread::sleep(self.1);
        Ok(self.0.clone())
    }
}

fn hits(n: usize) -> Vec<SearchHit> {
    (0..n)
        .map(|i| SearchHit {
            record: MemoryRecord {
                id: format!("m{i}"),
                text: format!("memory {i}"),
                context: None,
                kind: Kind::Fact,
                scope: Scope::user("u"),
                metadata: serde_json::json!({}),
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
            },
            score: 1.0 - i as f32 / 10.0,
            scores: SignalScores::default(),
            superseded_by: None,
        })
        .collect()
}

fn stage(pairs: Vec<(usize, f32)>, delay_ms: u64) -> RerankStage {
    let r = Arc::new(Scripted(pairs, Duration::from_millis(delay_ms)));
    RerankStage::new(r, 3, Duration::from_millis(200)).unwrap()
}

fn ids(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.record.id.as_str()).collect()
}

#[test]
fn the_top_n_take_the_rerankers_order_and_the_scores_of_their_places() {
    let (out, report) = stage(vec![(0, 0.1), (1, 0.2), (2, 0.9)], 0).apply("q", hits(5), 3);
    assert_eq!(report.status, RerankStatus::Reranked);
    assert_eq!(report.candidates, 3);
    assert_eq!(ids(&out), ["m2", "m1", "m0", "m3", "m4"]);
    let s: Vec<f32> = out.iter().map(|h| h.score).collect();
    assert!(s.windows(2).all(|w| w[0] >= w[1]), "{s:?}");
    let r = out[0].scores.rerank.unwrap();
    assert_eq!((r.score, r.fused_position, r.position), (Some(0.9), 3, 1));
    assert!(out[3].scores.rerank.is_none(), "beyond top_n: not reranked");
}

#[test]
fn candidates_left_out_follow_in_fused_order() {
    let (out, _) = stage(vec![(2, 0.5)], 0).apply("q", hits(4), 3);
    assert_eq!(ids(&out), ["m2", "m0", "m1", "m3"]);
    assert_eq!(out[1].scores.rerank.unwrap().score, None);
    assert_eq!(out[1].scores.rerank.unwrap().position, 2);
}

#[test]
fn unknown_repeated_or_nan_answers_leave_the_fused_order() {
    for pairs in [
        vec![],
        vec![(0, 0.1), (7, 0.9)],
        vec![(1, 0.1), (1, 0.9)],
        vec![(0, f32::NAN)],
    ] {
        let (out, report) = stage(pairs.clone(), 0).apply("q", hits(4), 3);
        assert_eq!(report.status, RerankStatus::Failed, "{pairs:?}");
        assert!(report.error.is_some());
        assert_eq!(ids(&out), ["m0", "m1", "m2", "m3"]);
        assert!(out.iter().all(|h| h.scores.rerank.is_none()));
    }
}

#[test]
fn a_slow_reranker_times_out_and_the_fused_order_stands() {
    let (out, report) = stage(vec![(2, 0.9)], 2_000).apply("q", hits(3), 3);
    assert_eq!(report.status, RerankStatus::TimedOut);
    assert!(report.latency_us < 1_500_000, "{}", report.latency_us);
    assert_eq!(ids(&out), ["m0", "m1", "m2"]);
}

#[test]
fn bounds_are_checked() {
    let r: Arc<dyn Reranker> = Arc::new(Scripted(vec![], Duration::ZERO));
    assert!(RerankStage::new(r.clone(), 0, Duration::from_millis(5)).is_err());
    assert!(RerankStage::new(r.clone(), MAX_RERANK_TOP_N + 1, Duration::from_millis(5)).is_err());
    assert!(RerankStage::new(r, 5, Duration::ZERO).is_err());
}
