//! The loop end to end: real store, real model, real Redis, loopback LLM.

use std::sync::Arc;

#[cfg(feature = "redis")]
use memloop::short_term::ShortTermStore;
#[cfg(feature = "redis")]
use memloop::RedisBuffer;
use memloop::{InProcessBuffer, LoopConfig, MemoryLoop, Scope};

use crate::stub;

fn offline(dir: &std::path::Path) -> MemoryLoop {
    let memory = Arc::new(crate::open(dir));
    MemoryLoop::new(
        memory,
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap()
}

fn scope(session: &str) -> Scope {
    Scope::user("alice").with_session(session)
}

#[test]
fn facts_from_one_session_are_recalled_in_the_next_and_chit_chat_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let lp = offline(dir.path());
    let hello = lp.turn(&scope("s1"), "Hi there!").unwrap();
    assert!(!hello.trace.gate.persist, "{:?}", hello.trace.gate);
    assert!(hello.trace.writes.is_empty());
    assert_eq!(hello.reply, None, "offline: no model reply");

    let fact = lp
        .turn(&scope("s1"), "I'm allergic to peanuts and I live in Lyon.")
        .unwrap();
    assert!(fact.trace.gate.persist, "{:?}", fact.trace.gate);
    // The episode as said, and the facts distilled from it.
    let kinds: Vec<_> = fact.trace.writes.iter().map(|w| w.kind).collect();
    assert!(
        kinds.contains(&memloop::Kind::Episode),
        "{:?}",
        fact.trace.writes
    );
    assert!(
        fact.trace
            .writes
            .iter()
            .any(|w| w.memory.contains("Lyon") && w.kind == memloop::Kind::Fact),
        "{:?}",
        fact.trace.writes
    );
    assert!(!fact.trace.gate.reason.is_empty());

    // A new session: the buffer is empty, the long-term store remembers.
    let ask = lp
        .turn(&scope("s2"), "Which foods should I avoid?")
        .unwrap();
    let top = &ask.trace.retrieved[0];
    assert!(top.memory.contains("peanuts"), "{:?}", ask.trace.retrieved);
    assert!(top.included);
    let req = ask.request.unwrap();
    assert!(req.system.contains("allergic to peanuts"));
    assert_eq!(req.messages.len(), 1, "no turns of session s2 yet");
    assert_eq!(ask.trace.turns_in_prompt, 0);
    assert_eq!(
        ask.trace.tokens.input.total_input,
        ask.trace.tokens.input.system
            + ask.trace.tokens.input.memories
            + ask.trace.tokens.input.summary
            + ask.trace.tokens.input.turns
            + ask.trace.tokens.input.input
    );
    // Nothing twice: within s1 the fact is in the buffer, so not a memory line.
    let again = lp.turn(&scope("s1"), "Where do I live?").unwrap();
    let lyon = again
        .trace
        .retrieved
        .iter()
        .find(|m| m.memory == "I'm allergic to peanuts and I live in Lyon.")
        .unwrap();
    assert!(!lyon.included, "already in the window as a turn");
    assert!(again.trace.timings.total_us >= again.trace.timings.overhead_us);
}

#[test]
fn the_prompt_goes_to_the_llm_memories_in_system_turns_as_messages() {
    let dir = tempfile::tempdir().unwrap();
    let stub = stub::start(vec![(200, "Noted, Lyon it is.".into())]);
    // Rules write the long-term memories, so the stub only sees chat turns.
    let lp = offline(dir.path())
        .with_writer(Arc::new(memloop::WritePipeline::new(None)))
        .with_llm(stub.llm());
    lp.turn(&scope("s1"), "I live in Lyon with my cat Miso.")
        .unwrap();
    let out = lp.turn(&scope("s2"), "What is my cat called?").unwrap();
    assert_eq!(out.reply.as_deref(), Some("Noted, Lyon it is."));
    assert_eq!(out.trace.model.as_deref(), Some("stub-model"));
    assert_eq!(out.trace.tokens.reply, 7, "the provider's count");
    let bodies = stub.bodies();
    assert_eq!(bodies.len(), 2);
    let msgs = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert!(msgs[0]["content"].as_str().unwrap().contains("my cat Miso"));
    assert_eq!(msgs.last().unwrap()["content"], "What is my cat called?");
    assert_eq!(msgs.len(), 2, "system + the new turn: s2 had no turns yet");
    // Session s1's buffer has the user turn and the reply.
    let s1 = lp.short_term().read("default", "s1").unwrap();
    assert_eq!(s1.len(), 2);
    assert_eq!(s1[1].role, "assistant");
}

