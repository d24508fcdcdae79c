//! The derived indexes: HNSW partitions, saving and restoring them, catching
//! up with commits made by another handle or before a crash.

use memloop::{Embedder, NewMemory, Scope, SearchQuery, StoreOptions};

use crate::{embedder, open, open_with};

/// Dense-only search: an exact text's own vector must come first.
fn dense(scope: &Scope, text: &str) -> SearchQuery {
    let mut q = SearchQuery::new(scope.clone(), text);
    q.keyword_weight = 0.0;
    q
}

fn note(i: usize) -> String {
    numbered(1, i).remove(0).text
}

fn numbered(n: usize, offset: usize) -> Vec<NewMemory> {
    let topics = [
        "tennis",
        "gardening",
        "chess",
        "baking",
        "sailing",
        "painting",
        "jazz",
        "hiking",
    ];
    (0..n)
        .map(|i| {
            NewMemory::text(format!(
                "Note {}: I practised {} on day {}",
                i + offset,
                topics[(i + offset) % 8],
                i + offset
            ))
        })
        .collect()
}

#[test]
fn hnsw_partition_saves_restores_and_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default().with_ann_threshold(100);
    let u = Scope::user("big");
    {
        let m = open_with(dir.path(), options.clone());
        m.add_batch(&u, numbered(300, 0)).unwrap();
        let hits = m.search(&dense(&u, &note(123))).unwrap();
        assert_eq!(hits[0].record.text, note(123));
        assert_eq!(m.stats().unwrap().hnsw_partitions, 1);
        m.flush().unwrap();
        // Written after the save: only the index log knows about these.
        m.add_batch(&u, numbered(20, 300)).unwrap();
        let gone = m.search(&dense(&u, &note(5))).unwrap();
        m.delete(&gone[0].record.id).unwrap();
        std::mem::forget(m); // no flush on drop: like a crash
    }
    assert!(std::fs::read_dir(dir.path().join("index")).unwrap().count() >= 2);
    let m = open_with(dir.path(), options);
    let hits = m.search(&dense(&u, &note(310))).unwrap();
    assert_eq!(hits[0].record.text, note(310));
    let hits = m.search(&dense(&u, &note(5))).unwrap();
    assert!(hits.iter().all(|h| h.record.text != note(5)));
    assert_eq!(m.stats().unwrap().current, 319);
}

#[test]
fn another_handle_sees_commits() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(dir.path());
    let b = open(dir.path());
    let u = Scope::user("shared");
    a.add(&u, NewMemory::text("The wifi password is on the fridge"))
        .unwrap();
    assert!(
        b.search(&SearchQuery::new(u.clone(), "wifi password"))
            .unwrap()
            .len()
            == 1
    );
    let id = a
        .add(&u, NewMemory::text("Parking is behind the bakery"))
        .unwrap()
        .id;
    assert_eq!(
        b.search(&SearchQuery::new(u.clone(), "where to park"))
            .unwrap()[0]
            .record
            .id,
        id
    );
    a.delete(&id).unwrap();
    assert!(b
        .search(&SearchQuery::new(u, "where to park"))
        .unwrap()
        .iter()
        .all(|h| h.record.id != id));
}

#[test]
fn gc_prunes_the_log_and_stale_handles_reload() {
    let dir = tempfile::tempdir().unwrap();
    let u = Scope::user("u");
    let a = open(dir.path());
    let b = open(dir.path());
    a.add(&u, NewMemory::text("The boat is moored at pier 4"))
        .unwrap();
    assert_eq!(
        b.search(&SearchQuery::new(u.clone(), "boat pier"))
            .unwrap()
            .len(),
        1
    );
    a.add(&u, NewMemory::text("The spare key is under the blue pot"))
        .unwrap();
    let pruned = a.gc().unwrap().index_log_entries_pruned;
    assert_eq!(pruned, 2, "no HNSW index is saved, so every entry goes");
    assert_eq!(a.gc().unwrap().index_log_entries_pruned, 0);
    // b's index predates the pruned entries: it must reload, not miss the key.
    let hits = b
        .search(&SearchQuery::new(u.clone(), "where is the spare key"))
        .unwrap();
    assert_eq!(hits[0].record.text, "The spare key is under the blue pot");
    // Writes after gc still reach every handle.
    let id = a
        .add(&u, NewMemory::text("The gate code is 4471"))
        .unwrap()
        .id;
    assert_eq!(
        b.search(&SearchQuery::new(u, "gate code")).unwrap()[0]
            .record
            .id,
        id
    );
}

/// A second model identity over the same vectors, to test the mismatch guard.
struct Renamed(std::sync::Arc<dyn Embedder>);

impl Embedder for Renamed {
    fn info(&self) -> memloop::EmbedderInfo {
        memloop::EmbedderInfo {
            model_id: "other-model".into(),
            dimensions: 384,
        }
    }
    fn embed_batch(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<f32>>> {
        self.0.embed_batch(texts)
    }
}

#[test]
fn embedder_mismatch_is_refused_until_reindex() {
    let dir = tempfile::tempdir().unwrap();
    open(dir.path())
        .add(&Scope::user("u"), NewMemory::text("stored with MiniLM"))
        .unwrap();
    let other = std::sync::Arc::new(Renamed(embedder()));
    let err = memloop::Memory::with_embedder(dir.path(), other.clone(), StoreOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err, memloop::Error::EmbedderMismatch { .. }));
    assert!(err.to_string().contains("memloop reindex"), "{err}");
    let n = memloop::Memory::reindex_with(
        dir.path(),
        other.clone(),
        StoreOptions::default(),
        &|_, _| {},
    )
    .unwrap();
    assert_eq!(n, 1);
    let m = memloop::Memory::with_embedder(dir.path(), other, StoreOptions::default()).unwrap();
    assert_eq!(
        m.search(&SearchQuery::new(Scope::user("u"), "MiniLM"))
            .unwrap()
            .len(),
        1
    );
}
