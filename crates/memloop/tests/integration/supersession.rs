//! Supersession stays narrow: a fact retires only a fact about the same
//! subject and attribute (or the same subject and value), in rules mode
//! and in LLM mode alike; an LLM op outside that set is refused, noted in
//! the report, and the fact decided by the rules.

use memloop::{Event, Kind, ListQuery, LongTermWriter, Memory, Scope, TurnToWrite, WritePipeline};

use crate::stub;

const NOV_15_2026: i64 = 1_794_744_000_000;

fn write(
    p: &WritePipeline,
    m: &Memory,
    scope: &Scope,
    turn_id: &str,
    text: &str,
) -> memloop::WriteReport {
    let turn = TurnToWrite::message(
        scope,
        turn_id,
        memloop::short_term::Role::User,
        text,
        NOV_15_2026,
    );
    p.write(m, &turn).unwrap()
}

fn current_facts(m: &Memory, scope: &Scope) -> Vec<String> {
    let mut out: Vec<String> = m
        .list(&ListQuery {
            scope: scope.clone(),
            kinds: vec![Kind::Fact],
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|r| r.text)
        .collect();
    out.sort();
    out
}

fn retired(r: &memloop::WriteReport) -> usize {
    r.events
        .iter()
        .filter(|e| matches!(e.event, Event::Update | Event::Delete))
        .count()
}

#[test]
fn rules_never_retire_a_similar_fact_about_something_else() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let p = WritePipeline::new(None);
    let u = Scope::user("ann").with_session("s1");
    write(&p, &m, &u, "t1", "I like tea.");
    let r = write(&p, &m, &u, "t2", "I like green tea in the morning.");
    assert_eq!(retired(&r), 0, "{:?}", r.events);
    write(&p, &m, &u, "t3", "My sister Anna lives in Rome.");
    let r = write(&p, &m, &u, "t4", "My other sister Maria lives in Madrid.");
    assert_eq!(retired(&r), 0, "{:?}", r.events);
    let facts = current_facts(&m, &u);
    for want in [
        "User likes tea",
        "User likes green tea in the morning",
        "User's sister Anna lives in Rome",
        "User's other sister Maria lives in Madrid",
    ] {
        assert!(
            facts.iter().any(|f| f == want),
            "{want} missing from {facts:?}"
        );
    }
    // The same sister moving is still a change of her city.
    let r = write(&p, &m, &u, "t5", "My sister Anna moved to Naples.");
    assert!(
        r.events.iter().any(|e| e.event == Event::Update
            && e.previous_memory.as_deref() == Some("User's sister Anna lives in Rome")),
        "{:?}",
        r.events
    );
}

fn reply(facts: serde_json::Value) -> (u16, String) {
    (200, serde_json::json!({ "facts": facts }).to_string())
}

/// The index the prompt shows a stored memory under ("[3] text").
fn shown_as(body: &serde_json::Value, text: &str) -> Option<i64> {
    let prompt = body["messages"][1]["content"].as_str()?;
    prompt.lines().find_map(|l| {
        let (i, t) = l.strip_prefix('[')?.split_once("] ")?;
        (t == text).then(|| i.parse().ok())?
    })
}

#[test]
fn an_llm_update_outside_the_slot_is_refused_and_decided_by_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let stub = stub::start_with(|n, body| match n {
        0 => reply(serde_json::json!([
            {"text": "User likes tea", "subject": "user", "attribute": "likes", "value": "tea", "op": "ADD"},
            {"text": "User's sister lives in Rome", "subject": "user's sister", "attribute": "lives_in",
             "value": "Rome", "entities": ["Anna", "Rome"], "op": "ADD"}
        ])),
        // The over-eager graph-memory mistake, twice.
        _ => reply(serde_json::json!([
            {"text": "User likes green tea in the morning", "subject": "user", "attribute": "likes",
             "value": "green tea in the morning", "op": "UPDATE", "target": shown_as(body, "User likes tea")},
            {"text": "User's sister lives in Madrid", "subject": "user's sister", "attribute": "lives_in",
             "value": "Madrid", "entities": ["Maria", "Madrid"], "op": "UPDATE",
             "target": shown_as(body, "User's sister lives in Rome")}
        ])),
    });
    let p = WritePipeline::new(Some(stub.llm()));
    let u = Scope::user("ann").with_session("s1");
    write(
        &p,
        &m,
        &u,
        "t1",
        "I like tea. My sister Anna lives in Rome.",
    );
    let r = write(
        &p,
        &m,
        &u,
        "t2",
        "I like green tea in the morning. My sister Maria lives in Madrid.",
    );
    assert_eq!(retired(&r), 0, "{:?}", r.events);
    let refusals: Vec<&String> = r
        .notes
        .iter()
        .filter(|n| n.contains("refused the LLM's Update"))
        .collect();
    assert_eq!(refusals.len(), 2, "{:?}", r.notes);
    assert!(refusals[0].contains("side by side"), "{}", refusals[0]);
    assert!(
        refusals[1].contains("anna") && refusals[1].contains("maria"),
        "{}",
        refusals[1]
    );
    assert_eq!(
        current_facts(&m, &u),
        [
            "User likes green tea in the morning",
            "User likes tea",
            "User's sister lives in Madrid",
            "User's sister lives in Rome"
        ]
    );
    // Each refused fact was decided by the rules (an ADD), and says so.
    assert!(r
        .events
        .iter()
        .filter(|e| e.kind == Kind::Fact)
        .all(|e| e.event == Event::Add && e.reason.contains("rules")));
}
