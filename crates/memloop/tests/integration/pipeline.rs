//! The long-term write pipeline: rules offline, one LLM call per turn with
//! a loopback stub, supersession with history, idempotent replay, outbox.

use memloop::{
    Event, Kind, ListQuery, LongTermWriter, Memory, Scope, SearchQuery, TurnToWrite, WritePipeline,
    WriteReport,
};

use crate::stub;

const NOV_15_2026: i64 = 1_794_744_000_000;
const SEP_1_2026: i64 = 1_788_220_800_000;
const SEP_15_2026: i64 = 1_789_430_400_000;

fn write(p: &WritePipeline, m: &Memory, scope: &Scope, turn_id: &str, text: &str) -> WriteReport {
    write_at(p, m, scope, turn_id, text, NOV_15_2026)
}

fn write_at(
    p: &WritePipeline,
    m: &Memory,
    scope: &Scope,
    turn_id: &str,
    text: &str,
    at: i64,
) -> WriteReport {
    let turn = TurnToWrite::message(scope, turn_id, memloop::short_term::Role::User, text, at);
    p.write(m, &turn).unwrap()
}

fn facts(m: &Memory, scope: &Scope, include_superseded: bool) -> Vec<memloop::MemoryRecord> {
    m.list(&ListQuery {
        scope: scope.clone(),
        kinds: vec![Kind::Fact],
        include_superseded,
        ..Default::default()
    })
    .unwrap()
}

fn events(r: &WriteReport, kind: Kind) -> Vec<(Event, String)> {
    r.events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| (e.event, e.memory.clone()))
        .collect()
}

#[test]
fn offline_a_move_supersedes_keeps_history_and_replay_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let p = WritePipeline::new(None);
    let alice = Scope::user("alice").with_session("s1");

    let first = write_at(&p, &m, &alice, "t1", "I live in Paris.", SEP_1_2026);
    assert_eq!(
        events(&first, Kind::Fact),
        vec![(Event::Add, "User lives in Paris".into())]
    );
    assert_eq!(events(&first, Kind::Episode)[0].0, Event::Add);
    let paris_id = first
        .events
        .iter()
        .find(|e| e.kind == Kind::Fact)
        .unwrap()
        .id
        .clone();

    let moved = write(&p, &m, &alice, "t2", "I moved to Berlin last month.");
    let update = moved.events.iter().find(|e| e.kind == Kind::Fact).unwrap();
    assert_eq!(update.event, Event::Update, "{moved:?}");
    assert!(update.memory.contains("Berlin"));
    assert_eq!(
        update.previous_memory.as_deref(),
        Some("User lives in Paris")
    );
    assert!(
        moved.notes.iter().any(|n| n.contains("supersedes")),
        "{:?}",
        moved.notes
    );

    // Berlin is current; Paris is kept with a validity end and its history.
    let current = facts(&m, &alice, false);
    assert_eq!(current.len(), 1);
    assert!(
        current[0].text.contains("Berlin (since October 2026)"),
        "{}",
        current[0].text
    );
    assert_eq!(current[0].provenance.turn_ids, vec!["t2"]);
    assert_eq!(current[0].provenance.source, "rules");
    assert!(current[0].provenance.confidence.is_some());
    let paris = m
        .get_with(
            Scope::DEFAULT_TENANT,
            &paris_id,
            memloop::Lookup::IncludeDeleted,
        )
        .unwrap();
    assert!(paris.valid_until.is_some());
    assert_eq!(facts(&m, &alice, true).len(), 2);
    let history = m.history(&paris_id).unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.event, Event::Update);
    assert_eq!(last.old_memory.as_deref(), Some("User lives in Paris"));
    assert!(last.new_memory.as_deref().unwrap().contains("Berlin"));
    assert!(last.reason.as_deref().unwrap().contains("superseded by"));
    // Paris was true until Berlin began (October 2026), and was the truth in mid-September.
    assert_eq!(paris.valid_until, current[0].valid_from.into());
    let before = m
        .list(&ListQuery {
            scope: alice.clone(),
            kinds: vec![Kind::Fact],
            as_of: Some(SEP_15_2026),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].text, "User lives in Paris");
    // Search looks into the past the same way; by default it sees only now.
    let mut q = SearchQuery::new(alice.clone(), "where does the user live?");
    q.kinds = vec![Kind::Fact];
    let now: Vec<String> = m
        .search(&q)
        .unwrap()
        .into_iter()
        .map(|h| h.record.text)
        .collect();
    assert_eq!(now.len(), 1);
    assert!(now[0].contains("Berlin"));
    q.as_of = Some(SEP_15_2026);
    let then: Vec<String> = m
        .search(&q)
        .unwrap()
        .into_iter()
        .map(|h| h.record.text)
        .collect();
    assert_eq!(then, vec!["User lives in Paris"]);
    q.as_of = None;
    q.include_superseded = true;
    assert_eq!(m.search(&q).unwrap().len(), 2);

    // The same turn again: nothing changes.
    let stats = m.stats().unwrap();
    let again = write(&p, &m, &alice, "t2", "I moved to Berlin last month.");
    assert!(
        again.events.iter().all(|e| e.event == Event::Noop),
        "{again:?}"
    );
    assert_eq!(m.stats().unwrap().memories, stats.memories);

    // A retraction ends the fact's validity.
    let gone = write(&p, &m, &alice, "t3", "I no longer live in Berlin.");
    assert_eq!(events(&gone, Kind::Fact)[0].0, Event::Delete, "{gone:?}");
    assert!(facts(&m, &alice, false).is_empty());
    // Another user is untouched by all of this.
    assert!(facts(&m, &Scope::user("bob"), true).is_empty());
}

