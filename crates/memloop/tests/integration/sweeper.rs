//! Forgetting wherever memories are held open: the background sweeper a
//! `Memory` owns replays queued writes and deletes what expired, each
//! interval, and stops when the handle is dropped. Expiry is judged by a
//! manual clock (no sleeps for TTLs); the tests wait only for the sweeper
//! thread, each wait bounded.

use std::time::{Duration, Instant};

use memloop::time::Clock;
use memloop::{
    Config, Error, ForgettingConfig, Lookup, Memory, MemoryById, NewMemory, Scope, StoreOptions,
    SweepStats,
};

const DAY: i64 = 86_400_000;
/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

fn open(dir: &std::path::Path, clock: &Clock) -> Memory {
    crate::open_with(dir, StoreOptions::default().with_clock(clock.clone()))
}

/// Polls until `done` holds of the sweeper's figures; fails after 20 s.
fn wait_for(memory: &Memory, what: &str, done: impl Fn(&SweepStats) -> bool) -> SweepStats {
    let start = Instant::now();
    loop {
        let stats = memory.sweeps().expect("the handle has a sweeper");
        if done(&stats) {
            return stats;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: not within 20 s ({stats:?})"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_expired_memory_reads_as_deleted_until_gc_then_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let memory = open(dir.path(), &clock);
    assert!(
        memory.sweeps().is_none(),
        "a handle from parts sweeps only when asked"
    );
    let mut note = NewMemory::text("The hotel wifi password is tulip42");
    note.expires_at = Some(memory.expiry_after("1d").unwrap());
    let id = memory.add(&Scope::user("carol"), note).unwrap().id;
    assert!(memory.get(&id).is_ok());

    clock.advance(DAY).unwrap();
    let err = memory.get(&id).unwrap_err();
    assert!(
        matches!(&err, Error::NotCurrent { expired_at: Some(t), superseded_by: None, .. } if *t == T0 + DAY),
        "{err:?}"
    );
    assert_eq!(err.code(), "not_found");
    let message = err.to_string();
    assert!(
        message.contains("expired at 2026-03-02T00:00:00"),
        "{message}"
    );
    assert!(message.contains("--include-deleted"), "{message}");
    let past = memory
        .get_with(Scope::DEFAULT_TENANT, &id, Lookup::IncludeDeleted)
        .unwrap();
    let shown = serde_json::to_value(MemoryById::new(&past, clock.now())).unwrap();
    assert_eq!(shown["status"], "expired", "{shown}");
    assert!(shown["valid_until"].is_null(), "{shown}");

    memory.gc().unwrap();
    for lookup in [Lookup::Current, Lookup::IncludeDeleted] {
        assert!(matches!(
            memory.get_with(Scope::DEFAULT_TENANT, &id, lookup),
            Err(Error::NotFound(_))
        ));
    }
}

#[test]
fn the_sweeper_deletes_what_expired_and_replays_queued_writes_each_interval() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let memory = open(dir.path(), &clock)
        .with_sweeper(Duration::from_millis(20))
        .unwrap();
    let carol = Scope::user("carol");
    let mut note = NewMemory::text("The gate code is 7781");
    note.expires_at = Some(T0 + DAY);
    let note = memory.add(&carol, note).unwrap().id;
    let kept = memory
        .add(&carol, NewMemory::text("Carol keeps bees"))
        .unwrap()
        .id;
    // A turn whose facts were queued after an LLM failure.
    let queued = serde_json::json!({
        "turn_id": "t1", "role": "user", "text": "I live in Lisbon.", "at": T0,
    });
    memory
        .store()
        .outbox_push(&carol, &queued, "the LLM timed out")
        .unwrap();

    let first = wait_for(&memory, "the queued write replayed", |s| {
        s.outbox_events_applied > 0
    });
    assert_eq!(memory.store().outbox_len().unwrap(), 0);
    assert_eq!(first.interval_ms, 20);
    assert_eq!(first.expired_deleted, 0, "nothing had expired yet");
    let facts = memory
        .list(&memloop::ListQuery {
            scope: carol.clone(),
            ..Default::default()
        })
        .unwrap();
    assert!(
        facts.iter().any(|r| r.text.contains("Lisbon")),
        "{facts:#?}"
    );

    clock.advance(DAY).unwrap();
    let after = wait_for(&memory, "the expired memory deleted", |s| {
        s.expired_deleted == 1
    });
    assert!(after.runs > first.runs);
    assert_eq!(after.failures, 0);
    assert_eq!(after.last_run_at, Some(clock.now()));
    assert!(matches!(memory.get(&note), Err(Error::NotFound(_))));
    assert!(memory.get(&kept).is_ok());
    assert_eq!(memory.stats().unwrap().expired, 0);
}

#[test]
fn dropping_a_handle_stops_its_sweeper_without_waiting_an_interval() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let memory = open(dir.path(), &clock)
        .with_sweeper(Duration::from_secs(3600))
        .unwrap();
    let mut note = NewMemory::text("The gate code is 7781");
    note.expires_at = Some(T0 + 1);
    memory.add(&Scope::user("carol"), note).unwrap();
    clock.advance(1).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let stats = memory.sweeps().unwrap();
    assert_eq!(
        (stats.runs, stats.last_run_at),
        (0, None),
        "no sweep before an interval"
    );
    let start = Instant::now();
    drop(memory);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "drop waited {:?}",
        start.elapsed()
    );
    // The store was closed with the handle: another opens it, and the
    // memory is still there for gc, expired.
    let again = open(dir.path(), &clock);
    assert_eq!(again.stats().unwrap().expired, 1);
}

#[test]
fn a_configured_handle_sweeps_at_gc_interval_unless_it_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default().with_data_dir(dir.path());
    cfg.forgetting = ForgettingConfig {
        gc_interval: Some(90_000),
        ..ForgettingConfig::default()
    };
    let memory = Memory::open_with(&cfg).unwrap();
    assert_eq!(memory.sweeps().unwrap().interval_ms, 90_000);
    drop(memory);
    cfg.forgetting.gc_interval = None;
    assert!(Memory::open_with(&cfg).unwrap().sweeps().is_none());
    // The library's own constructor sweeps hourly by default.
    let memory = Memory::open(dir.path()).unwrap();
    assert_eq!(memory.sweeps().unwrap().interval_ms, 3_600_000);
}
