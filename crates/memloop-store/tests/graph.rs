//! The entity graph in the embedded store: mentions and relations written
//! with their memory, read only through current memories, removed with
//! forget, and no name left in the file after a purge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memloop_core::links::{EntityKind, Links};
use memloop_core::{EmbedderInfo, NewMemory, Scope};
use memloop_longterm::graph::LinkLimits;
use memloop_store::prelude::*;
use memloop_store::{EmbeddedStore, MemoryUpdate, StoreOptions};

const DIMS: usize = 4;

fn open(dir: &std::path::Path) -> EmbeddedStore {
    open_with(dir, StoreOptions::default())
}

fn open_with(dir: &std::path::Path, options: StoreOptions) -> EmbeddedStore {
    let info = EmbedderInfo {
        model_id: "test".into(),
        dimensions: DIMS,
    };
    EmbeddedStore::open(dir, info, options).unwrap()
}

fn with_links(
    text: &str,
    names: &[&str],
    relation: Option<(&str, &str, &str)>,
) -> (NewMemory, Vec<f32>) {
    let mut m = NewMemory::text(text);
    let mut links = Links::default();
    for n in names {
        links.mention(n, EntityKind::Unknown);
    }
    if let Some((s, r, o)) = relation {
        links.relate((s, EntityKind::Person), r, (o, EntityKind::Organisation));
    }
    m.links = links;
    (m, vec![0.5; DIMS])
}

const LIMITS: LinkLimits = LinkLimits {
    max_entity_memories: 10,
    per_entity: 5,
};

#[test]
fn mentions_link_memories_and_only_current_ones_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let u = Scope::user("u");
    let added = store
        .insert(
            &u,
            vec![
                with_links("Anna is my sister", &["Anna"], None),
                with_links(
                    "Anna works at Globex",
                    &["Anna", "Globex"],
                    Some(("Anna", "works_at", "Globex")),
                ),
                with_links("Bob works at Initech", &["Bob", "Initech"], None),
            ],
        )
        .unwrap();
    let ids: Vec<String> = added.iter().map(|(r, _)| r.id.clone()).collect();

    let entities = store.graph_entities(&u, None).unwrap();
    let anna = entities.iter().find(|e| e.name == "Anna").unwrap();
    assert_eq!(anna.memories, 2);
    assert_eq!(entities[0].name, "Anna", "most mentioned first");
    let globex = entities.iter().find(|e| e.name == "Globex").unwrap();
    assert_eq!(globex.kind, EntityKind::Organisation);

    let links = store.entity_links(&u, "anna", None).unwrap().unwrap();
    assert_eq!(links.relations.len(), 1);
    assert_eq!(links.relations[0].relation, "works_at");
    assert_eq!(links.relations[0].memory_id, ids[1]);
    assert!(links.co_mentioned.iter().any(|e| e.name == "Globex"));
    assert!(store.entity_links(&u, "Nobody", None).unwrap().is_none());
    // Another user's scope sees none of it.
    assert!(store
        .graph_entities(&Scope::user("v"), None)
        .unwrap()
        .is_empty());

    let linked = store.linked(&u, &[ids[0].as_str()], &LIMITS).unwrap();
    assert_eq!(linked.len(), 1);
    assert_eq!(linked[0].record.id, ids[1]);
    assert_eq!(linked[0].entity, "Anna");
    assert_eq!(linked[0].entity_memories, 2);

    // A deleted memory links nothing any more.
    store.delete("default", &ids[1], None).unwrap();
    assert!(store
        .linked(&u, &[ids[0].as_str()], &LIMITS)
        .unwrap()
        .is_empty());
    let links = store.entity_links(&u, "Anna", None).unwrap().unwrap();
    assert!(links.relations.is_empty(), "{:?}", links.relations);
    assert!(store.entity_links(&u, "Globex", None).unwrap().is_none());
}

