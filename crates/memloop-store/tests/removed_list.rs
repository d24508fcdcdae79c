//! A saved graph that has only lost rows since it was saved whole is saved
//! as the list of those rows (`index/<hash>.removed`), not written again;
//! a reopen takes them out; a graph saved whole again drops the list; and a
//! list that no longer matches its graph file is not trusted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use memloop_core::time::Clock;
use memloop_core::{NewMemory, Scope};
use memloop_store::prelude::*;
use memloop_store::{EmbeddedStore, StoreOptions};

mod common;
use common::{dense, info, vector};

fn open(dir: &Path) -> EmbeddedStore {
    let options = StoreOptions::default().with_ann_threshold(300);
    EmbeddedStore::open(dir, info(), options).unwrap()
}

fn saved(dir: &Path, extension: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir.join("index"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == extension))
}

/// What tells one write of the graph file from another.
fn identity(path: &Path) -> (u64, std::time::SystemTime) {
    let m = std::fs::metadata(path).unwrap();
    (m.len(), m.modified().unwrap())
}

const N: u64 = 600;

/// Every seed's note is found by its own vector, except the deleted ones,
/// which are found by none.
fn assert_holds(store: &EmbeddedStore, scope: &Scope, deleted: impl Fn(u64) -> bool) {
    let mut first = 0;
    for i in 0..N {
        let hits = store.search(&dense(scope, 5), &vector(i)).unwrap();
        let own = format!("note number {i}");
        let place = hits.iter().position(|h| h.record.text == own);
        if deleted(i) {
            assert_eq!(place, None, "{own} was deleted but is found");
        } else {
            assert!(place.is_some(), "{own} is not in the first five");
            first += u64::from(place == Some(0));
        }
    }
    assert!(
        first * 100 >= (N - N / 3) * 95,
        "only {first} found themselves first"
    );
}

/// The gc tests' start time.
const T0: i64 = 1_767_225_600_000;

/// `open`'s options on a clock the test moves.
fn clocked(clock: &Clock) -> StoreOptions {
    StoreOptions::default()
        .with_ann_threshold(300)
        .with_clock(clock.clone())
}

/// The N notes, those `expiring` names expiring just after T0.
fn notes(expiring: impl Fn(u64) -> bool) -> Vec<(NewMemory, Vec<f32>)> {
    (0..N)
        .map(|i| {
            let mut m = NewMemory::text(format!("note number {i}"));
            m.expires_at = expiring(i).then_some(T0 + 1);
            (m, vector(i))
        })
        .collect()
}

#[test]
fn removals_alone_are_saved_as_a_list_and_taken_out_at_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let scope = Scope::user("lister");
    let ids: Vec<String> = {
        let store = open(dir.path());
        let batch = (0..N)
            .map(|i| (NewMemory::text(format!("note number {i}")), vector(i)))
            .collect();
        let ids = store.insert(&scope, batch).unwrap();
        ids.into_iter().map(|(r, _)| r.id).collect()
    };
    let graph = saved(dir.path(), "usearch").expect("the graph is saved at close");
    let whole = identity(&graph);
    assert!(saved(dir.path(), "removed").is_none());

    let deleted = |i: u64| i.is_multiple_of(3);
    {
        let store = open(dir.path());
        // Loaded, so the deletes reach the graph in memory.
        store.search(&dense(&scope, 5), &vector(1)).unwrap();
        for i in (0..N).filter(|&i| deleted(i)) {
            store.delete("default", &ids[i as usize], None).unwrap();
        }
        store.flush().unwrap();
        assert_eq!(
            identity(&graph),
            whole,
            "the graph was written again for removals"
        );
        assert!(saved(dir.path(), "removed").is_some());
        // A crash: nothing more is saved.
        std::mem::forget(store);
    }
    let store = open(dir.path());
    assert_holds(&store, &scope, deleted);
    let status = store.index_status(&scope).unwrap().unwrap();
    assert!(status.restored);
    // Searches would skip a deleted row the graph still held: count them.
    let kept = (0..N).filter(|&i| !deleted(i)).count();
    assert_eq!(status.keys, kept, "the listed rows are still in the graph");
    drop(store);

    // Another process saving the graph whole (here: a file rewritten with
    // the same bytes) leaves the list naming a file that is gone: the
    // saved graph is not used, and the rows say what is current.
    let bytes = std::fs::read(&graph).unwrap();
    std::fs::remove_file(&graph).unwrap();
    std::fs::write(&graph, bytes).unwrap();
    let store = open(dir.path());
    assert_holds(&store, &scope, deleted);
    assert!(!store.index_status(&scope).unwrap().unwrap().restored);
    // Built from the rows, the graph is saved whole at close, the list gone.
    drop(store);
    assert!(saved(dir.path(), "removed").is_none());

    // A row added after removals: saved whole.
    let store = open(dir.path());
    store.search(&dense(&scope, 5), &vector(1)).unwrap();
    store.delete("default", &ids[1], None).unwrap();
    store.flush().unwrap();
    assert!(saved(dir.path(), "removed").is_some());
    let listed = identity(&graph);
    store
        .insert(&scope, vec![(NewMemory::text("one more"), vector(N + 1))])
        .unwrap();
    store.flush().unwrap();
    assert_ne!(identity(&graph), listed);
    assert!(saved(dir.path(), "removed").is_none());
    drop(store);
    let store = open(dir.path());
    assert_holds(&store, &scope, |i| deleted(i) || i == 1);
    let hits = store.search(&dense(&scope, 1), &vector(N + 1)).unwrap();
    assert_eq!(hits[0].record.text, "one more");
}

