//! The forgetting policy through the facade: default TTLs per kind on
//! every add path (add, the loop's remember, supersede), expiry seen by
//! search and counts the moment the clock passes it, `gc` deleting what
//! expired, decay from `[forgetting]` in every search, and retrievals
//! counted. Time is a manual clock moved by the tests.

use std::sync::Arc;

use memloop::time::Clock;
use memloop::{
    Event, ForgettingConfig, InProcessBuffer, Kind, KindTtls, ListQuery, LoopConfig, Memory,
    MemoryLoop, NewMemory, RememberOptions, Scope, SearchQuery, StoreOptions,
};

const DAY: i64 = 86_400_000;
/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

fn open(dir: &std::path::Path, clock: &Clock) -> Memory {
    crate::open_with(dir, StoreOptions::default().with_clock(clock.clone()))
}

#[test]
fn default_ttls_apply_per_kind_on_every_add_path_unless_the_write_gives_one() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let memory = Arc::new(open(dir.path(), &clock));
    let carol = Scope::user("carol");
    let fact = memory
        .add(&carol, NewMemory::text("Carol is allergic to peanuts"))
        .unwrap();
    let episode = memory
        .add(
            &carol,
            NewMemory::text("We talked about the trip").kind(Kind::Episode),
        )
        .unwrap();
    let mut given = NewMemory::text("Parking code is 4411").kind(Kind::Episode);
    given.expires_at = Some(memory.expiry_after("2d").unwrap());
    let given = memory.add(&carol, given).unwrap();
    let get = |id: &str| memory.get(id).unwrap().expires_at;
    assert_eq!(get(&fact.id), None, "facts are kept by default");
    assert_eq!(get(&episode.id), Some(T0 + 180 * DAY));
    assert_eq!(get(&given.id), Some(T0 + 2 * DAY));
    assert!(memory
        .expiry_after("6 months")
        .unwrap_err()
        .to_string()
        .contains("7d"));

    // The loop's episode and the facts distilled from it, with a policy
    // that gives facts a TTL too.
    let policy = ForgettingConfig {
        ttl: KindTtls {
            fact: Some(30 * DAY),
            ..KindTtls::default()
        },
        ..ForgettingConfig::default()
    };
    let memory = Arc::new(open(dir.path(), &clock).with_forgetting(policy));
    let lp = MemoryLoop::new(
        memory.clone(),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let r = lp
        .remember(
            &Scope::user("dave"),
            "I live in Paris and work as a nurse.",
            RememberOptions::default(),
        )
        .unwrap();
    assert!(r.events.len() >= 2, "{:?}", r.events);
    for e in &r.events {
        let expected = match e.kind {
            Kind::Episode => T0 + 180 * DAY,
            _ => T0 + 30 * DAY,
        };
        assert_eq!(get(&e.id), Some(expected), "{e:?}");
    }
    // The pipeline's UPDATE (a move) gives the new version its TTL too.
    clock.advance(DAY).unwrap();
    let r = lp
        .remember(
            &Scope::user("dave"),
            "I moved to Berlin last month.",
            RememberOptions::default(),
        )
        .unwrap();
    let update = r
        .events
        .iter()
        .find(|e| e.event == Event::Update)
        .unwrap_or_else(|| panic!("no UPDATE in {:?}", r.events));
    assert_eq!(get(&update.id), Some(T0 + 31 * DAY), "{update:?}");
    // A supersession through the facade gives the new memory its TTL.
    let old = memory
        .add(&Scope::user("erin"), NewMemory::text("Erin lives in Rome"))
        .unwrap();
    let text = "Erin lives in Oslo";
    let v = memory.embedder().embed(text).unwrap();
    let (new, _) = memory
        .supersede(
            &Scope::user("erin"),
            &old.id,
            (NewMemory::text(text), v),
            "moved",
        )
        .unwrap();
    assert_eq!(new.expires_at, Some(T0 + 31 * DAY));
}

#[test]
fn an_expired_memory_leaves_search_and_counts_at_once_and_gc_deletes_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let memory = open(dir.path(), &clock);
    let carol = Scope::user("carol");
    let mut short = NewMemory::text("The hotel wifi password is tulip42");
    short.expires_at = Some(memory.expiry_after("1d").unwrap());
    let short = memory.add(&carol, short).unwrap();
    memory
        .add(
            &carol,
            NewMemory::text("Carol's home wifi is called Meadow"),
        )
        .unwrap();
    let q = SearchQuery::new(carol.clone(), "what is the wifi password");
    let list = ListQuery {
        scope: carol.clone(),
        ..Default::default()
    };
    assert_eq!(memory.search(&q).unwrap()[0].record.id, short.id);
    assert_eq!(memory.count(&list).unwrap(), 2);

    clock.advance(DAY).unwrap();
    let hits = memory.search(&q).unwrap();
    assert!(hits.iter().all(|h| h.record.id != short.id), "{hits:?}");
    assert_eq!(hits.len(), 1);
    assert_eq!(memory.count(&list).unwrap(), 1);
    let stats = memory.stats().unwrap();
    assert_eq!((stats.current, stats.expired), (1, 1));
    assert_eq!(memory.entities("default").unwrap()[0].memories, 1);

    let report = memory.gc().unwrap();
    assert_eq!(report.expired_deleted, 1);
    let stats = memory.stats().unwrap();
    assert_eq!((stats.memories, stats.current, stats.expired), (1, 1, 0));
    let history = memory.history(&short.id).unwrap();
    let last = history.last().unwrap();
    assert_eq!(
        (last.event, last.reason.as_deref()),
        (Event::Delete, Some("expired"))
    );
    assert_eq!(memory.gc().unwrap().expired_deleted, 0);
}

#[test]
fn configured_decay_ranks_and_retrievals_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let policy = ForgettingConfig {
        decay_weight: 0.5,
        ..ForgettingConfig::default()
    };
    let memory = open(dir.path(), &clock).with_forgetting(policy);
    let carol = Scope::user("carol");
    let mut old = NewMemory::text("Carol plays tennis on Sundays");
    old.valid_from = Some(T0 - 400 * DAY);
    let mut new = NewMemory::text("Carol plays tennis on Saturdays");
    new.valid_from = Some(T0 - 2 * DAY);
    memory.add_batch(&carol, vec![old, new]).unwrap();
    let q = SearchQuery::new(carol.clone(), "when does carol play tennis");
    let hits = memory.search(&q).unwrap();
    assert_eq!(hits[0].record.text, "Carol plays tennis on Saturdays");
    assert!(hits[0].scores.decay > 0.2, "{:?}", hits[0].scores);
    assert!(hits[1].scores.decay < 0.01, "{:?}", hits[1].scores);
    // Each search counted its hits; this handle sees them before they are
    // written, and a flush writes them.
    let again = memory.search(&q).unwrap();
    assert_eq!(again[0].record.access_count, 1);
    memory.flush().unwrap();
    assert_eq!(memory.get(&again[0].record.id).unwrap().access_count, 2);
    // A query naming its own decay keeps it: 0 turns it off.
    let mut plain = q.clone();
    plain.decay = Some(memloop::Decay::OFF);
    let plain = memory.search(&plain).unwrap();
    assert!(plain.iter().all(|h| h.scores.decay == 0.0));
}
