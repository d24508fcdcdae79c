//! The loop over a bounded short-term buffer: once a session's oldest
//! turns are dropped, the loop still sends the newest turns and the summary
//! still counts turns from the session's start.

use std::sync::Arc;

use memloop::short_term::{Role, ShortTermStore, Turn};
#[cfg(feature = "redis")]
use memloop::RedisBuffer;
use memloop::{InProcessBuffer, LoopConfig, MemoryLoop, Scope, ShortTermLimits as Limits};

fn scope(session: &str) -> Scope {
    Scope::user("alice").with_session(session)
}

#[cfg(feature = "redis")]
fn redis(max_turns_stored: usize) -> Arc<dyn ShortTermStore> {
    let url =
        std::env::var("MEMLOOP_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    Arc::new(
        RedisBuffer::connect(&url, 600)
            .expect("Redis must run on 127.0.0.1:6379")
            .with_prefix(format!("memloop-test:{}", uuid::Uuid::now_v7()))
            .with_max_turns_stored(max_turns_stored),
    )
}

fn in_process(max_turns_stored: usize) -> Arc<dyn ShortTermStore> {
    Arc::new(InProcessBuffer::with_limits(Limits {
        max_turns_stored,
        ..Limits::default()
    }))
}

/// 5,000 appends outside the loop (REST session messages) leave 200
/// turns; a turn then sends the newest ones, counts the session's turns
/// left out from its start, and folds the held ones it left out into a
/// summary covering turns by their number in the session.
fn many_appends_then_a_turn(buffer: Arc<dyn ShortTermStore>) {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(crate::open(dir.path()));
    let lp = MemoryLoop::new(memory, buffer, LoopConfig::default()).unwrap();
    let st = lp.short_term();
    for i in 0..5_000 {
        st.append_for(
            "default",
            Some("alice"),
            "long",
            &[Turn::new(
                Role::User,
                format!("My locker number {i} is painted blue."),
            )],
        )
        .unwrap();
    }
    let w = st.read_window("default", "long").unwrap();
    assert_eq!((w.first, w.turns.len()), (4_800, 200));

    let out = lp.turn(&scope("long"), "Which locker is mine?").unwrap();
    let req = out.request.unwrap();
    let shown = out.trace.turns_in_prompt;
    assert!((1..=12).contains(&shown), "{shown}");
    // The newest turns, in order, then the input.
    let msgs = &req.messages;
    for (k, m) in msgs[..shown].iter().enumerate() {
        let n = 5_000 - shown + k;
        assert_eq!(m.content, format!("My locker number {n} is painted blue."));
    }
    assert_eq!(msgs[shown].content, "Which locker is mine?");
    assert_eq!(out.trace.turns_left_out, 5_000 - shown);

    let summary = st.summary("default", "long").unwrap().unwrap();
    assert_eq!(
        summary.covers,
        5_000 - shown,
        "counted from the session's start"
    );
    let newest_folded = format!("locker number {} is", 5_000 - shown - 1);
    assert!(summary.text.contains(&newest_folded), "{}", summary.text);
    assert!(!summary.text.contains("number 4799 "), "{}", summary.text);
    assert!(
        out.trace
            .notes
            .iter()
            .any(|n| n.starts_with("4800 turns left the short-term buffer")),
        "{:?}",
        out.trace.notes
    );

    // The next turn sees the exchange just appended and folds on from
    // where the summary stopped.
    let next = lp.turn(&scope("long"), "And the colour?").unwrap();
    let req = next.request.unwrap();
    let n = req.messages.len();
    assert_eq!(req.messages[n - 2].content, "Which locker is mine?");
    assert_eq!(req.messages[n - 1].content, "And the colour?");
    let later = st.summary("default", "long").unwrap().unwrap();
    assert_eq!(later.covers, next.trace.turns_left_out);
    assert!(later.covers > summary.covers);
    assert!(!next
        .trace
        .notes
        .iter()
        .any(|n| n.contains("left the short-term buffer")));
    st.clear("default", "long").unwrap();
}

#[test]
fn many_appends_then_a_turn_in_process() {
    many_appends_then_a_turn(in_process(200));
}

#[cfg(feature = "redis")]
#[test]
fn many_appends_then_a_turn_on_redis() {
    many_appends_then_a_turn(redis(200));
}

/// A session driven by the loop alone, with a buffer just larger than the
/// window: every dropped turn was folded first, so the summary still holds
/// the session's first words and nothing is reported lost.
fn loop_turns_trim_only_what_was_folded(buffer: Arc<dyn ShortTermStore>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LoopConfig::default();
    cfg.budget.max_turns = 4;
    cfg.summary_tokens = 2_000;
    let memory = Arc::new(crate::open(dir.path()));
    let lp = MemoryLoop::new(memory, buffer, cfg).unwrap();
    let mut last = None;
    for i in 0..15 {
        let text = format!("My project number {i} is a compiler written in Rust for robots.");
        let out = lp.turn(&scope("folded"), &text).unwrap();
        assert!(
            !out.trace
                .notes
                .iter()
                .any(|n| n.contains("left the short-term buffer")),
            "{:?}",
            out.trace.notes
        );
        last = Some(out);
    }
    let last = last.unwrap();
    let w = lp.short_term().read_window("default", "folded").unwrap();
    assert_eq!((w.first, w.turns.len()), (9, 6), "15 inputs, 6 kept");
    assert_eq!(last.trace.turns_in_prompt, 4);
    assert_eq!(last.trace.turns_left_out, 10);
    let summary = lp
        .short_term()
        .summary("default", "folded")
        .unwrap()
        .unwrap();
    assert_eq!(summary.covers, 10);
    for i in [0, 5, 9] {
        assert!(
            summary.text.contains(&format!("project number {i} ")),
            "{i}: {}",
            summary.text
        );
    }
    let req = last.request.unwrap();
    assert!(req.system.contains("project number 0"), "{}", req.system);
    assert!(req.messages[0].content.contains("project number 10 "));
    lp.short_term().clear("default", "folded").unwrap();
}

#[test]
fn loop_turns_trim_only_what_was_folded_in_process() {
    loop_turns_trim_only_what_was_folded(in_process(6));
}

#[cfg(feature = "redis")]
#[test]
fn loop_turns_trim_only_what_was_folded_on_redis() {
    loop_turns_trim_only_what_was_folded(redis(6));
}
