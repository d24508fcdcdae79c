//! Supersession reaches the evidence: when a fact is replaced, the
//! episodes it was distilled from are known to hold a stale claim; search
//! ranks them below the current fact and names it, and the loop's prompt
//! shows them as no longer true (or leaves them out).

use std::sync::Arc;

use memloop::{
    InProcessBuffer, Kind, LoopConfig, MemoryLoop, RememberOptions, Scope, SearchQuery,
    StaleMemories,
};

fn carol_loop(dir: &std::path::Path, cfg: LoopConfig) -> MemoryLoop {
    let memory = Arc::new(crate::open(dir));
    MemoryLoop::new(memory, Arc::new(InProcessBuffer::new()), cfg).unwrap()
}

fn remember(lp: &MemoryLoop, scope: &Scope, text: &str) {
    let r = lp
        .remember(scope, text, RememberOptions::default())
        .unwrap();
    assert!(r.gate.persist, "{text}: {}", r.gate.reason);
}

#[test]
fn a_moved_user_is_found_in_the_new_city_and_the_old_episode_says_it_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let lp = carol_loop(dir.path(), LoopConfig::default());
    let carol = Scope::user("carol");
    remember(&lp, &carol, "I live in Paris and work as a nurse.");
    remember(&lp, &carol, "I have a sister who loves sailing.");
    remember(&lp, &carol, "I moved to Berlin last month.");

    let m = lp.memory();
    let hits = m
        .search(&SearchQuery::new(carol.clone(), "where does carol live"))
        .unwrap();
    let top = &hits[0];
    assert_eq!(top.record.kind, Kind::Fact, "{hits:#?}");
    assert!(top.record.text.contains("Berlin"), "{hits:#?}");
    assert!(top.superseded_by.is_none());

    // The Paris episode is still there (it is what was said) but marked,
    // naming the Berlin fact, and ranked below it.
    let paris = hits
        .iter()
        .position(|h| h.record.kind == Kind::Episode && h.record.text.contains("Paris"))
        .expect("the Paris episode is among the hits");
    let replaced = hits[paris].superseded_by.as_ref().unwrap();
    assert_eq!(replaced.id, top.record.id);
    assert_eq!(replaced.text, top.record.text);
    assert!(paris > 0 && hits[paris].score < top.score);

    // Only the evidence of the superseded fact is marked: the sister's
    // episode and the facts still true are not.
    for h in &hits {
        let stale = h.superseded_by.is_some();
        let evidence = h.record.kind == Kind::Episode && h.record.text.contains("Paris");
        assert_eq!(stale, evidence, "{h:#?}");
    }
    let nurse = m
        .search(&SearchQuery::new(carol.clone(), "what is carol's job"))
        .unwrap();
    assert!(
        nurse
            .iter()
            .any(|h| h.record.kind == Kind::Fact && h.record.text.contains("nurse")),
        "{nurse:#?}"
    );

    // The JSON a REST or MCP client gets names the replacement.
    let json = serde_json::to_value(&hits[paris]).unwrap();
    assert_eq!(json["superseded_by"]["id"], top.record.id.as_str());
    assert_eq!(json["superseded_by"]["memory"], top.record.text.as_str());
}

#[test]
fn a_second_move_points_the_first_episode_at_the_latest_city() {
    let dir = tempfile::tempdir().unwrap();
    let lp = carol_loop(dir.path(), LoopConfig::default());
    let carol = Scope::user("carol");
    remember(&lp, &carol, "I live in Paris.");
    remember(&lp, &carol, "I moved to Berlin last month.");
    remember(&lp, &carol, "I moved to Munich last week.");
    let hits = lp
        .memory()
        .search(&SearchQuery::new(carol, "where does carol live"))
        .unwrap();
    let paris = hits
        .iter()
        .find(|h| h.record.kind == Kind::Episode && h.record.text.contains("Paris"))
        .expect("the Paris episode is among the hits");
    let now = &paris.superseded_by.as_ref().unwrap().text;
    assert!(now.contains("Munich"), "{now}");
}

#[test]
fn the_prompt_shows_a_stale_episode_as_no_longer_true_or_leaves_it_out() {
    for (stale, shown) in [
        (StaleMemories::Annotate, true),
        (StaleMemories::Omit, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LoopConfig {
            stale,
            ..LoopConfig::default()
        };
        let lp = carol_loop(dir.path(), cfg);
        let carol = Scope::user("carol");
        remember(&lp, &carol, "I live in Paris and work as a nurse.");
        remember(&lp, &carol, "I moved to Berlin last month.");

        let (request, trace) = lp
            .context(&carol.clone().with_session("s2"), "Where do I live now?")
            .unwrap();
        let prompt = serde_json::to_string(&request).unwrap();
        assert!(prompt.contains("Berlin"), "{prompt}");
        assert_eq!(
            prompt.contains("I live in Paris and work as a nurse. (no longer true; now: "),
            shown,
            "{stale:?}: {prompt}"
        );
        // The trace lists exactly what went into the prompt.
        let traced_paris = trace.retrieved.iter().find(|r| r.memory.contains("Paris"));
        assert_eq!(traced_paris.is_some(), shown, "{stale:?}");
        if let Some(r) = traced_paris {
            assert!(r.included && r.superseded_by.is_some(), "{r:?}");
        }
    }
}
