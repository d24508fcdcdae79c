use memloop::{Error, Event, Filter, Kind, ListQuery, MemoryUpdate, NewMemory, Scope, SearchQuery};
use serde_json::json;

use crate::open;

fn texts(hits: &[memloop::SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.record.text.as_str()).collect()
}

#[test]
fn add_get_update_delete_history() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let alice = Scope::user("alice");
    let added = m
        .add(
            &alice,
            NewMemory::text("I live in Paris").metadata(json!({"topic": "home"})),
        )
        .unwrap();
    assert_eq!(added.event, Event::Add);
    let rec = m.get(&added.id).unwrap();
    assert_eq!(rec.text, "I live in Paris");
    assert_eq!(rec.scope.user_id.as_deref(), Some("alice"));
    assert_eq!(rec.metadata["topic"], "home");
    assert_eq!(rec.kind, Kind::Fact);
    assert!(rec.valid_until.is_none());

    // The same text again (other spacing and case) is the same memory.
    let again = m.add(&alice, NewMemory::text("i live  in Paris ")).unwrap();
    assert_eq!(again.event, Event::Noop);
    assert_eq!(again.id, added.id);

    let updated = m.update(&added.id, "I live in Berlin").unwrap();
    assert_eq!(updated.previous_memory.as_deref(), Some("I live in Paris"));
    let hits = m
        .search(&SearchQuery::new(alice.clone(), "which city do I live in?"))
        .unwrap();
    assert_eq!(hits[0].record.text, "I live in Berlin");

    m.delete(&added.id).unwrap();
    assert!(m
        .search(&SearchQuery::new(alice.clone(), "Berlin"))
        .unwrap()
        .is_empty());
    // A deleted memory is not found by get, says why, and is still
    // readable on request, with valid_until and no successor.
    let err = m.get(&added.id).unwrap_err();
    assert_eq!(err.class(), memloop::ErrorClass::NotFound);
    assert!(err.to_string().contains("was deleted"), "{err}");
    assert!(err.to_string().contains("--include-deleted"), "{err}");
    let past = m
        .get_with(
            Scope::DEFAULT_TENANT,
            &added.id,
            memloop::Lookup::IncludeDeleted,
        )
        .unwrap();
    assert!(past.valid_until.is_some());
    assert_eq!(
        memloop::RecordStatus::at(&past, m.clock().now()),
        memloop::RecordStatus::Deleted
    );
    assert!(matches!(
        m.update(&added.id, "x"),
        Err(Error::InvalidInput(_))
    ));

    let h = m.history(&added.id).unwrap();
    let events: Vec<Event> = h.iter().map(|e| e.event).collect();
    assert_eq!(events, vec![Event::Add, Event::Update, Event::Delete]);
    assert_eq!(h[1].old_memory.as_deref(), Some("I live in Paris"));
    assert_eq!(h[1].new_memory.as_deref(), Some("I live in Berlin"));

    let listed = m
        .list(&ListQuery {
            scope: alice.clone(),
            include_superseded: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert!(m
        .list(&ListQuery {
            scope: alice,
            ..Default::default()
        })
        .unwrap()
        .is_empty());
}

#[test]
fn users_and_tenants_are_isolated() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let a = m
        .add(
            &Scope::user("alice"),
            NewMemory::text("Alice's bank PIN hint is her cat's name"),
        )
        .unwrap();
    m.add(&Scope::user("bob"), NewMemory::text("Bob likes hiking"))
        .unwrap();
    let other_tenant = Scope::user("alice").with_tenant("acme");
    m.add(&other_tenant, NewMemory::text("Acme Alice works in sales"))
        .unwrap();

    let bob_hits = m
        .search(&SearchQuery::new(Scope::user("bob"), "bank PIN cat name"))
        .unwrap();
    assert_eq!(texts(&bob_hits), vec!["Bob likes hiking"]);
    let acme_hits = m
        .search(&SearchQuery::new(other_tenant.clone(), "bank PIN"))
        .unwrap();
    assert_eq!(texts(&acme_hits), vec!["Acme Alice works in sales"]);
    // Ids of another tenant are unknown there.
    assert!(matches!(
        m.store().get("acme", &a.id),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        m.store().history("acme", &a.id),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        m.store().delete("acme", &a.id, None),
        Err(Error::NotFound(_))
    ));
    assert!(m.get(&a.id).is_ok());
}