fn reply(facts: serde_json::Value) -> (u16, String) {
    (200, serde_json::json!({ "facts": facts }).to_string())
}

/// The index the prompt shows a stored memory under ("[3] text").
fn shown_as(body: &serde_json::Value, text: &str) -> Option<i64> {
    let prompt = body["messages"][1]["content"].as_str()?;
    prompt.lines().find_map(|l| {
        let rest = l.strip_prefix('[')?;
        let (i, t) = rest.split_once("] ")?;
        (t == text).then(|| i.parse().ok())?
    })
}

#[test]
fn llm_mode_applies_every_event_in_one_call_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let stub = stub::start_with(|n, body| match n {
        0 => reply(serde_json::json!([
            {"text": "User lives in Paris", "subject": "user", "attribute": "lives_in", "value": "Paris", "op": "ADD"},
            {"text": "User likes jazz", "op": "ADD", "importance": 0.4}
        ])),
        1 => reply(serde_json::json!([
            {"text": "User lives in Berlin", "attribute": "lives_in", "value": "Berlin", "date": "2026-10-01",
             "op": "UPDATE", "target": shown_as(body, "User lives in Paris")},
            {"text": "User likes jazz", "op": "NOOP", "target": shown_as(body, "User likes jazz")}
        ])),
        _ => reply(serde_json::json!([
            {"text": "User likes jazz", "op": "DELETE", "target": shown_as(body, "User likes jazz")}
        ])),
    });
    let p = WritePipeline::new(Some(stub.llm()));
    let alice = Scope::user("alice").with_session("s1");

    let r1 = write(&p, &m, &alice, "t1", "I live in Paris and I love jazz.");
    assert_eq!(r1.llm_calls, 1);
    assert_eq!(events(&r1, Kind::Fact).len(), 2);
    assert_eq!(
        facts(&m, &alice, false)[0].provenance.source,
        "llm:openai:stub-model"
    );

    let r2 = write(&p, &m, &alice, "t2", "I moved to Berlin; still into jazz.");
    assert_eq!(r2.llm_calls, 1);
    let ev = events(&r2, Kind::Fact);
    assert!(
        ev.contains(&(Event::Update, "User lives in Berlin".into())),
        "{ev:?}"
    );
    assert!(
        ev.contains(&(Event::Noop, "User likes jazz".into())),
        "{ev:?}"
    );
    // The prompt showed the stored facts as small integers, not ids.
    let prompt = stub.bodies()[1]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("] User lives in Paris"), "{prompt}");
    assert!(!prompt.contains(&facts(&m, &alice, true)[0].id));
    let berlin = facts(&m, &alice, false)
        .into_iter()
        .find(|r| r.text.contains("Berlin"))
        .unwrap();
    assert_eq!(berlin.provenance.turn_ids, vec!["t2"]);

    let r3 = write(&p, &m, &alice, "t3", "Actually I'm over jazz.");
    let ev = events(&r3, Kind::Fact);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].0, Event::Delete, "{r3:?}");
    let current: Vec<String> = facts(&m, &alice, false)
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert_eq!(current, vec!["User lives in Berlin"]);
}

#[test]
fn an_invented_target_is_rejected_and_the_fact_judged_by_rules() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let stub = stub::start(vec![reply(serde_json::json!([
        {"text": "User owns a cat named Miso", "op": "UPDATE", "target": 7}
    ]))]);
    let p = WritePipeline::new(Some(stub.llm()));
    let alice = Scope::user("alice").with_session("s1");
    let r = write(&p, &m, &alice, "t1", "I have a cat named Miso.");
    assert!(
        r.notes.iter().any(|n| n.contains("rejected")),
        "{:?}",
        r.notes
    );
    let ev = events(&r, Kind::Fact);
    assert_eq!(ev, vec![(Event::Add, "User owns a cat named Miso".into())]);
}

