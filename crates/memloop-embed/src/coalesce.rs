//! Coalescing of concurrent single-text embeddings into batches.
//!
//! A server answers many searches at once, each needing one query vector.
//! Embedded one at a time, every text pays for streaming the model's weights
//! through the cache; embedded together, they share that cost (on 2 cores a
//! batch of short texts runs several times faster per text). So a caller that
//! finds the model busy queues its text, and whoever runs next takes every
//! queued text as one batch. A lone caller runs at once: no timer, no added
//! latency when there is no contention. Nothing is cached: every text is
//! embedded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use memloop_core::{Embedder, EmbedderInfo, Error, Result};

/// Wraps an embedder; batches of more than one text pass straight through.
pub struct Coalescing {
    inner: Arc<dyn Embedder>,
    max_batch: usize,
    state: Mutex<State>,
    finished: Condvar,
}

/// A text waiting, and whether it is a search query (a batch holds texts
/// of one kind: a model may embed queries differently).
struct Queued {
    id: u64,
    query: bool,
    text: String,
}

#[derive(Default)]
struct State {
    next_id: u64,
    queue: VecDeque<Queued>,
    results: HashMap<u64, Result<Vec<f32>>>,
    running: bool,
}

impl Coalescing {
    /// The most texts one coalesced batch holds.
    pub const DEFAULT_MAX_BATCH: usize = 64;

    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Coalescing {
            inner,
            max_batch: Self::DEFAULT_MAX_BATCH,
            state: Mutex::new(State::default()),
            finished: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn embed_one(&self, text: &str, query: bool) -> Result<Vec<f32>> {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.queue.push_back(Queued {
            id,
            query,
            text: text.to_string(),
        });
        loop {
            if let Some(result) = state.results.remove(&id) {
                return result;
            }
            if state.running {
                state = self.finished.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Nobody is embedding: run what is queued (our text among it,
            // unless more than a batch waits ahead of it, or it is of the
            // other kind than the oldest text's).
            state.running = true;
            let batch = take_batch(&mut state.queue, self.max_batch);
            drop(state);
            let mut run = Running {
                owner: self,
                own: id,
                ids: batch.iter().map(|q| q.id).collect(),
                results: None,
            };
            run.results = Some(self.embed_all(&batch));
            drop(run);
            state = self.lock();
        }
    }

    /// One vector or one error per text. A failed batch is retried text by
    /// text, so one bad input does not fail the others.
    fn embed_all(&self, batch: &[Queued]) -> Vec<Result<Vec<f32>>> {
        let texts: Vec<&str> = batch.iter().map(|q| q.text.as_str()).collect();
        let query = batch.first().is_some_and(|q| q.query);
        let embedded = if query {
            self.inner.embed_queries(&texts)
        } else {
            self.inner.embed_batch(&texts)
        };
        match embedded {
            Ok(vectors) if vectors.len() == texts.len() => vectors.into_iter().map(Ok).collect(),
            Ok(vectors) => {
                let message = format!(
                    "the embedder returned {} vectors for {} texts",
                    vectors.len(),
                    texts.len()
                );
                texts
                    .iter()
                    .map(|_| Err(Error::Embedding(message.clone())))
                    .collect()
            }
            Err(e) if texts.len() == 1 => vec![Err(e)],
            Err(_) if query => texts.iter().map(|t| self.inner.embed_query(t)).collect(),
            Err(_) => texts.iter().map(|t| self.inner.embed(t)).collect(),
        }
    }
}

/// The next batch: up to `max` texts of the oldest text's kind (query or
/// memory), in their order, wherever they wait; texts of the other kind
/// keep their places for the batch after. Taking only the texts of the
/// front's kind up to the first of the other kind made every batch a
/// single text when searches and writes arrived interleaved.
fn take_batch(queue: &mut VecDeque<Queued>, max: usize) -> Vec<Queued> {
    let kind = queue.front().is_some_and(|q| q.query);
    let mut batch = Vec::new();
    let mut rest = VecDeque::with_capacity(queue.len());
    for q in queue.drain(..) {
        if q.query == kind && batch.len() < max {
            batch.push(q);
        } else {
            rest.push_back(q);
        }
    }
    *queue = rest;
    batch
}

/// Hands a batch's results to their callers and lets the next batch run,
/// also when the embedder panicked (its callers then get an error instead
/// of waiting for ever).
struct Running<'a> {
    owner: &'a Coalescing,
    /// The id of the caller running the batch: when it unwinds, nobody is
    /// left to collect its result.
    own: u64,
    ids: Vec<u64>,
    results: Option<Vec<Result<Vec<f32>>>>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut state = self.owner.lock();
        let mut results = self.results.take().unwrap_or_default().into_iter();
        let unwinding = std::thread::panicking();
        for id in &self.ids {
            if unwinding && *id == self.own {
                continue;
            }
            let result = results.next().unwrap_or_else(|| {
                Err(Error::Internal(
                    "the embedder stopped before finishing a batch".into(),
                ))
            });
            state.results.insert(*id, result);
        }
        state.running = false;
        drop(state);
        self.owner.finished.notify_all();
    }
}

impl Embedder for Coalescing {
    fn info(&self) -> EmbedderInfo {
        self.inner.info()
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        match texts {
            [one] => Ok(vec![self.embed_one(one, false)?]),
            _ => self.inner.embed_batch(texts),
        }
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        match texts {
            [one] => Ok(vec![self.embed_one(one, true)?]),
            _ => self.inner.embed_queries(texts),
        }
    }

