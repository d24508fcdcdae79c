//! The forgetting policy at the store: an expired memory takes no
//! candidate place in a search and counts nowhere as current; `expire`
//! deletes it from SQLite, the in-memory indexes and the saved index
//! files, and history says it expired; retrievals are counted in memory
//! and written in batches; decay ranks fresh memories above stale ones.
//! Time is a manual clock: nothing here waits for a TTL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memloop_core::time::Clock;
use memloop_core::{EmbedderInfo, Event, Kind, NewMemory, Scope};
use memloop_store::prelude::*;
use memloop_store::{
    load_saved_graph, Decay, EmbeddedStore, ListQuery, MemoryUpdate, SearchQuery, StoreOptions,
};

const DIMS: usize = 16;
const DAY: i64 = 86_400_000;
/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;

fn info() -> EmbedderInfo {
    EmbedderInfo {
        model_id: "test-hash".into(),
        dimensions: DIMS,
    }
}

/// A deterministic unit vector per text: equal texts, equal vectors.
fn vector(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v = Vec::with_capacity(DIMS);
    for _ in 0..DIMS {
        for b in text.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = h.rotate_left(17);
        v.push(((h >> 40) as f32 / (1u64 << 24) as f32) - 0.5);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn open(dir: &Path, clock: &Clock, ann_threshold: usize) -> EmbeddedStore {
    let options = StoreOptions::default()
        .with_clock(clock.clone())
        .with_ann_threshold(ann_threshold);
    EmbeddedStore::open(dir, info(), options).unwrap()
}

fn memory(text: &str, expires_at: Option<i64>) -> (NewMemory, Vec<f32>) {
    let mut m = NewMemory::text(text);
    m.expires_at = expires_at;
    (m, vector(text))
}

fn texts(hits: &[memloop_core::SearchHit]) -> Vec<String> {
    hits.iter().map(|h| h.record.text.clone()).collect()
}

/// 300 expired memories that match the query better than anything else,
/// and 5 live ones that match it less well: every search (exact scan,
/// HNSW, narrowed by a filter) finds the 5, because the expired ones were
/// refused inside each index's search instead of filling its 100 places.
#[test]
fn expired_memories_never_take_a_candidate_place() {
    for ann_threshold in [5_000, 50] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::manual(T0);
        let store = open(dir.path(), &clock, ann_threshold);
        let scope = Scope::user("carol");
        let query = "where does carol live paris";
        let stale: Vec<_> = (0..300)
            .map(|i| memory(&format!("carol lives in paris, paris {i}"), Some(T0 + DAY)))
            .collect();
        store.insert(&scope, stale).unwrap();
        let live: Vec<_> = (0..5)
            .map(|i| memory(&format!("carol went to paris once ({i})"), None))
            .collect();
        store.insert(&scope, live).unwrap();
        // The query's own vector belongs to an expired memory's text.
        let qv = vector("carol lives in paris, paris 7");
        let mut q = SearchQuery::new(scope.clone(), query);
        q.top_k = 5;
        let before = store.search(&q, &qv).unwrap();
        assert!(before.iter().all(|h| h.record.text.contains("lives")));
        clock.advance(DAY).unwrap();
        let hits = store.search(&q, &qv).unwrap();
        assert_eq!(hits.len(), 5, "{ann_threshold}: {:?}", texts(&hits));
        assert!(hits.iter().all(|h| h.record.text.contains("went")));
        q.kinds = vec![Kind::Fact];
        assert_eq!(store.search(&q, &qv).unwrap().len(), 5);
        // Dense only and keywords only too.
        let mut dense = SearchQuery::new(scope.clone(), query);
        (dense.top_k, dense.keyword_weight) = (5, 0.0);
        assert_eq!(store.search(&dense, &qv).unwrap().len(), 5);
    }
}

#[test]
fn expired_memories_count_nowhere_as_current() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let store = open(dir.path(), &clock, 5_000);
    let (carol, dave) = (Scope::user("carol"), Scope::user("dave"));
    store
        .insert(&carol, vec![memory("a", Some(T0 + DAY)), memory("b", None)])
        .unwrap();
    store
        .insert(&dave, vec![memory("only expires", Some(T0 + DAY))])
        .unwrap();
    let list = ListQuery {
        scope: carol.clone(),
        ..Default::default()
    };
    assert_eq!(store.count(&list).unwrap(), 2);
    assert_eq!(store.entities("default").unwrap().len(), 2);
    clock.advance(DAY).unwrap();
    let stats = store.stats().unwrap();
    assert_eq!(
        (
            stats.memories,
            stats.current,
            stats.expired,
            stats.superseded
        ),
        (3, 1, 2, 0)
    );
    assert_eq!(stats.by_kind.get("fact"), Some(&1));
    assert_eq!(store.count(&list).unwrap(), 1);
    assert_eq!(texts_of(&store.list(&list).unwrap()), ["b"]);
    let entities = store.entities("default").unwrap();
    assert_eq!(entities.len(), 1, "{entities:?}");
    assert_eq!(
        (entities[0].name.as_str(), entities[0].memories),
        ("carol", 1)
    );
}

