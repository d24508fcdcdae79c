//! Changes to memories that are no longer current: a deleted, a superseded
//! and an expired memory each refuse update, delete and supersede alike on
//! every backend, change nothing and say why; a text an expired memory held
//! is stored anew; a deleted evidence episode reads as deleted. (The
//! backends once decided these each in their own copy of the write logic,
//! and PostgreSQL updated expired memories and answered NOOP for their text.)

use memloop_core::time::Clock;
use memloop_core::{Error, ErrorClass, Event, Kind, NewMemory, Provenance};
use memloop_longterm::{LongTermStore, Lookup, MemoryUpdate, RecordStatus};

use crate::backend::Backend;
use crate::cases::{add, alice, vector};

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

/// Every change a stored memory can be asked for, each with what its error
/// message must say for a memory in `state`.
fn try_every_change(st: &dyn LongTermStore, id: &str, state: &str) {
    let before = st.get("default", id).unwrap();
    let history = st.history("default", id).unwrap().len();
    let update = MemoryUpdate {
        text: Some(("parks at Garage Sud".into(), vector("parks at Garage Sud"))),
        importance: Some(0.9),
        ..Default::default()
    };
    let replacement = NewMemory::text("parks at Garage Est");
    let errors: Vec<(&str, Error)> = vec![
        ("update", st.update("default", id, update).unwrap_err()),
        ("delete", st.delete("default", id, Some("x")).unwrap_err()),
        (
            "supersede",
            st.supersede(
                &alice(),
                id,
                (replacement, vector("parks at Garage Est")),
                "moved",
            )
            .unwrap_err(),
        ),
    ];
    for (change, e) in errors {
        assert_eq!(
            e.class(),
            ErrorClass::InvalidInput,
            "{change} of a {state} memory: {e}"
        );
        let expected = if state == "expired" {
            "expired"
        } else {
            "deleted or superseded"
        };
        assert!(
            e.to_string().contains(expected),
            "{change} of a {state} memory: {e}"
        );
    }
    // Nothing changed: the record, its history, and no replacement stored.
    let after = st.get("default", id).unwrap();
    assert_eq!(
        (
            &after.text,
            after.valid_until,
            &after.superseded_by,
            after.updated_at
        ),
        (
            &before.text,
            before.valid_until,
            &before.superseded_by,
            before.updated_at
        ),
        "a refused change to a {state} memory changed it"
    );
    assert_eq!(st.history("default", id).unwrap().len(), history);
    let all = st
        .list(&memloop_longterm::ListQuery {
            scope: alice(),
            include_superseded: true,
            ..Default::default()
        })
        .unwrap();
    assert!(
        all.iter()
            .all(|r| r.text != "parks at Garage Est" && r.text != "parks at Garage Sud"),
        "a refused change stored a memory"
    );
}

pub fn changes_to_ended_memories_are_refused_alike(b: &dyn Backend) {
    let clock = Clock::manual(T0);
    let s = b.handle_at(clock.clone());
    let st = s.as_ref();
    let a = alice();

    let deleted = add(st, &a, NewMemory::text("parks at Garage Nord"));
    st.delete("default", &deleted, None).unwrap();
    try_every_change(st, &deleted, "deleted");

    let old = add(st, &a, NewMemory::text("parks on Rue Victor Hugo"));
    st.supersede(
        &a,
        &old,
        (
            NewMemory::text("parks on Rue Garibaldi"),
            vector("parks on Rue Garibaldi"),
        ),
        "moved",
    )
    .unwrap();
    try_every_change(st, &old, "superseded");

    let mut ttl = NewMemory::text("parks at Garage Ouest today");
    ttl.expires_at = Some(T0 + 1_000);
    let expiring = add(st, &a, ttl.clone());
    clock.advance(1_000).unwrap();
    assert_eq!(
        RecordStatus::at(&st.get("default", &expiring).unwrap(), clock.now()),
        RecordStatus::Expired
    );
    try_every_change(st, &expiring, "expired");

    // The same text written once its TTL passed is a new memory, not a
    // NOOP that answers with the expired one.
    ttl.expires_at = None;
    let again = st
        .insert(&a, vec![(ttl, vector("parks at Garage Ouest today"))])
        .unwrap();
    assert_eq!(again[0].1, Event::Add, "{:?}", again[0].0);
    assert_ne!(again[0].0.id, expiring);
    assert_eq!(
        st.read("default", &again[0].0.id, Lookup::Current)
            .unwrap()
            .text,
        "parks at Garage Ouest today"
    );
}

pub fn a_deleted_evidence_episode_reads_as_deleted(b: &dyn Backend) {
    let s = b.handle();
    let st = s.as_ref();
    let a = alice().with_session("s1");
    let turn = Provenance {
        session_id: Some("s1".into()),
        turn_ids: vec!["t1".into()],
        source: "rule".into(),
        confidence: None,
    };
    let mut episode = NewMemory::text("I moved to Lisbon last year").kind(Kind::Episode);
    episode.provenance = turn.clone();
    let episode = add(st, &a, episode);
    let mut fact = NewMemory::text("lives in Lisbon");
    fact.provenance = turn;
    let fact = add(st, &a, fact);
    let (new, _) = st
        .supersede(
            &a,
            &fact,
            (NewMemory::text("lives in Porto"), vector("lives in Porto")),
            "moved",
        )
        .unwrap();
    assert_eq!(
        st.get("default", &episode).unwrap().superseded_by,
        Some(new.id)
    );
    let deleted = st.delete("default", &episode, None).unwrap();
    assert_eq!(deleted.superseded_by, None);
    let stored = st.get("default", &episode).unwrap();
    assert_eq!(stored.superseded_by, None);
    assert_eq!(
        RecordStatus::at(&stored, stored.updated_at),
        RecordStatus::Deleted
    );
}