/// gc on a partition this handle never loaded: when only its expired rows
/// changed since its graph was saved, they are listed without reading or
/// writing the graph; when a row was added since, the graph is restored,
/// cut and written whole. Either way a reopen holds exactly the live rows.
#[test]
fn gc_lists_an_unloaded_partitions_expired_rows_without_reading_its_graph() {
    for added_since in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::manual(T0);
        let scope = Scope::user("expirer");
        let expiring = |i: u64| i.is_multiple_of(4);
        {
            let store = EmbeddedStore::open(dir.path(), info(), clocked(&clock)).unwrap();
            store.insert(&scope, notes(expiring)).unwrap();
        }
        let graph = saved(dir.path(), "usearch").unwrap();
        let whole = identity(&graph);
        {
            let store = EmbeddedStore::open(dir.path(), info(), clocked(&clock)).unwrap();
            if added_since {
                let one = vec![(NewMemory::text("one more"), vector(N + 1))];
                store.insert(&scope, one).unwrap();
            }
            clock.advance(1).unwrap();
            assert!(store.index_status(&scope).unwrap().is_none(), "loaded");
            let report = store.expire().unwrap();
            assert_eq!(report.memories_deleted as u64, N / 4);
            assert!(
                store.index_status(&scope).unwrap().is_none(),
                "gc loaded it"
            );
            assert_eq!(identity(&graph) == whole, !added_since);
            assert_eq!(saved(dir.path(), "removed").is_some(), !added_since);
            std::mem::forget(store);
        }
        let store = EmbeddedStore::open(dir.path(), info(), clocked(&clock)).unwrap();
        assert_holds(&store, &scope, expiring);
        let status = store.index_status(&scope).unwrap().unwrap();
        let kept = (0..N).filter(|&i| !expiring(i)).count() + usize::from(added_since);
        assert_eq!(status.keys, kept, "added since: {added_since}");
    }
}

/// gc writes no graph that no file holds: a partition this process built
/// and never saved keeps its graph in memory until a flush saves it. A
/// crash before that leaves the rows to build it from, without gc's.
#[test]
fn gc_writes_no_graph_that_was_never_saved() {
    for flushed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::manual(T0);
        let scope = Scope::user("never-saved");
        let expiring = |i: u64| i.is_multiple_of(3);
        let kept = (0..N).filter(|&i| !expiring(i)).count();
        let store = EmbeddedStore::open(dir.path(), info(), clocked(&clock)).unwrap();
        store.insert(&scope, notes(expiring)).unwrap();
        assert_holds(&store, &scope, |_| false);
        clock.advance(1).unwrap();
        let report = store.expire().unwrap();
        assert_eq!(report.memories_deleted, N as usize - kept);
        assert_eq!(saved(dir.path(), "usearch"), None, "gc saved the graph");
        assert_eq!(saved(dir.path(), "json"), None);
        let status = store.index_status(&scope).unwrap().unwrap();
        assert_eq!(status.keys, kept, "gc left rows in the loaded graph");
        assert_holds(&store, &scope, expiring);
        if flushed {
            store.flush().unwrap();
            assert!(
                saved(dir.path(), "usearch").is_some(),
                "flush saved nothing"
            );
        }
        // A crash: nothing more is saved.
        std::mem::forget(store);
        let store = EmbeddedStore::open(dir.path(), info(), clocked(&clock)).unwrap();
        assert_holds(&store, &scope, expiring);
        let status = store.index_status(&scope).unwrap().unwrap();
        assert_eq!(status.keys, kept, "flushed: {flushed}");
    }
}