fn texts_of(records: &[memloop_core::MemoryRecord]) -> Vec<&str> {
    records.iter().map(|r| r.text.as_str()).collect()
}

/// An expired memory cannot be updated back to life or superseded, and
/// the same text written again is stored anew (not a NOOP onto it).
#[test]
fn an_expired_memory_is_not_current_for_writes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let store = open(dir.path(), &clock, 5_000);
    let scope = Scope::user("carol");
    let (old, _) = store
        .insert(&scope, vec![memory("I live in Paris", Some(T0 + DAY))])
        .unwrap()
        .remove(0);
    clock.advance(DAY).unwrap();
    let err = store
        .update(
            "default",
            &old.id,
            MemoryUpdate {
                expires_at: Some(None),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("expired"), "{err}");
    let err = store
        .supersede(&scope, &old.id, memory("I live in Berlin", None), "moved")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expired"), "{err}");
    let (again, event) = store
        .insert(&scope, vec![memory("I live in Paris", None)])
        .unwrap()
        .remove(0);
    assert_eq!(event, Event::Add);
    assert_ne!(again.id, old.id);
    // Writes are stamped with the store's clock.
    assert_eq!(again.created_at, T0 + DAY);
}

/// `expire` deletes expired rows (current or superseded) from SQLite, the
/// loaded indexes of this handle, and the saved HNSW file of a partition
/// another handle saved and this one never loaded; history keeps a DELETE
/// with the reason "expired" for each current one.
#[test]
fn expire_deletes_from_the_database_every_index_and_saved_files() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let (carol, dave) = (Scope::user("carol"), Scope::user("dave"));
    let batch = |prefix: &str, n: usize, ttl: Option<i64>| -> Vec<_> {
        (0..n)
            .map(|i| memory(&format!("{prefix} note {i}"), ttl))
            .collect()
    };
    let (expiring_id, superseded_id) = {
        let store = open(dir.path(), &clock, 50);
        let out = store
            .insert(&carol, batch("carol short", 100, Some(T0 + DAY)))
            .unwrap();
        store
            .insert(&carol, batch("carol long", 100, None))
            .unwrap();
        store
            .insert(&dave, batch("dave short", 80, Some(T0 + DAY)))
            .unwrap();
        store.insert(&dave, batch("dave long", 70, None)).unwrap();
        // A superseded memory past its TTL goes too.
        let (_, old) = store
            .supersede(
                &carol,
                &out[1].0.id,
                memory("carol short again", None),
                "why",
            )
            .unwrap();
        // Both partitions get saved HNSW files (over 50 memories each).
        for (s, t) in [(&carol, "carol"), (&dave, "dave")] {
            store
                .search(&SearchQuery::new(s.clone(), t), &vector(t))
                .unwrap();
        }
        store.flush().unwrap();
        (out[0].0.id.clone(), old.id)
    };
    assert_eq!(saved_index_sizes(dir.path()), vec![150, 200]);
    let store = open(dir.path(), &clock, 50);
    // This handle loads carol's partition only; dave's is in its file.
    let q = SearchQuery::new(carol.clone(), "carol note");
    assert_eq!(store.search(&q, &vector("x")).unwrap().len(), 10);
    clock.advance(DAY).unwrap();
    let report = store.expire().unwrap();
    assert_eq!((report.memories_deleted, report.partitions), (180, 2));
    let stats = store.stats().unwrap();
    assert_eq!((stats.memories, stats.expired), (171, 0));
    assert!(store.get("default", &expiring_id).is_err());
    assert!(store.get("default", &superseded_id).is_err());
    let history = store.history("default", &expiring_id).unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.event, Event::Delete);
    assert_eq!(last.reason.as_deref(), Some("expired"));
    assert_eq!(last.old_memory.as_deref(), Some("carol short note 0"));
    assert_eq!(last.at, T0 + DAY);
    // The superseded one's history ends with its supersession.
    let history = store.history("default", &superseded_id).unwrap();
    assert_eq!(history.last().unwrap().event, Event::Update);
    // Saved files hold the live rows only: carol 100 + the new one, dave 70.
    assert_eq!(saved_index_sizes(dir.path()), vec![70, 101]);
    let mut q = SearchQuery::new(carol.clone(), "carol short note");
    q.top_k = 1000;
    let hits = store.search(&q, &vector("carol short note 3")).unwrap();
    assert!(hits.iter().all(|h| !h.record.text.contains("short note")));
    assert_eq!(store.expire().unwrap().memories_deleted, 0);
    // A fresh handle loads what is left, from the saved files.
    drop(store);
    let store = open(dir.path(), &clock, 50);
    let mut q = SearchQuery::new(dave, "dave note");
    q.top_k = 1000;
    assert_eq!(store.search(&q, &vector("dave")).unwrap().len(), 70);
}

