//! memloop's measuring tools: `memloop bench` (speed figures on a
//! deterministic synthetic corpus, docs/benchmarks.md) and `memloop eval`
//! (retrieval and gate quality on LoCoMo, LongMemEval and the synthetic
//! long conversations, docs/retrieval.md). The `memloop` binary parses
//! their arguments and calls [`bench::run`] and [`eval::run`]; they reach
//! the parts they time (kernels, indexes) through the parts' own crates,
//! so the library does not re-export them.
//!
//! `bench` and `eval` share the synthetic corpora (`corpus`, `longcorpus`)
//! and a store per run (`run_store`); `eval` does not depend on `bench`.

pub mod bench;
mod corpus;
pub mod eval;
mod local_model;
mod longcorpus;
pub mod output;
mod run_store;