#[test]
fn forget_narrows_by_agent_and_purges_history() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let u = Scope::user("u");
    let with_agent = Scope::user("u").with_agent("travel-bot");
    let kept = m.add(&u, NewMemory::text("u prefers aisle seats")).unwrap();
    let gone = m
        .add(&with_agent, NewMemory::text("u booked a flight to Rome"))
        .unwrap();
    let r = m.forget(&with_agent, false).unwrap();
    assert_eq!(r.memories_deleted, 1);
    assert!(
        m.get(&gone.id).is_err(),
        "forgotten memories leave the table"
    );
    assert_eq!(
        m.history(&gone.id)
            .unwrap()
            .last()
            .unwrap()
            .reason
            .as_deref(),
        Some("forget")
    );
    assert_eq!(
        texts(
            &m.search(&SearchQuery::new(u.clone(), "flight seats"))
                .unwrap()
        ),
        vec!["u prefers aisle seats"]
    );

    let r = m.forget(&u, true).unwrap();
    assert_eq!(r.memories_deleted, 1);
    assert!(r.history_deleted >= 1);
    assert!(m.get(&kept.id).is_err());
    assert!(m.history(&kept.id).is_err(), "purge drops history too");
    assert!(m
        .list(&ListQuery {
            scope: u,
            include_superseded: true,
            ..Default::default()
        })
        .unwrap()
        .is_empty());
    // Nothing of the purged text is left in the database file's live pages.
    drop(m);
    let db = std::fs::read(dir.path().join("memloop.db")).unwrap();
    let wal = std::fs::read(dir.path().join("memloop.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(
            !bytes.windows(11).any(|w| w == b"aisle seats"),
            "purged text still on disk"
        );
    }
}