/// The live entries of every saved HNSW file in the data directory, sorted.
fn saved_index_sizes(dir: &Path) -> Vec<usize> {
    let mut sizes: Vec<usize> = std::fs::read_dir(dir.join("index"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "usearch"))
        .map(|e| load_saved_graph(&e.path(), DIMS).unwrap().len())
        .collect();
    sizes.sort();
    sizes
}

/// Searches during `expire` never see an expired memory and always see
/// every live one.
#[test]
fn searches_during_expire_stay_right() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let store = open(dir.path(), &clock, 1_000);
    let scope = Scope::user("carol");
    for chunk in 0..12 {
        let items = (0..1000)
            .map(|i| memory(&format!("old tea note {chunk} {i}"), Some(T0 + DAY)))
            .collect();
        store.insert(&scope, items).unwrap();
    }
    let live: Vec<_> = (0..20)
        .map(|i| memory(&format!("fresh coffee note {i}"), None))
        .collect();
    store.insert(&scope, live).unwrap();
    let mut q = SearchQuery::new(scope, "tea coffee note");
    q.top_k = 20;
    let qv = vector("old tea note 3 3");
    assert_eq!(store.search(&q, &qv).unwrap().len(), 20);
    clock.advance(DAY).unwrap();
    std::thread::scope(|s| {
        let gc = s.spawn(|| store.expire().unwrap());
        let mut searches = 0;
        while !gc.is_finished() || searches < 5 {
            let hits = store.search(&q, &qv).unwrap();
            assert_eq!(hits.len(), 20, "{:?}", texts(&hits));
            assert!(hits.iter().all(|h| h.record.text.starts_with("fresh")));
            searches += 1;
        }
        assert_eq!(gc.join().unwrap().memories_deleted, 12_000);
    });
}