#[test]
fn a_failing_llm_fails_the_turn_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stub = stub::start(vec![(401, "bad key".into())]);
    let lp = offline(dir.path()).with_llm(stub.llm());
    let err = lp.turn(&scope("s1"), "I live in Lyon.").unwrap_err();
    assert!(err.to_string().contains("bad key"), "{err}");
    assert!(lp.short_term().read("default", "s1").unwrap().is_empty());
    assert_eq!(lp.memory().stats().unwrap().memories, 0);
}

#[test]
fn a_long_session_stays_within_budget_and_folds_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LoopConfig::default();
    cfg.budget.input_tokens = 300;
    cfg.budget.max_turns = 6;
    let memory = Arc::new(crate::open(dir.path()));
    let lp = MemoryLoop::new(memory, Arc::new(InProcessBuffer::new()), cfg).unwrap();
    let mut last = None;
    for i in 0..12 {
        let text = format!("My project number {i} is a compiler written in Rust for robots.");
        last = Some(lp.turn(&scope("long"), &text).unwrap());
    }
    let last = last.unwrap();
    assert!(
        last.trace.tokens.input.total_input <= 300,
        "{:?}",
        last.trace.tokens
    );
    assert!(last.trace.turns_in_prompt <= 6);
    assert!(last.trace.turns_left_out >= 5);
    let summary = lp.short_term().summary("default", "long").unwrap().unwrap();
    assert!(summary.covers >= 5, "{summary:?}");
    assert!(
        summary.text.contains("project number 0"),
        "{}",
        summary.text
    );
    assert!(last
        .request
        .unwrap()
        .system
        .contains("Earlier in this session"));
}

#[cfg(feature = "redis")]
#[test]
fn two_loops_on_redis_share_one_session() {
    let url =
        std::env::var("MEMLOOP_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("memloop-test:{}", uuid::Uuid::now_v7());
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(crate::open(dir.path()));
    let redis = || -> Arc<dyn ShortTermStore> {
        Arc::new(
            RedisBuffer::connect(&url, 600)
                .unwrap()
                .with_prefix(prefix.clone()),
        )
    };
    let a = MemoryLoop::new(memory.clone(), redis(), LoopConfig::default()).unwrap();
    let b = MemoryLoop::new(memory, redis(), LoopConfig::default()).unwrap();
    a.turn(&scope("shared"), "Let's plan the trip to Kyoto in April.")
        .unwrap();
    let out = b.turn(&scope("shared"), "What did I just say?").unwrap();
    let req = out.request.unwrap();
    assert_eq!(req.messages.len(), 2, "{:?}", req.messages);
    assert!(req.messages[0].content.contains("Kyoto"));
    b.short_term().clear("default", "shared").unwrap();
}

/// The real model, counting how often each text is embedded.
struct Counting {
    inner: Arc<dyn memloop::Embedder>,
    seen: std::sync::Mutex<Vec<String>>,
}

impl memloop::Embedder for Counting {
    fn info(&self) -> memloop::EmbedderInfo {
        self.inner.info()
    }

    fn embed_batch(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<f32>>> {
        let mut seen = self.seen.lock().unwrap();
        seen.extend(texts.iter().map(|t| t.to_string()));
        self.inner.embed_batch(texts)
    }
}

/// A kept turn embeds the user's input once: the query's vector is the
/// episode's. Before, the write path embedded the same text again.
#[test]
fn a_kept_turn_embeds_its_input_once() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(Counting {
        inner: crate::embedder(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let memory = Arc::new(
        memloop::Memory::with_embedder(dir.path(), counting.clone(), Default::default()).unwrap(),
    );
    let lp = MemoryLoop::new(
        memory.clone(),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let input = "I adopted a greyhound called Biscuit last spring.";
    let out = lp.turn(&scope("s1"), input).unwrap();
    assert!(out.trace.gate.persist, "{:?}", out.trace.gate);
    let seen = counting.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter(|t| t.as_str() == input).count(),
        1,
        "embedded: {seen:?}"
    );
    // The stored episode carries that vector: searching for the input
    // finds it first, by meaning too.
    let hits = memory
        .search(&memloop::SearchQuery::new(Scope::user("alice"), input))
        .unwrap();
    assert_eq!(hits[0].record.text, input);
    assert!(
        hits[0].scores.vector.unwrap() > 0.99,
        "{:?}",
        hits[0].scores
    );
}

/// The trace names whose turn it was, as its events do.
#[test]
fn the_trace_names_the_tenant_and_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let lp = offline(dir.path());
    let scope = Scope::user("dana").with_session("s1").with_tenant("acme");
    let (_, trace) = lp.context(&scope, "What do I like?").unwrap();
    assert_eq!(trace.tenant, "acme");
    assert_eq!(trace.user_id.as_deref(), Some("dana"));
    let json = serde_json::to_value(&trace).unwrap();
    assert_eq!(json["tenant"], "acme");
    assert_eq!(json["user_id"], "dana");
}