/// A second writer on the same data directory (another process, as far as
/// the store can tell) supersedes Paris by Rome while the LLM is deciding
/// to supersede Paris by Madrid: the decision is out of date when it is
/// applied, so the fact is decided again against the store as it is then
/// and supersedes Rome; nothing waits in the outbox, one place is current.
#[test]
fn a_target_superseded_meanwhile_by_another_writer_is_decided_again() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let alice = Scope::user("alice").with_session("s1");
    let (path, other_alice) = (dir.path().to_path_buf(), alice.clone());
    let stub = stub::start_with(move |n, body| {
        if n == 0 {
            return reply(serde_json::json!([
                {"text": "User lives in Paris", "attribute": "lives_in", "value": "Paris", "op": "ADD"}
            ]));
        }
        let other = crate::open(&path);
        write(
            &WritePipeline::new(None),
            &other,
            &other_alice,
            "elsewhere",
            "I moved to Rome.",
        );
        reply(serde_json::json!([
            {"text": "User lives in Madrid", "attribute": "lives_in", "value": "Madrid",
             "op": "UPDATE", "target": shown_as(body, "User lives in Paris")}
        ]))
    });
    let p = WritePipeline::new(Some(stub.llm()));
    write(&p, &m, &alice, "t1", "I live in Paris.");
    let r = write(&p, &m, &alice, "t2", "I moved to Madrid.");
    assert!(r.deferred.is_none(), "{r:?}");
    assert!(
        r.notes.iter().any(|n| n.contains("stopped being current")),
        "{:?}",
        r.notes
    );
    let updates: Vec<Option<&str>> = r
        .events
        .iter()
        .filter(|e| e.kind == Kind::Fact && e.event == Event::Update)
        .map(|e| e.previous_memory.as_deref())
        .collect();
    assert_eq!(updates, vec![Some("User lives in Rome")], "{r:?}");
    let current: Vec<String> = facts(&m, &alice, false)
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert_eq!(current, vec!["User lives in Madrid"]);
    assert_eq!(m.store().outbox_len().unwrap(), 0);
}

#[test]
fn malformed_output_and_timeouts_queue_the_turn_and_later_turns_replay_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let stub = stub::start_with(|n, body| {
        let prompt = body["messages"][1]["content"].as_str().unwrap_or("");
        match n {
            0 => (
                200,
                "Sure! Here are the facts: the user lives in Paris".into(),
            ),
            2 | 3 => (599, String::new()),
            _ if prompt.contains("I live in Paris") => {
                reply(serde_json::json!([{"text": "User lives in Paris", "op": "ADD"}]))
            }
            _ if prompt.contains("I have a dog") => {
                reply(serde_json::json!([{"text": "User has a dog", "op": "ADD"}]))
            }
            _ => reply(serde_json::json!([])),
        }
    });
    let p = WritePipeline::new(Some(stub.llm()));
    let alice = Scope::user("alice").with_session("s1");

    let r1 = write(&p, &m, &alice, "t1", "I live in Paris.");
    assert!(
        r1.deferred
            .as_deref()
            .unwrap()
            .contains("not the expected JSON"),
        "{r1:?}"
    );
    assert_eq!(
        events(&r1, Kind::Episode).len(),
        1,
        "the turn itself is kept"
    );
    assert_eq!(m.store().outbox_len().unwrap(), 1);

    // The next turn replays the queued one first; its own call then times
    // out (with one retry), so it is queued in turn: nothing lost.
    let r2 = write(&p, &m, &alice, "t2", "I have a dog.");
    assert!(r2.notes.iter().any(|n| n.contains("replayed")), "{r2:?}");
    assert!(r2.deferred.as_deref().unwrap().contains("timed out") || r2.deferred.is_some());
    let texts: Vec<String> = facts(&m, &alice, false)
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert_eq!(texts, vec!["User lives in Paris"]);
    assert_eq!(m.store().outbox_len().unwrap(), 1);

    // `memloop gc` replays what is left, due or not.
    assert_eq!(p.drain_outbox(&m, 10, true).unwrap().len(), 1);
    assert_eq!(m.store().outbox_len().unwrap(), 0);
    assert_eq!(facts(&m, &alice, false).len(), 2);
    // Replaying once more adds nothing.
    assert!(p.drain_outbox(&m, 10, true).unwrap().is_empty());
    let again = write(&p, &m, &alice, "t1", "I live in Paris.");
    assert!(
        again.events.iter().all(|e| e.event == Event::Noop),
        "{again:?}"
    );
    assert_eq!(facts(&m, &alice, false).len(), 2);
}