/// Retrievals are counted at once for this handle's searches, but reach
/// the database (what another handle reads) only with a write, a flush
/// or the drop: never a transaction per search.
#[test]
fn retrievals_are_counted_in_memory_and_written_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let a = open(dir.path(), &clock, 5_000);
    let b = open(dir.path(), &clock, 5_000);
    let scope = Scope::user("carol");
    let (rec, _) = a
        .insert(&scope, vec![memory("carol likes tea", None)])
        .unwrap()
        .remove(0);
    clock.advance(DAY).unwrap();
    for _ in 0..3 {
        a.record_access("default", &[rec.id.as_str()]).unwrap();
    }
    let q = SearchQuery::new(scope.clone(), "tea");
    let seen = a.search(&q, &vector("carol likes tea")).unwrap();
    assert_eq!(seen[0].record.access_count, 3);
    assert_eq!(seen[0].record.last_accessed_at, Some(T0 + DAY));
    assert_eq!(b.get("default", &rec.id).unwrap().access_count, 0);
    // The next write carries them in its own transaction.
    a.insert(&scope, vec![memory("carol likes rain", None)])
        .unwrap();
    let stored = b.get("default", &rec.id).unwrap();
    assert_eq!(
        (stored.access_count, stored.last_accessed_at),
        (3, Some(T0 + DAY))
    );
    a.record_access("default", &[rec.id.as_str(), "no-such-id"])
        .unwrap();
    drop(a);
    assert_eq!(b.get("default", &rec.id).unwrap().access_count, 4);
}

/// Thousands of pending retrievals reach the database without a write, a
/// flush or a drop: the store's background writer writes them (the search
/// that filled the batch does not write it inside its own time). That a
/// full batch wakes the writer, rather than its clock, is
/// `memloop_longterm::access`'s unit test: a deadline here short enough to
/// tell the two apart failed on loaded machines.
#[test]
fn a_full_batch_of_retrievals_is_written_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let a = open(dir.path(), &clock, 5_000);
    let b = open(dir.path(), &clock, 5_000);
    let scope = Scope::user("carol");
    let batch = (0..4_200)
        .map(|i| memory(&format!("note {i}"), None))
        .collect();
    let ids: Vec<String> = a
        .insert(&scope, batch)
        .unwrap()
        .into_iter()
        .map(|(r, _)| r.id)
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    for chunk in ids.chunks(10) {
        a.record_access("default", chunk).unwrap();
    }
    // The writer takes the batch a few counts per transaction, so the
    // first memory's count landing says nothing of the rest's: wait for
    // both ends of the batch.
    let count = |id: &str| b.get("default", id).unwrap().access_count;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while count(ids[0]) == 0 || count(ids[4_000]) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a full batch was not written in the background"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(count(ids[0]), 1);
    assert_eq!(count(ids[4_000]), 1);
}

/// With a decay weight, of two equally relevant memories the one used
/// recently (or newer) ranks first and each hit carries its signal; at
/// weight 0 the signal is neither computed nor counted.
#[test]
fn decay_ranks_fresh_memories_first_and_reports_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let store = open(dir.path(), &clock, 5_000);
    let scope = Scope::user("carol");
    let mut old = NewMemory::text("carol drinks tea");
    old.valid_from = Some(T0 - 365 * DAY);
    let mut new = NewMemory::text("carol drinks tea daily");
    new.valid_from = Some(T0 - DAY);
    let qv = vector("q");
    store
        .insert(&scope, vec![(old, qv.clone()), (new, qv.clone())])
        .unwrap();
    let mut q = SearchQuery::new(scope.clone(), "carol drinks tea");
    q.decay = Some(Decay::OFF);
    let plain = store.search(&q, &qv).unwrap();
    assert_eq!(plain[0].record.text, "carol drinks tea");
    assert!(plain.iter().all(|h| h.scores.decay == 0.0));
    q.decay = Some(Decay {
        weight: 1.0,
        half_life_ms: 30 * DAY,
    });
    let decayed = store.search(&q, &qv).unwrap();
    assert_eq!(decayed[0].record.text, "carol drinks tea daily");
    assert!(decayed[0].scores.decay > 0.2, "{:?}", decayed[0].scores);
    assert!(decayed[1].scores.decay < 0.001, "{:?}", decayed[1].scores);
    assert!(decayed.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    // Using the old one makes it fresh again.
    let old_id = decayed[1].record.id.clone();
    store.record_access("default", &[old_id.as_str()]).unwrap();
    let used = store.search(&q, &qv).unwrap();
    assert_eq!(used[0].record.id, old_id);
}
