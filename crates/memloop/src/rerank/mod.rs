//! The reranking stage (docs/retrieval.md, "Reranking"): after fusion, a
//! model the user runs reorders the top N hits. The engine ships no
//! cross-encoder; it speaks to one over HTTP (`http.rs`: the
//! text-embeddings-inference and Cohere wire formats) or asks the
//! configured chat model for a listwise order (`llm.rs`).
//!
//! A reranker never fails a search: when it is slow, down or answers
//! nonsense, the fused order stands and the report says why.

mod config;
mod http;
mod llm;

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use memloop_core::{Error, RerankScores, Result, SearchHit};
use serde::{Deserialize, Serialize};

pub use config::{RerankConfig, RerankFormat, RerankKind};
pub use http::HttpReranker;
pub use llm::LlmReranker;

/// The most hits one reranking reorders (a per-query `top_n` above it is
/// refused): a cross-encoder's cost grows with each, and a listwise prompt
/// must stay short.
pub const MAX_RERANK_TOP_N: usize = 200;

/// A model that scores candidate texts against a query.
pub trait Reranker: Send + Sync {
    /// What the trace calls it ("http tei http://127.0.0.1:8080/rerank").
    fn name(&self) -> String;

    /// `(index into texts, score)` pairs, higher scores more relevant. A
    /// reranker may leave candidates out (they keep their fused order after
    /// the scored ones); an index outside `texts`, a repeated index or a
    /// score that is not a number makes the whole answer void.
    fn scores(&self, query: &str, texts: &[String]) -> Result<Vec<(usize, f32)>>;
}

/// A reranker with its bounds: how many fused hits it reorders and how
/// long a search waits for it.
#[derive(Clone)]
pub struct RerankStage {
    reranker: Arc<dyn Reranker>,
    top_n: usize,
    timeout: Duration,
}

impl std::fmt::Debug for RerankStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RerankStage")
            .field("reranker", &self.reranker.name())
            .field("top_n", &self.top_n)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// How a reranking went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankStatus {
    /// The top N are in the reranker's order.
    Reranked,
    /// No answer within the timeout: the fused order stands.
    TimedOut,
    /// An error or an answer that could not be used: the fused order stands.
    Failed,
}

/// What the reranking stage did in one search: in a search's answer and in
/// a turn's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankReport {
    pub reranker: String,
    /// Fused hits sent to it.
    pub candidates: usize,
    pub status: RerankStatus,
    /// Why the fused order stands (with `timed_out` and `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Time the search spent on it (at most about the timeout).
    pub latency_us: u64,
}

impl RerankStage {
    /// `top_n` in `1..=MAX_RERANK_TOP_N`, `timeout` at least a millisecond.
    pub fn new(
        reranker: Arc<dyn Reranker>,
        top_n: usize,
        timeout: Duration,
    ) -> Result<RerankStage> {
        check_top_n(top_n, "top_n")?;
        if timeout < Duration::from_millis(1) {
            return Err(Error::invalid(
                "the reranker's timeout must be at least 1 ms: set [rerank] timeout_ms",
            ));
        }
        Ok(RerankStage {
            reranker,
            top_n,
            timeout,
        })
    }

    /// Fused hits reordered by default.
    pub fn top_n(&self) -> usize {
        self.top_n
    }

    pub fn name(&self) -> String {
        self.reranker.name()
    }

    /// `hits` (best first) with their first `top_n` in the reranker's
    /// order, or as they were if it fails or does not answer in time. A
    /// reordered hit takes the fused score of its new position, so scores
    /// still fall down the list and `min_score` means what it meant; its
    /// `scores.rerank` holds the reranker's score and both positions.
    pub fn apply(
        &self,
        query: &str,
        mut hits: Vec<SearchHit>,
        top_n: usize,
    ) -> (Vec<SearchHit>, RerankReport) {
        let n = top_n.min(hits.len());
        let started = Instant::now();
        let mut report = RerankReport {
            reranker: self.reranker.name(),
            candidates: n,
            status: RerankStatus::Reranked,
            error: None,
            latency_us: 0,
        };
        if n > 0 {
            let texts = hits[..n].iter().map(|h| h.record.text.clone()).collect();
            let answer = self
                .scores_within(query, texts)
                .and_then(|pairs| order(pairs, n));
            match answer {
                Ok(order) => reorder(&mut hits, &order),
                Err(Outcome(status, e)) => {
                    report.status = status;
                    report.error = Some(e);
                    tracing::warn!(
                        reranker = %report.reranker,
                        error = report.error.as_deref().unwrap_or_default(),
                        "reranking skipped: the fused order stands"
                    );
                }
            }
        }
        report.latency_us = started.elapsed().as_micros() as u64;
        (hits, report)
    }

