//! Entity links through the facade: names found on write, and a search
//! that reaches a memory through an entity its best hit names.

use memloop::graph::Expansion;
use memloop::{NewMemory, Scope, SearchQuery};

use crate::open;

/// Colleagues of other relatives: nearer the question in words and meaning
/// than the memory that answers it, which names no relative.
const WORKPLACES: [&str; 5] = [
    "My brother works at Initech",
    "My cousin works at Hooli",
    "My friend works at Vandelay",
    "My neighbour works at Soylent",
    "My uncle works at Cyberdyne",
];

#[test]
fn a_search_follows_an_entity_from_its_best_hit() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let me = Scope::user("me");
    memory
        .add(&me, NewMemory::text("Anna is my sister"))
        .unwrap();
    memory
        .add(&me, NewMemory::text("Anna works at Globex"))
        .unwrap();
    for t in WORKPLACES {
        memory.add(&me, NewMemory::text(t)).unwrap();
    }
    let entities = memory.graph_entities(&me, None).unwrap();
    let anna = entities.iter().find(|e| e.name == "Anna").unwrap();
    assert_eq!(anna.memories, 2);
    let links = memory.entity_links(&me, "anna", None).unwrap().unwrap();
    assert!(
        links
            .relations
            .iter()
            .any(|r| r.relation == "sister_of" && r.object == "user"),
        "{:?}",
        links.relations
    );

    let query = |expand: Expansion| {
        let mut q = SearchQuery::new(me.clone(), "where does my sister work");
        q.top_k = 2;
        q.expand = Some(expand);
        memory.search(&q).unwrap()
    };
    let off = query(Expansion::OFF);
    assert!(off.iter().all(|h| h.scores.graph == 0.0));
    let off: Vec<&str> = off.iter().map(|h| h.record.text.as_str()).collect();
    // A link followed at 0.9 of the hit it leaves.
    let on = query(Expansion {
        weight: 0.9,
        ..Expansion::ON
    });
    let texts: Vec<&str> = on.iter().map(|h| h.record.text.as_str()).collect();
    assert!(texts.contains(&"Anna is my sister"), "{texts:?}");
    let globex = on
        .iter()
        .find(|h| h.record.text == "Anna works at Globex")
        .unwrap_or_else(|| panic!("the linked memory is not among {texts:?} (off: {off:?})"));
    assert!(
        globex.scores.graph > 0.0,
        "{:?} (off: {off:?})",
        globex.scores
    );
    assert!(globex.score <= on[0].score);
    assert!(
        !off.contains(&"Anna works at Globex"),
        "the direct search already found it: {off:?}"
    );
}

#[test]
fn expansion_keeps_to_the_scope_and_to_current_memories() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path());
    let me = Scope::user("me");
    let other = Scope::user("other");
    memory
        .add(&me, NewMemory::text("Anna is my sister"))
        .unwrap();
    let gone = memory
        .add(&me, NewMemory::text("Anna works at Globex"))
        .unwrap();
    memory
        .add(&other, NewMemory::text("Anna works at Initrode"))
        .unwrap();
    memory.delete_in("default", &gone.id).unwrap();
    let mut q = SearchQuery::new(me.clone(), "my sister");
    q.expand = Some(Expansion::ON);
    let hits = memory.search(&q).unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.record.text.as_str()).collect();
    assert_eq!(texts, ["Anna is my sister"]);
}