#[test]
fn hub_entities_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let u = Scope::user("u");
    let items = (0..12)
        .map(|i| with_links(&format!("Caroline said thing {i}"), &["Caroline"], None))
        .collect();
    let added = store.insert(&u, items).unwrap();
    let seed = added[0].0.id.as_str();
    assert!(store.linked(&u, &[seed], &LIMITS).unwrap().is_empty());
    let wide = LinkLimits {
        max_entity_memories: 100,
        per_entity: 3,
    };
    assert_eq!(store.linked(&u, &[seed], &wide).unwrap().len(), 3);
}

#[test]
fn a_new_text_replaces_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let u = Scope::user("u");
    let added = store
        .insert(&u, vec![with_links("Anna called", &["Anna"], None)])
        .unwrap();
    let mut links = Links::default();
    links.mention("Marta", EntityKind::Person);
    let change = MemoryUpdate {
        text: Some(("Marta called".into(), vec![0.5; DIMS])),
        links,
        ..Default::default()
    };
    store.update("default", &added[0].0.id, change).unwrap();
    let names: Vec<String> = store
        .graph_entities(&u, None)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["Marta"]);
}

#[test]
fn purge_leaves_no_name_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let u = Scope::user("u");
    let keep = Scope::user("w");
    store
        .insert(
            &u,
            vec![with_links("met Zebulonova today", &["Zebulonova"], None)],
        )
        .unwrap();
    store
        .insert(
            &keep,
            vec![with_links("Quentinska called", &["Quentinska"], None)],
        )
        .unwrap();
    store.forget(&u, true).unwrap();
    assert!(store.graph_entities(&u, None).unwrap().is_empty());
    assert_eq!(store.graph_entities(&keep, None).unwrap().len(), 1);
    drop(store);
    let mut bytes = Vec::new();
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if e.path().is_file() {
            bytes.extend(std::fs::read(e.path()).unwrap());
        }
    }
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(
        !has(b"zebulonova") && !has(b"Zebulonova"),
        "a purged name is still in the data directory"
    );
    assert!(
        has(b"Quentinska"),
        "the check reads the files that hold names"
    );
}

/// gc deletes without the schema's cascade (see expire.rs): an expired
/// memory's mentions and relations go with it, the others stay, and the
/// file is left with no row pointing at a memory that is gone.
#[test]
fn gc_takes_expired_memories_links_along() {
    use memloop_core::time::Clock;
    const T0: i64 = 1_700_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let store = open_with(
        dir.path(),
        StoreOptions::default().with_clock(clock.clone()),
    );
    let u = Scope::user("u");
    let relation = Some(("Anna", "works_at", "Globex"));
    let mut expiring = with_links("Anna works at Globex", &["Anna", "Globex"], relation);
    expiring.0.expires_at = Some(T0 + 1);
    let kept = with_links("Anna joined Globex", &["Anna", "Globex"], relation);
    let added = store.insert(&u, vec![expiring, kept]).unwrap();
    let count = |sql: &str| -> i64 {
        let conn = rusqlite::Connection::open(dir.path().join(memloop_store::DB_FILE)).unwrap();
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    let links = "SELECT (SELECT COUNT(*) FROM mentions) * 100 + (SELECT COUNT(*) FROM relations)";
    assert_eq!(count(links), 402);
    clock.advance(2).unwrap();
    assert_eq!(store.expire().unwrap().memories_deleted, 1);
    assert_eq!(count(links), 201);
    let dangling = "SELECT (SELECT COUNT(*) FROM mentions WHERE memory_row NOT IN \
                    (SELECT row FROM memories)) + (SELECT COUNT(*) FROM relations \
                    WHERE memory_row NOT IN (SELECT row FROM memories))";
    assert_eq!(count(dangling), 0);
    let links = store.entity_links(&u, "Anna", None).unwrap().unwrap();
    assert_eq!(links.relations.len(), 1);
    assert_eq!(links.relations[0].memory_id, added[1].0.id);
}