    /// The reranker's answer, or `TimedOut` after the timeout: it runs on
    /// a thread of its own, so a reranker that hangs (a chat model with a
    /// minute's timeout, a socket that never answers) costs a search only
    /// the stage's timeout. The thread ends when the call does.
    fn scores_within(
        &self,
        query: &str,
        texts: Vec<String>,
    ) -> std::result::Result<Vec<(usize, f32)>, Outcome> {
        let (tx, rx) = mpsc::sync_channel(1);
        let (reranker, query) = (self.reranker.clone(), query.to_string());
        std::thread::Builder::new()
            .name("memloop-rerank".into())
            .spawn(move || {
                let _ = tx.send(reranker.scores(&query, &texts));
            })
            .map_err(|e| Outcome::failed(format!("could not start the reranker's call: {e}")))?;
        match rx.recv_timeout(self.timeout) {
            Ok(Ok(pairs)) => Ok(pairs),
            Ok(Err(e)) => Err(Outcome::failed(e.to_string())),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(Outcome(
                RerankStatus::TimedOut,
                format!("no answer within {} ms", self.timeout.as_millis()),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(Outcome::failed(
                "the reranker's call ended without an answer",
            )),
        }
    }
}

/// Refuses a reranking depth outside `1..=MAX_RERANK_TOP_N`.
pub(crate) fn check_top_n(top_n: usize, what: &str) -> Result<()> {
    if (1..=MAX_RERANK_TOP_N).contains(&top_n) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "the reranker's {what} {top_n} is outside 1..={MAX_RERANK_TOP_N}"
        )))
    }
}

/// Why the fused order stands.
struct Outcome(RerankStatus, String);

impl Outcome {
    fn failed(e: impl Into<String>) -> Outcome {
        Outcome(RerankStatus::Failed, e.into())
    }
}

/// The new order of `n` candidates from the reranker's pairs: scored ones
/// by score (ties in fused order), then the unscored in fused order; each
/// entry is (fused index, reranker score).
fn order(
    pairs: Vec<(usize, f32)>,
    n: usize,
) -> std::result::Result<Vec<(usize, Option<f32>)>, Outcome> {
    if pairs.is_empty() {
        return Err(Outcome::failed(
            "the reranker scored none of the candidates",
        ));
    }
    let mut seen = vec![false; n];
    for &(i, s) in &pairs {
        if i >= n {
            return Err(Outcome::failed(format!(
                "the reranker answered index {i}, but only {n} candidates were sent"
            )));
        }
        if std::mem::replace(&mut seen[i], true) {
            return Err(Outcome::failed(format!(
                "the reranker answered index {i} twice"
            )));
        }
        if !s.is_finite() {
            return Err(Outcome::failed(format!(
                "the reranker scored index {i} {s}, which is not a number"
            )));
        }
    }
    let mut scored = pairs;
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out: Vec<(usize, Option<f32>)> =
        scored.into_iter().map(|(i, s)| (i, Some(s))).collect();
    out.extend((0..n).filter(|&i| !seen[i]).map(|i| (i, None)));
    Ok(out)
}

/// Puts the first `order.len()` hits in `order`, each taking the score of
/// the place it lands in.
fn reorder(hits: &mut [SearchHit], order: &[(usize, Option<f32>)]) {
    let n = order.len();
    let scores: Vec<f32> = hits[..n].iter().map(|h| h.score).collect();
    let old: Vec<SearchHit> = hits[..n].to_vec();
    for (position, &(fused, score)) in order.iter().enumerate() {
        let mut h = old[fused].clone();
        h.score = scores[position];
        h.scores.rerank = Some(RerankScores {
            score,
            fused_position: fused + 1,
            position: position + 1,
        });
        hits[position] = h;
    }
}

#[cfg(test)]
mod tests;
