//! Both sides of the turn: the episode keeps the user's input and the
//! assistant's reply, the gate judges each side by its role, facts are
//! attributed to who said them, and an exchange run elsewhere can be
//! recorded, once, however often the call is retried.

use std::sync::Arc;

use memloop::short_term::{Role, Turn};
use memloop::{
    Event, Exchanged, InProcessBuffer, Kind, ListQuery, LoopConfig, MemoryLoop, Scope,
    WritePipeline,
};

use crate::stub;

fn with_llm(dir: &std::path::Path, reply: &str, judged: &[&str]) -> (MemoryLoop, stub::LlmStub) {
    let stub = stub::start(vec![(200, reply.into())]);
    let mut cfg = LoopConfig::default();
    cfg.gate.judged_roles = judged.iter().map(|r| r.to_string()).collect();
    let lp = MemoryLoop::new(
        Arc::new(crate::open(dir)),
        Arc::new(InProcessBuffer::new()),
        cfg,
    )
    .unwrap()
    // Rules write the long-term memories: the stub only answers the chat.
    .with_writer(Arc::new(WritePipeline::new(None)))
    .with_llm(stub.llm());
    (lp, stub)
}

fn current(lp: &MemoryLoop, kind: Kind) -> Vec<String> {
    lp.memory()
        .list(&ListQuery {
            scope: Scope::user("alice"),
            kinds: vec![kind],
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|r| r.text)
        .collect()
}

#[test]
fn the_episode_holds_both_sides_and_the_assistants_words_are_not_user_facts() {
    let dir = tempfile::tempdir().unwrap();
    let (lp, _stub) = with_llm(
        dir.path(),
        "Good to know. I can't eat peanuts either, and I live in Oslo.",
        &["user"],
    );
    let out = lp
        .turn(
            &Scope::user("alice").with_session("s1"),
            "I'm allergic to peanuts.",
        )
        .unwrap();
    let episodes = current(&lp, Kind::Episode);
    assert_eq!(
        episodes,
        ["User: I'm allergic to peanuts.\nAssistant: Good to know. I can't eat peanuts either, and I live in Oslo."]
    );
    // The assistant's side was not judged (only "user" is), so nothing of it became a fact.
    let gates = &out.trace.gates;
    assert_eq!(gates.len(), 2, "{gates:?}");
    assert_eq!((gates[0].role, gates[0].persist), (Role::User, true));
    assert_eq!((gates[1].role, gates[1].persist), (Role::Assistant, false));
    let facts = current(&lp, Kind::Fact);
    assert!(
        facts.iter().any(|f| f.contains("allergic to peanuts")),
        "{facts:?}"
    );
    assert!(!facts.iter().any(|f| f.contains("Oslo")), "{facts:?}");
    assert!(out
        .trace
        .writes
        .iter()
        .filter(|w| w.kind == Kind::Fact)
        .all(|w| w.role == Some(Role::User)));
    // The reply's words are searchable through the episode.
    let hits = lp
        .memory()
        .search(&memloop::SearchQuery::new(Scope::user("alice"), "Oslo"))
        .unwrap();
    assert!(hits[0].record.text.contains("Oslo"), "{hits:?}");
}

#[test]
fn a_judged_assistant_side_gives_facts_attributed_to_the_assistant() {
    let dir = tempfile::tempdir().unwrap();
    let (lp, _stub) = with_llm(
        dir.path(),
        "I live in Oslo, as it happens.",
        &["user", "assistant"],
    );
    let out = lp
        .turn(&Scope::user("alice").with_session("s1"), "I live in Lyon.")
        .unwrap();
    let facts: Vec<(Option<Role>, String)> = out
        .trace
        .writes
        .iter()
        .filter(|w| w.kind == Kind::Fact && w.event == Event::Add)
        .map(|w| (w.role, w.memory.clone()))
        .collect();
    assert!(
        facts.contains(&(Some(Role::User), "User lives in Lyon".into())),
        "{facts:?}"
    );
    assert!(
        facts.contains(&(Some(Role::Assistant), "Assistant lives in Oslo".into())),
        "{facts:?}"
    );
    // Not a move of the user's: both stay current.
    let current = current(&lp, Kind::Fact);
    assert!(
        current.contains(&"User lives in Lyon".to_string()),
        "{current:?}"
    );
}

#[test]
fn a_recorded_exchange_is_written_once_however_often_it_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let lp = MemoryLoop::new(
        Arc::new(crate::open(dir.path())),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let scope = Scope::user("alice").with_session("s1");
    let messages = [
        Turn::new(Role::User, "I work as a nurse in Porto."),
        Turn::new(Role::Tool, "{\"weather\": \"sunny\"}"),
        Turn::new(Role::Assistant, "Nice, Porto is lovely."),
    ];
    let exchange = Exchanged {
        turn_id: Some("hook-42"),
        messages: &messages,
    };
    let first = lp.record(&scope, exchange).unwrap();
    assert!(!first.replayed);
    assert_eq!(first.turn_id, "hook-42");
    assert!(first.trace.recorded);
    assert!(first.trace.gate.persist, "{:?}", first.trace.gate);
    let added: Vec<&memloop::WriteEvent> = first
        .trace
        .writes
        .iter()
        .filter(|w| w.event == Event::Add)
        .collect();
    assert!(added
        .iter()
        .any(|w| w.kind == Kind::Episode && w.memory.contains("Porto is lovely")));
    assert!(
        added
            .iter()
            .any(|w| w.kind == Kind::Fact && w.role == Some(Role::User)),
        "{added:?}"
    );
    // A retried hook: nothing appended again, nothing stored twice.
    let again = lp.record(&scope, exchange).unwrap();
    assert!(again.replayed);
    assert!(
        again.trace.writes.iter().all(|w| w.event == Event::Noop),
        "{:?}",
        again.trace.writes
    );
    let buffer = lp.short_term().read("default", "s1").unwrap();
    assert_eq!(buffer.len(), 3, "{buffer:?}");
    let stats = lp.memory().stats().unwrap();
    assert_eq!(stats.current as usize, added.len());

    // Bad input is refused, saying what to send.
    let err = lp
        .record(
            &scope,
            Exchanged {
                turn_id: None,
                messages: &[],
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("at least one message"), "{err}");
    let err = lp
        .record(
            &scope,
            Exchanged {
                turn_id: Some("bad\nid"),
                messages: &messages,
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("turn id"), "{err}");
}

#[cfg(feature = "redis")]
#[test]
fn a_recorded_exchange_is_appended_once_on_redis_too() {
    let Ok(redis) = memloop::RedisBuffer::connect("redis://127.0.0.1:6379", 60) else {
        panic!("Redis must run on 127.0.0.1:6379 (scripts/services.sh starts it)");
    };
    let prefix = format!("memloop-test-{}", uuid::Uuid::now_v7());
    let redis = Arc::new(redis.with_prefix(prefix));
    let dir = tempfile::tempdir().unwrap();
    let lp = MemoryLoop::new(
        Arc::new(crate::open(dir.path())),
        redis.clone(),
        LoopConfig::default(),
    )
    .unwrap();
    let scope = Scope::user("alice").with_session("s1");
    let messages = [
        Turn::new(Role::User, "My dog is called Rex."),
        Turn::new(Role::Assistant, "Hello Rex!"),
    ];
    let exchange = Exchanged {
        turn_id: Some("t-1"),
        messages: &messages,
    };
    // Two racing retries: one appends.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| lp.record(&scope, exchange).unwrap());
        let b = s.spawn(|| lp.record(&scope, exchange).unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_ne!(a.replayed, b.replayed, "exactly one appended");
    use memloop::short_term::ShortTermStore;
    assert_eq!(redis.read("default", "s1").unwrap().len(), 2);
    // A purge of the user forgets the session and its record of exchanges.
    lp.forget(&Scope::user("alice"), true).unwrap();
    assert!(redis.read("default", "s1").unwrap().is_empty());
    let again = lp.record(&scope, exchange).unwrap();
    assert!(!again.replayed, "after a purge the exchange is new again");
}
