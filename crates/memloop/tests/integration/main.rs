//! Integration tests of the public API: one test binary, a module per theme.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api;
mod bounded;
mod crash;
mod forgetting;
mod get;
mod graph;
mod index;
mod nomic;
mod pipeline;
mod procedures;
mod props;
mod rerank;
mod sessions;
mod sides;
mod stale;
mod stub;
mod supersession;
mod sweeper;
mod turn;

use std::sync::{Arc, OnceLock};

use memloop::{Embedder, LocalEmbedder, Memory, StoreOptions};

/// The real local model, loaded once per test binary.
pub fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<LocalEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(LocalEmbedder::locate_and_load(None).expect("run scripts/fetch-model.sh"))
    })
    .clone()
}

pub fn open(dir: &std::path::Path) -> Memory {
    Memory::with_embedder(dir, embedder(), StoreOptions::default()).unwrap()
}

pub fn open_with(dir: &std::path::Path, options: StoreOptions) -> Memory {
    Memory::with_embedder(dir, embedder(), options).unwrap()
}
