//! A long memory's pieces: every vector it has answers for it, it is
//! returned once with its best one's score, and the pieces go with it when
//! it is updated, deleted or reloaded (exact scan, HNSW graph, a graph
//! saved and restored).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memloop_core::{NewMemory, Scope};
use memloop_store::prelude::*;
use memloop_store::{EmbeddedStore, MemoryUpdate, StoreOptions};

mod common;
use common::{dense, info, vector, DIMS};

fn open(dir: &Path, ann_threshold: usize) -> EmbeddedStore {
    let options = StoreOptions::default().with_ann_threshold(ann_threshold);
    EmbeddedStore::open(dir, info(), options).unwrap()
}

/// `n` short memories (seeds 0..n) and one long one whose first vector is
/// seed 1000 and whose pieces are seeds 1001..=1003.
fn seed(store: &EmbeddedStore, scope: &Scope, n: u64) -> String {
    let short: Vec<(NewMemory, Vec<f32>)> = (0..n)
        .map(|i| (NewMemory::text(format!("short note {i}")), vector(i)))
        .collect();
    store.insert(scope, short).unwrap();
    let mut long = NewMemory::text("a long reply");
    long.pieces = (1001..=1003).map(vector).collect();
    let written = store.insert(scope, vec![(long, vector(1000))]).unwrap();
    written[0].0.id.clone()
}

/// The top hits' texts and scores for a query vector.
fn top(store: &EmbeddedStore, scope: &Scope, q: &[f32], k: usize) -> Vec<(String, f32)> {
    store
        .search(&dense(scope, k), q)
        .unwrap()
        .into_iter()
        .map(|h| (h.record.text, h.scores.vector.unwrap_or(0.0)))
        .collect()
}

fn check_every_piece_answers(store: &EmbeddedStore, scope: &Scope) {
    for s in 1000..=1003 {
        let hits = top(store, scope, &vector(s), 50);
        assert_eq!(hits[0].0, "a long reply", "piece {s}: {hits:?}");
        let times = hits.iter().filter(|(t, _)| t == "a long reply").count();
        assert_eq!(times, 1, "returned once: {hits:?}");
    }
}

#[test]
fn each_piece_finds_its_memory_once_in_an_exact_scan_and_in_a_graph() {
    for (threshold, n) in [(5_000, 40), (100, 400)] {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::user("writer");
        {
            let store = open(dir.path(), threshold);
            seed(&store, &scope, n);
            check_every_piece_answers(&store, &scope);
            let status = store.index_status(&scope).unwrap().unwrap();
            assert_eq!(status.vectors, n as usize + 1, "rows, not vectors");
            assert_eq!(status.hnsw, threshold == 100);
        }
        // Reopened: rebuilt from the rows (exact) or the saved graph restored.
        let store = open(dir.path(), threshold);
        check_every_piece_answers(&store, &scope);
    }
}

#[test]
fn pieces_go_with_their_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), 5_000);
    let scope = Scope::user("writer");
    let id = seed(&store, &scope, 20);
    // An update with a new text and no pieces: the old pieces no longer answer.
    let change = MemoryUpdate {
        text: Some(("a short reply now".into(), vector(2000))),
        ..Default::default()
    };
    store.update("default", &id, change).unwrap();
    let hits = top(&store, &scope, &vector(1002), 50);
    assert!(
        hits.iter().all(|(_, s)| *s < 0.99),
        "an old piece still answers: {hits:?}"
    );
    assert_eq!(
        top(&store, &scope, &vector(2000), 1)[0].0,
        "a short reply now"
    );
    // An update that brings pieces: they answer.
    let change = MemoryUpdate {
        text: Some(("a long reply again".into(), vector(3000))),
        pieces: vec![vector(3001)],
        ..Default::default()
    };
    store.update("default", &id, change).unwrap();
    assert_eq!(
        top(&store, &scope, &vector(3001), 1)[0].0,
        "a long reply again"
    );
    // Deleted: none of its vectors answers.
    store.delete("default", &id, None).unwrap();
    for s in [3000, 3001] {
        let hits = top(&store, &scope, &vector(s), 50);
        assert!(
            hits.iter().all(|(t, _)| t != "a long reply again"),
            "{hits:?}"
        );
    }
}

#[test]
fn too_many_pieces_or_a_wrong_width_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), 5_000);
    let scope = Scope::user("writer");
    let mut wide = NewMemory::text("wrong width");
    wide.pieces = vec![vec![0.1; DIMS + 1]];
    let err = store.insert(&scope, vec![(wide, vector(1))]).unwrap_err();
    assert!(err.to_string().contains("dimensions"), "{err}");
    let mut many = NewMemory::text("too many");
    many.pieces = vec![vector(2); memloop_core::MAX_PIECES + 1];
    let err = store.insert(&scope, vec![(many, vector(1))]).unwrap_err();
    assert!(err.to_string().contains("piece"), "{err}");
    assert!(top(&store, &scope, &vector(1), 5).is_empty());
}