    fn embed_pieces(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.inner.embed_pieces(texts)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Vectors that encode the text's length; counts the batches it ran
    /// and fails on texts containing "bad".
    struct Slow {
        batches: AtomicUsize,
        largest: AtomicUsize,
    }

    impl Embedder for Slow {
        fn info(&self) -> EmbedderInfo {
            EmbedderInfo {
                model_id: "slow".into(),
                dimensions: 2,
            }
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            self.batches.fetch_add(1, Ordering::SeqCst);
            self.largest.fetch_max(texts.len(), Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            if texts.iter().any(|t| t.contains("bad")) {
                return Err(Error::Embedding("bad text".into()));
            }
            if texts.iter().any(|t| t.contains("boom")) {
                panic!("the model fell over");
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
        /// A query's second value is 2: which of the two ran shows.
        fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            let mut out = self.embed_batch(texts)?;
            out.iter_mut().for_each(|v| v[1] = 2.0);
            Ok(out)
        }
    }

    fn slow() -> Arc<Slow> {
        Arc::new(Slow {
            batches: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
        })
    }

    #[test]
    fn concurrent_texts_share_batches_and_each_gets_its_own_vector() {
        let inner = slow();
        let c = Arc::new(Coalescing::new(inner.clone()));
        let handles: Vec<_> = (0..24)
            .map(|i| {
                let c = c.clone();
                std::thread::spawn(move || (i, c.embed(&"x".repeat(i + 1)).unwrap()))
            })
            .collect();
        for h in handles {
            let (i, v) = h.join().unwrap();
            assert_eq!(v, vec![(i + 1) as f32, 1.0]);
        }
        let batches = inner.batches.load(Ordering::SeqCst);
        assert!(batches < 24, "24 texts took {batches} batches");
        assert!(inner.largest.load(Ordering::SeqCst) > 1);
    }

    #[test]
    fn queries_and_memories_queued_together_are_each_embedded_as_what_they_are() {
        let inner = slow();
        let c = Arc::new(Coalescing::new(inner.clone()));
        let handles: Vec<_> = (0..24)
            .map(|i| {
                let c = c.clone();
                std::thread::spawn(move || {
                    let text = "x".repeat(i + 1);
                    let v = if i % 2 == 0 {
                        c.embed_query(&text)
                    } else {
                        c.embed(&text)
                    };
                    (i, v.unwrap())
                })
            })
            .collect();
        for h in handles {
            let (i, v) = h.join().unwrap();
            let kind = if i % 2 == 0 { 2.0 } else { 1.0 };
            assert_eq!(v, vec![(i + 1) as f32, kind], "text {i}");
        }
        assert!(inner.batches.load(Ordering::SeqCst) < 24);
    }

    /// Interleaved queries and memories: a batch takes the front's kind
    /// from anywhere in the queue, up to the batch size, and the others
    /// keep their order.
    #[test]
    fn a_batch_takes_its_kind_past_texts_of_the_other() {
        let mut queue: VecDeque<Queued> = (0..7)
            .map(|id| Queued {
                id,
                query: id % 2 == 0,
                text: format!("t{id}"),
            })
            .collect();
        let ids = |b: &[Queued]| b.iter().map(|q| q.id).collect::<Vec<_>>();
        assert_eq!(ids(&take_batch(&mut queue, 3)), [0, 2, 4]);
        assert_eq!(ids(&take_batch(&mut queue, 3)), [1, 3, 5]);
        assert_eq!(ids(&take_batch(&mut queue, 3)), [6]);
        assert!(take_batch(&mut queue, 3).is_empty());
    }

    #[test]
    fn a_lone_text_runs_at_once_and_batches_pass_through() {
        let inner = slow();
        let c = Coalescing::new(inner.clone());
        assert_eq!(c.embed("abc").unwrap(), vec![3.0, 1.0]);
        assert_eq!(c.embed_batch(&["a", "bb"]).unwrap().len(), 2);
        assert_eq!(inner.batches.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn one_bad_text_fails_alone() {
        let inner = slow();
        let c = Arc::new(Coalescing::new(inner));
        let handles: Vec<_> = ["good one", "bad one", "good two", "good three"]
            .into_iter()
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || (t, c.embed(t)))
            })
            .collect();
        for h in handles {
            let (t, r) = h.join().unwrap();
            assert_eq!(r.is_ok(), !t.contains("bad"), "{t}: {r:?}");
        }
    }

    #[test]
    fn a_panicking_model_releases_the_callers() {
        let inner = slow();
        let c = Arc::new(Coalescing::new(inner));
        let boom = {
            let c = c.clone();
            std::thread::spawn(move || c.embed("boom"))
        };
        assert!(boom.join().is_err(), "the panic reaches its own caller");
        // The next caller is not stuck behind a batch that never finished.
        assert_eq!(c.embed("fine").unwrap(), vec![4.0, 1.0]);
    }
}
