//! Expiry judged by the store's clock, moved by the test (no sleeps): a
//! memory whose TTL passes reads by id as a deleted one (the rule in
//! `memloop_longterm::lookup`, written once for every backend) and leaves
//! every count at that moment, before gc deletes it.

use memloop_core::links::EntityKind;
use memloop_core::time::Clock;
use memloop_core::{Error, Kind, NewMemory};
use memloop_longterm::{ListQuery, Lookup, RecordStatus};

use crate::backend::Backend;
use crate::cases::{add, alice};

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

fn lyon(text: &str, kind: Kind, garage: bool) -> NewMemory {
    let mut m = NewMemory::text(text).kind(kind);
    m.valid_from = Some(T0);
    m.links.mention("Lyon", EntityKind::Place);
    if garage {
        m.links.mention("Garage Nord", EntityKind::Place);
    }
    m
}

pub fn expired_reads_as_deleted_and_counts_leave_it_out(b: &dyn Backend) {
    let clock = Clock::manual(T0);
    let s = b.handle_at(clock.clone());
    let st = s.as_ref();
    let a = alice().with_session("s1");
    let mut parking = lyon(
        "Alice parks at Garage Nord in Lyon today",
        Kind::Episode,
        true,
    );
    parking.expires_at = Some(T0 + 1_000);
    let parking = add(st, &a, parking);
    let work = add(st, &a, lyon("Alice works in Lyon", Kind::Fact, false));
    let counts = || {
        let q = ListQuery {
            scope: alice(),
            ..Default::default()
        };
        let stats = st.stats().unwrap();
        let sessions = st.sessions(&alice()).unwrap();
        (
            st.count(&q).unwrap(),
            st.list(&q).unwrap().len(),
            st.entities("default").unwrap()[0].memories,
            sessions.iter().map(|x| x.memories).sum::<i64>(),
            stats.current,
            stats.by_kind.get("episode").copied().unwrap_or(0),
            stats.expired,
        )
    };
    assert_eq!(counts(), (2, 2, 2, 2, 2, 1, 0));
    let read = |lookup| st.read("default", &parking, lookup);
    assert_eq!(read(Lookup::Current).unwrap().id, parking);

    // One millisecond before its TTL it is current; at it, it is not.
    clock.advance(999).unwrap();
    assert!(read(Lookup::Current).is_ok());
    clock.advance(1).unwrap();
    match read(Lookup::Current) {
        Err(e @ Error::NotCurrent { .. }) => {
            assert!(
                matches!(&e, Error::NotCurrent { id, superseded_by: None, expired_at: Some(t) } if *id == parking && *t == T0 + 1_000),
                "{e:?}"
            );
            let message = e.to_string();
            assert!(message.contains("expired at"), "{message}");
            assert!(message.contains("--include-deleted"), "{message}");
        }
        other => panic!("an expired memory read as current: {other:?}"),
    }
    let shown = read(Lookup::IncludeDeleted).unwrap();
    assert_eq!(RecordStatus::at(&shown, clock.now()), RecordStatus::Expired);
    assert_eq!(st.read("default", &work, Lookup::Current).unwrap().id, work);
    // Another tenant still cannot tell it exists.
    assert!(matches!(
        st.read("acme", &parking, Lookup::IncludeDeleted),
        Err(Error::NotFound(_))
    ));
    assert_eq!(counts(), (1, 1, 1, 1, 1, 0, 1));
    for e in st.graph_entities(&alice(), None).unwrap() {
        assert_ne!(e.name, "Garage Nord", "named only by the expired memory");
        if e.name == "Lyon" {
            assert_eq!(e.memories, 1, "{e:?}");
        }
    }
    if let Some(links) = st.entity_links(&alice(), "Lyon", None).unwrap() {
        let named: Vec<&str> = links.memories.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(named, [work.as_str()]);
        assert!(
            links.co_mentioned.iter().all(|e| e.name != "Garage Nord"),
            "{:?}",
            links.co_mentioned
        );
    }

    // Once expire deletes it, it is unknown, whatever the lookup.
    assert_eq!(st.expire().unwrap().memories_deleted, 1);
    for lookup in [Lookup::Current, Lookup::IncludeDeleted] {
        assert!(matches!(read(lookup), Err(Error::NotFound(_))));
    }
    assert_eq!(counts(), (1, 1, 1, 1, 1, 0, 0));
}
