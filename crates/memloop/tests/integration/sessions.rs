//! Sessions on a time axis through the facade: conversations remembered
//! with their own past times (`RememberOptions::at`, the same `at` a loop
//! turn carries) are numbered by when they were said, not when written.

use std::sync::Arc;

use memloop::{InProcessBuffer, Kind, Layers, LoopConfig, MemoryLoop, RememberOptions, Scope};

const DAY: i64 = 86_400_000;

#[test]
fn remembered_conversations_sit_where_they_were_said() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(crate::open(dir.path()));
    let lp = MemoryLoop::new(
        memory.clone(),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let t0 = memloop::filter::parse_date("2023-05-01").unwrap();
    // Imported newest first: the ordinals must follow the days said.
    let talks = [
        ("s3", 20, "I adopted a cat named Miso."),
        ("s1", 0, "I work as a nurse in Leeds."),
        ("s2", 7, "My sister Anna lives in Porto."),
    ];
    for (session, day, text) in talks {
        let scope = Scope::user("dana").with_session(session);
        let at = t0 + day * DAY;
        let r = lp
            .remember(
                &scope,
                text,
                RememberOptions {
                    skip_gate: true,
                    at: Some(at),
                    ..RememberOptions::default()
                },
            )
            .unwrap();
        assert!(!r.events.is_empty(), "{text}: {r:?}");
        // Every memory written carries the time it was said.
        for e in &r.events {
            let rec = memory.get(&e.id).unwrap();
            assert_eq!(rec.valid_from, at, "{} ({:?})", rec.text, rec.kind);
            assert_eq!(rec.scope.session_id.as_deref(), Some(session));
        }
    }
    let sessions = memory.sessions(&Scope::user("dana")).unwrap();
    let got: Vec<(&str, u32, i64, i64)> = sessions
        .iter()
        .map(|s| (s.id.as_str(), s.ordinal, s.started_at, s.ended_at))
        .collect();
    assert_eq!(
        got,
        vec![
            ("s3", 3, t0 + 20 * DAY, t0 + 20 * DAY),
            ("s2", 2, t0 + 7 * DAY, t0 + 7 * DAY),
            ("s1", 1, t0, t0),
        ]
    );
    // The episode and the facts distilled from it are counted.
    for s in &sessions {
        let listed = memory
            .list(&memloop::ListQuery {
                scope: Scope::user("dana").with_session(s.id.clone()),
                limit: 100,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(s.memories as usize, listed.len(), "{}", s.id);
        assert!(listed.iter().any(|r| r.kind == Kind::Episode), "{}", s.id);
    }
    assert!(memory.sessions(&Scope::user("nobody")).unwrap().is_empty());
    assert!(memory.sessions(&Scope::default()).is_err());
}

/// In a loop turn, "the last session" is the one before the session going
/// on (which has started, but is not past): the turn's search keeps to it,
/// and the trace says how the input was read; in either layer mode.
#[test]
fn a_loop_turn_asking_about_the_last_session_recalls_that_session() {
    for layers in [Layers::Two, Layers::Three] {
        last_session_recalled(layers);
    }
}

fn last_session_recalled(layers: Layers) {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(crate::open(dir.path()));
    let cfg = LoopConfig {
        layers,
        ..LoopConfig::default()
    };
    let lp = MemoryLoop::new(memory.clone(), Arc::new(InProcessBuffer::new()), cfg).unwrap();
    let now = memloop::now_millis();
    let talks = [
        ("s1", 21, "I am repainting the hallway a pale green."),
        ("s2", 14, "I booked a ferry to the islands for August."),
        ("s3", 7, "I want to learn to bake sourdough bread."),
    ];
    for (session, days_ago, text) in talks {
        lp.remember(
            &Scope::user("eve").with_session(session),
            text,
            RememberOptions {
                skip_gate: true,
                at: Some(now - days_ago * DAY),
                ..RememberOptions::default()
            },
        )
        .unwrap();
    }
    // The session going on already holds a memory of its own.
    let today = Scope::user("eve").with_session("s4");
    lp.remember(
        &today,
        "I adopted a grey kitten this morning.",
        RememberOptions {
            skip_gate: true,
            ..RememberOptions::default()
        },
    )
    .unwrap();
    let out = lp
        .context(&today, "What did we talk about in the last session?")
        .unwrap()
        .1;
    let time = out.time.as_ref().expect("the input's time was read");
    assert_eq!(time.session.as_deref(), Some("s3"), "{layers:?}: {time:?}");
    assert!(!out.retrieved.is_empty(), "{layers:?}: {out:?}");
    for m in &out.retrieved {
        let rec = memory.get(&m.id).unwrap();
        assert_eq!(rec.scope.session_id.as_deref(), Some("s3"), "{}", m.memory);
    }
    // Without a time in the words, nothing is read and the search is whole.
    let plain = lp.context(&today, "What do I want to bake?").unwrap().1;
    assert!(plain.time.is_none(), "{layers:?}: {:?}", plain.time);
    assert!(plain
        .retrieved
        .iter()
        .any(|m| m.memory.contains("sourdough")));
}
