//! Deletes that delete: a read by id answers only current memories. A
//! deleted or superseded one is not found (saying which, and how to read it
//! anyway) unless deleted ones are asked for; its history stays readable.

use std::sync::Arc;

use memloop::{
    Error, ErrorClass, InProcessBuffer, Kind, Lookup, LoopConfig, MemoryById, MemoryLoop,
    NewMemory, RecordStatus, RememberOptions, Scope, SearchQuery,
};

const T: &str = Scope::DEFAULT_TENANT;

#[test]
fn a_deleted_memory_is_not_found_unless_asked_for_and_its_history_stays() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let alice = Scope::user("alice");
    let id = m
        .add(&alice, NewMemory::text("Alice keeps bees"))
        .unwrap()
        .id;
    assert_eq!(m.get(&id).unwrap().text, "Alice keeps bees");
    m.delete(&id).unwrap();

    let err = m.get(&id).unwrap_err();
    assert!(
        matches!(&err, Error::NotCurrent { id: i, superseded_by: None, expired_at: None } if *i == id),
        "{err:?}"
    );
    assert_eq!(err.class(), ErrorClass::NotFound);
    assert_eq!(err.code(), "not_found");
    let message = err.to_string();
    assert!(message.contains("was deleted"), "{message}");
    assert!(message.contains("--include-deleted"), "{message}");
    assert!(message.contains("include_deleted=true"), "{message}");
    assert!(m.get_in(T, &id).is_err());

    let past = m.get_with(T, &id, Lookup::IncludeDeleted).unwrap();
    assert_eq!(past.text, "Alice keeps bees");
    assert!(past.valid_until.is_some());
    let shown = serde_json::to_value(MemoryById::new(&past, m.clock().now())).unwrap();
    assert_eq!(shown["status"], "deleted", "{shown}");
    assert!(shown["superseded_by"].is_null(), "{shown}");
    assert!(shown["valid_until"].is_string(), "{shown}");
    assert_eq!(shown["memory"], "Alice keeps bees");

    let events: Vec<_> = m.history(&id).unwrap().iter().map(|e| e.event).collect();
    assert_eq!(events, [memloop::Event::Add, memloop::Event::Delete]);

    // An unknown id is still the plain not found, with either lookup.
    for lookup in [Lookup::Current, Lookup::IncludeDeleted] {
        assert!(matches!(
            m.get_with(T, "no-such-id", lookup),
            Err(Error::NotFound(_))
        ));
    }
    // Another tenant's id is unknown there, deleted or not.
    assert!(matches!(
        m.get_with("acme", &id, Lookup::IncludeDeleted),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn a_superseded_fact_names_its_successor_and_a_deleted_stale_episode_reads_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(crate::open(dir.path()));
    let lp = MemoryLoop::new(
        memory.clone(),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let carol = Scope::user("carol").with_session("s1");
    for text in ["I live in Paris.", "I moved to Berlin last month."] {
        let r = lp
            .remember(&carol, text, RememberOptions::default())
            .unwrap();
        assert!(r.gate.persist, "{text}: {}", r.gate.reason);
    }
    let all = memory
        .list(&memloop::ListQuery {
            scope: Scope::user("carol"),
            include_superseded: true,
            ..Default::default()
        })
        .unwrap();
    let fact = |city: &str| {
        all.iter()
            .find(|r| r.kind == Kind::Fact && r.text.contains(city))
            .unwrap_or_else(|| panic!("no {city} fact in {all:#?}"))
            .clone()
    };
    let (paris, berlin) = (fact("Paris"), fact("Berlin"));

    let err = memory.get(&paris.id).unwrap_err();
    assert!(
        matches!(&err, Error::NotCurrent { superseded_by: Some(s), .. } if *s == berlin.id),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("was superseded by"), "{message}");
    assert!(message.contains(&berlin.id), "{message}");
    assert!(message.contains("--include-deleted"), "{message}");
    let old = memory
        .get_with(T, &paris.id, Lookup::IncludeDeleted)
        .unwrap();
    assert_eq!(
        RecordStatus::at(&old, memory.clock().now()),
        RecordStatus::Superseded
    );
    let shown = serde_json::to_value(MemoryById::new(&old, memory.clock().now())).unwrap();
    assert_eq!(shown["status"], "superseded");
    assert_eq!(shown["superseded_by"], berlin.id.as_str());
    assert_eq!(memory.get(&berlin.id).unwrap().text, berlin.text);

    // The Paris episode is current, marked as holding the replaced claim:
    // get answers it, naming the fact that replaced the claim.
    let hits = memory
        .search(&SearchQuery::new(Scope::user("carol"), "Paris"))
        .unwrap();
    let episode = hits
        .iter()
        .find(|h| h.record.kind == Kind::Episode && h.record.text.contains("Paris"))
        .expect("the Paris episode")
        .record
        .clone();
    let got = memory.get(&episode.id).unwrap();
    let shown = serde_json::to_value(MemoryById::new(&got, memory.clock().now())).unwrap();
    assert_eq!(shown["status"], "current", "{shown}");
    assert_eq!(shown["superseded_by"], berlin.id.as_str(), "{shown}");

    // Deleted, it reads as deleted, not as superseded.
    memory.delete(&episode.id).unwrap();
    assert!(matches!(
        memory.get(&episode.id),
        Err(Error::NotCurrent {
            superseded_by: None,
            ..
        })
    ));
    let gone = memory
        .get_with(T, &episode.id, Lookup::IncludeDeleted)
        .unwrap();
    assert_eq!(
        RecordStatus::at(&gone, memory.clock().now()),
        RecordStatus::Deleted
    );
    assert!(
        serde_json::to_value(MemoryById::new(&gone, memory.clock().now())).unwrap()
            ["superseded_by"]
            .is_null()
    );
}