#[test]
fn search_filters_kinds_expiry_and_scores() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let u = Scope::user("u");
    m.add(
        &u,
        NewMemory::text("Pizza place on 5th street is great")
            .metadata(json!({"topic": "food", "rating": 5})),
    )
    .unwrap();
    m.add(
        &u,
        NewMemory::text("The sushi bar downtown was mediocre")
            .metadata(json!({"topic": "food", "rating": 2})),
    )
    .unwrap();
    m.add(
        &u,
        NewMemory::text("Restaurant booking procedure: call, confirm, pay deposit")
            .kind(Kind::Procedure),
    )
    .unwrap();
    let mut expired = NewMemory::text("Temporary: the restaurant is closed today");
    expired.expires_at = Some(memloop::now_millis() - 1000);
    m.add(&u, expired).unwrap();

    let mut q = SearchQuery::new(u.clone(), "good restaurant");
    q.filter = Some(Filter::parse("topic = food AND rating >= 4").unwrap());
    assert_eq!(
        texts(&m.search(&q).unwrap()),
        vec!["Pizza place on 5th street is great"]
    );

    let mut q = SearchQuery::new(u.clone(), "restaurant");
    q.kinds = vec![Kind::Procedure];
    assert_eq!(texts(&m.search(&q).unwrap()).len(), 1);

    let all = m
        .search(&SearchQuery::new(u.clone(), "restaurant closed today"))
        .unwrap();
    assert!(
        all.iter().all(|h| !h.record.text.starts_with("Temporary")),
        "expired memories are not returned"
    );
    for w in all.windows(2) {
        assert!(w[0].score >= w[1].score);
    }
    for h in &all {
        assert!((0.0..=1.0).contains(&h.score));
        assert!(h.scores.vector.is_some() || h.scores.bm25.is_some());
    }
    let mut q = SearchQuery::new(u.clone(), "restaurant");
    q.min_score = 0.99;
    assert!(m.search(&q).unwrap().len() <= 1);

    let listed = m
        .list(&ListQuery {
            scope: u.clone(),
            filter: Some(Filter::parse("rating < 3").unwrap()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 1);
}

#[test]
fn bad_input_is_refused_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let u = Scope::user("u");
    m.add(&u, NewMemory::text("keep me")).unwrap();
    let huge = "x".repeat(memloop::MAX_TEXT_BYTES + 1);
    for bad in [
        NewMemory::text(""),
        NewMemory::text("   "),
        NewMemory::text(huge),
        NewMemory::text("ok").metadata(json!([1])),
    ] {
        let err = m
            .add_batch(&u, vec![NewMemory::text("would be fine"), bad])
            .unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    }
    assert!(matches!(
        m.add(&Scope::default(), NewMemory::text("no scope")),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(m.get("no-such-id"), Err(Error::NotFound(_))));
    assert!(matches!(
        m.search(&SearchQuery::new(u.clone(), "  ")),
        Err(Error::InvalidInput(_))
    ));
    let mut q = SearchQuery::new(u.clone(), "x");
    q.top_k = 0;
    assert!(m.search(&q).is_err());
    let listed = m
        .list(&ListQuery {
            scope: u,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        listed.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(),
        vec!["keep me"]
    );
}

/// Every by-id operation refuses an id no store could hold, before the
/// store (or, for `update`, the embedder) is asked, and echoes it short;
/// the memory that exists is untouched.
#[test]
fn by_id_operations_refuse_malformed_ids() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let kept = m
        .add(&Scope::user("u"), NewMemory::text("keep me"))
        .unwrap()
        .id;
    let long = "x".repeat(5000);
    for id in ["", "a\0b", "line\nbreak", long.as_str()] {
        let results = [
            m.get(id).err(),
            m.get_in("t", id).err(),
            m.update(id, "new text").err(),
            m.update_with(id, MemoryUpdate::default()).err(),
            m.delete(id).err(),
            m.history(id).err(),
            m.history_in("t", id).err(),
        ];
        for e in results {
            let e = e.expect("refused");
            assert!(matches!(e, Error::InvalidInput(_)), "{id:?}: {e}");
            let msg = e.to_string();
            assert!(msg.len() < 300, "{msg}");
            assert!(!msg.chars().any(char::is_control), "{msg:?}");
        }
    }
    assert_eq!(m.get(&kept).unwrap().text, "keep me");
    assert_eq!(m.history(&kept).unwrap().len(), 1);
}

#[test]
fn update_metadata_only_keeps_text() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let a = m
        .add(&Scope::user("u"), NewMemory::text("likes green tea"))
        .unwrap();
    m.update_with(
        &a.id,
        MemoryUpdate {
            metadata: Some(json!({"source": "chat"})),
            ..Default::default()
        },
    )
    .unwrap();
    let r = m.get(&a.id).unwrap();
    assert_eq!(r.text, "likes green tea");
    assert_eq!(r.metadata["source"], "chat");
}

#[test]
fn speaker_boost_prefers_what_the_named_person_said() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let u = Scope::user("chat");
    let said_by = |who: &str, text: &str| {
        NewMemory::text(text)
            .kind(Kind::Episode)
            .metadata(json!({"speaker": who}))
    };
    m.add(
        &u,
        said_by("Caroline", "Thanks Melanie, the pottery class sounds fun"),
    )
    .unwrap();
    m.add(
        &u,
        said_by("Melanie", "I signed up for a pottery class yesterday"),
    )
    .unwrap();
    let mut q = SearchQuery::new(u.clone(), "What class did Melanie sign up for pottery?");
    q.speaker_boost = 0.0;
    let plain = m.search(&q).unwrap();
    assert!(plain.iter().all(|h| h.scores.speaker_boost == 0.0));
    q.speaker_boost = 0.5;
    let boosted = m.search(&q).unwrap();
    assert_eq!(
        boosted[0].record.text,
        "I signed up for a pottery class yesterday"
    );
    assert_eq!(boosted[0].scores.speaker_boost, 0.5);
    assert!(boosted.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    let other = boosted
        .iter()
        .find(|h| h.record.text.starts_with("Thanks"))
        .unwrap();
    assert_eq!(other.scores.speaker_boost, 0.0);
}
