//! The reranking stage through the facade, against loopback rerankers
//! speaking each wire format with scripted scores: the order they give,
//! and the fused order standing when they are slow, wrong or down.

use std::time::Duration;

use memloop::rerank::{RerankConfig, RerankFormat, RerankKind, RerankStatus};
use memloop::{Memory, NewMemory, Scope, SearchQuery};
use memloop_teststub::{closed_port, Response, StubServer};
use serde_json::{json, Value};

use crate::{open, stub};

const PETS: [&str; 4] = [
    "My dog Rex likes the beach",
    "My cat sleeps on the dog's bed",
    "The dog park opens at nine",
    "I walk the dog before work",
];

fn filled(dir: &std::path::Path, cfg: &RerankConfig, llm: Option<&memloop::LlmConfig>) -> Memory {
    let memory = open(dir).with_reranker(cfg.build(llm).unwrap());
    for t in PETS {
        memory.add(&Scope::user("u"), NewMemory::text(t)).unwrap();
    }
    memory
}

fn http(url: String, format: RerankFormat) -> RerankConfig {
    RerankConfig {
        kind: RerankKind::Http,
        url: Some(url),
        format,
        model: Some("bge-reranker".into()),
        api_key: Some("secret".into()),
        top_n: 3,
        timeout_ms: Some(300),
    }
}

fn query(text: &str) -> SearchQuery {
    let mut q = SearchQuery::new(Scope::user("u"), text);
    q.top_k = 4;
    q
}

fn ids(hits: &[memloop::SearchHit]) -> Vec<String> {
    hits.iter().map(|h| h.record.id.clone()).collect()
}

/// The fused order of `q`, with reranking turned off for it.
fn fused(memory: &Memory, q: &SearchQuery) -> Vec<String> {
    let mut off = q.clone();
    off.rerank = Some(0);
    let s = memory.search_traced(&off).unwrap();
    assert!(s.rerank.is_none());
    ids(&s.hits)
}

/// A text-embeddings-inference reranker whose scores rise with the
/// candidate's index: it reverses the fused order.
fn rising_tei() -> StubServer {
    StubServer::start(|_, req| {
        let n = req.body["texts"].as_array().map_or(0, Vec::len);
        let list: Vec<Value> = (0..n)
            .map(|i| json!({"index": i, "score": i as f64 / 10.0}))
            .collect();
        Response::new(200, Value::Array(list))
    })
}

#[test]
fn a_tei_reranker_reverses_the_top_n() {
    // The fused third comes first.
    let server = rising_tei();
    let dir = tempfile::tempdir().unwrap();
    let memory = filled(
        dir.path(),
        &http(server.base_url(), RerankFormat::Tei),
        None,
    );
    let q = query("dog");
    let before = fused(&memory, &q);
    let s = memory.search_traced(&q).unwrap();
    let report = s.rerank.unwrap();
    assert_eq!(report.status, RerankStatus::Reranked, "{report:?}");
    assert_eq!(report.candidates, 3);
    assert!(report.reranker.contains("/rerank"));
    let after = ids(&s.hits);
    assert_eq!(
        after[..3],
        [before[2].clone(), before[1].clone(), before[0].clone()]
    );
    assert_eq!(after[3], before[3], "beyond top_n: fused order");
    let first = s.hits[0].scores.rerank.unwrap();
    assert_eq!((first.fused_position, first.position), (3, 1));
    assert!(s.hits.windows(2).all(|w| w[0].score >= w[1].score));

    let req = &server.requests()[0];
    assert_eq!(req.path, "/rerank");
    assert_eq!(req.body["query"], "dog");
    assert_eq!(req.body["texts"].as_array().unwrap().len(), 3);
    assert_eq!(req.header("authorization"), Some("Bearer secret"));
}

#[test]
fn a_cohere_reranker_is_asked_with_its_model_and_may_leave_candidates_out() {
    // Only the fused second is scored: it leads, the others follow in order.
    let server = StubServer::start(|_, _| {
        Response::new(
            200,
            json!({"id": "r1", "results": [{"index": 1, "relevance_score": 0.93}]}),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let memory = filled(
        dir.path(),
        &http(server.base_url(), RerankFormat::Cohere),
        None,
    );
    let q = query("dog");
    let before = fused(&memory, &q);
    let s = memory.search_traced(&q).unwrap();
    assert_eq!(s.rerank.unwrap().status, RerankStatus::Reranked);
    assert_eq!(
        ids(&s.hits),
        [&before[1], &before[0], &before[2], &before[3]].map(String::clone)
    );
    assert_eq!(s.hits[0].scores.rerank.unwrap().score, Some(0.93));
    assert_eq!(s.hits[1].scores.rerank.unwrap().score, None);

    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/rerank");
    assert_eq!(req.body["model"], "bge-reranker");
    assert_eq!(req.body["top_n"], 3);
    assert_eq!(req.body["documents"].as_array().unwrap().len(), 3);
}

#[test]
fn a_slow_wrong_or_absent_reranker_leaves_the_fused_order() {
    let answers: Vec<(&str, Response)> = vec![
        (
            "slow",
            Response::new(200, json!([{"index": 0, "score": 1.0}]))
                .after(Duration::from_millis(900)),
        ),
        (
            "unknown index",
            Response::new(
                200,
                json!([{"index": 0, "score": 0.1}, {"index": 9, "score": 0.9}]),
            ),
        ),
        (
            "repeated index",
            Response::new(
                200,
                json!([{"index": 1, "score": 0.1}, {"index": 1, "score": 0.9}]),
            ),
        ),
        (
            "not a list",
            Response::new(200, json!({"scores": [0.1, 0.2]})),
        ),
        ("not json", Response::new(200, "<html>")),
        (
            "server error",
            Response::new(500, json!({"error": "model not loaded"})),
        ),
    ];
    for (what, answer) in answers {
        let server = StubServer::start(move |_, _| answer.clone());
        let dir = tempfile::tempdir().unwrap();
        let memory = filled(
            dir.path(),
            &http(server.base_url(), RerankFormat::Tei),
            None,
        );
        let q = query("dog");
        let before = fused(&memory, &q);
        let s = memory.search_traced(&q).unwrap();
        let report = s.rerank.unwrap();
        let expected = if what == "slow" {
            RerankStatus::TimedOut
        } else {
            RerankStatus::Failed
        };
        assert_eq!(report.status, expected, "{what}: {report:?}");
        assert!(report.error.is_some(), "{what}");
        assert!(
            report.latency_us < 800_000,
            "{what}: waited {} µs",
            report.latency_us
        );
        assert_eq!(ids(&s.hits), before, "{what}");
        assert!(s.hits.iter().all(|h| h.scores.rerank.is_none()), "{what}");
    }
    // Nothing listening at all.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", closed_port());
    let memory = filled(dir.path(), &http(url, RerankFormat::Cohere), None);
    let s = memory.search_traced(&query("dog")).unwrap();
    assert_eq!(s.rerank.unwrap().status, RerankStatus::Failed);
    assert_eq!(s.hits.len(), 4);
}

#[test]
fn the_configured_llm_ranks_listwise_and_its_answer_is_checked() {
    let llm = stub::start(vec![
        (200, "[3, 1, 2]".into()),
        (200, "[1, 7]".into()),
        (200, "the first one".into()),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = RerankConfig {
        kind: RerankKind::Llm,
        top_n: 3,
        timeout_ms: Some(2000),
        ..RerankConfig::default()
    };
    let memory = filled(dir.path(), &cfg, Some(&llm.config()));
    let q = query("dog");
    let before = fused(&memory, &q);

    let s = memory.search_traced(&q).unwrap();
    let report = s.rerank.unwrap();
    assert_eq!(report.status, RerankStatus::Reranked, "{report:?}");
    assert!(report.reranker.starts_with("llm "));
    assert_eq!(
        ids(&s.hits)[..3],
        [before[2].clone(), before[0].clone(), before[1].clone()]
    );
    let body = &llm.bodies()[0];
    let prompt = body["messages"].to_string();
    assert!(
        prompt.contains("[1] ") && prompt.contains("[3] ") && !prompt.contains("[4] "),
        "{prompt}"
    );
    assert!(body["max_tokens"].as_u64().unwrap() <= 64, "{body}");

    // An index it was never given, then no list: both void.
    for _ in 0..2 {
        let s = memory.search_traced(&q).unwrap();
        assert_eq!(s.rerank.unwrap().status, RerankStatus::Failed);
        assert_eq!(ids(&s.hits), before);
    }
}

#[test]
fn configured_hops_hold_when_a_search_turns_expansion_on() {
    let cfg = memloop::SearchConfig {
        expand: false,
        hops: 2,
    };
    let memory = open(tempfile::tempdir().unwrap().path()).with_expansion(cfg.expansion());
    assert!(!cfg.expansion().is_on());
    assert_eq!(
        memory
            .expansion_asked(Some(true), None)
            .unwrap()
            .unwrap()
            .hops,
        2
    );
    assert_eq!(
        memory.expansion_asked(None, Some(3)).unwrap().unwrap().hops,
        3
    );
    assert!(!memory
        .expansion_asked(Some(false), None)
        .unwrap()
        .unwrap()
        .is_on());
    assert_eq!(memory.expansion_asked(None, None).unwrap(), None);
    assert!(memory.expansion_asked(None, Some(4)).is_err());
}

#[test]
fn a_search_chooses_its_depth_or_none_and_cannot_ask_for_a_missing_reranker() {
    let server = rising_tei();
    let dir = tempfile::tempdir().unwrap();
    let memory = filled(
        dir.path(),
        &http(server.base_url(), RerankFormat::Tei),
        None,
    );
    // Deeper than top_k: the store is asked for more, the answer keeps top_k.
    let mut q = query("dog");
    q.top_k = 2;
    q.rerank = Some(4);
    let s = memory.search_traced(&q).unwrap();
    assert_eq!(s.hits.len(), 2);
    assert_eq!(s.rerank.unwrap().candidates, 4);
    assert_eq!(s.hits[0].scores.rerank.unwrap().fused_position, 4);
    let calls = server.requests().len();
    q.rerank = Some(0);
    assert!(memory.search_traced(&q).unwrap().rerank.is_none());
    assert_eq!(server.requests().len(), calls, "rerank 0 calls no reranker");
    q.rerank = Some(500);
    assert!(memory.search(&q).is_err());

    assert_eq!(memory.rerank_asked(Some(false), Some(9)).unwrap(), Some(0));
    assert_eq!(memory.rerank_asked(Some(true), None).unwrap(), Some(3));
    assert_eq!(memory.rerank_asked(None, None).unwrap(), None);
    let plain = open(tempfile::tempdir().unwrap().path());
    let e = plain
        .rerank_asked(Some(true), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("[rerank] kind"), "{e}");
    let mut q = query("dog");
    q.rerank = Some(5);
    assert!(plain.search(&q).is_err());
}

#[test]
fn a_rerank_table_that_cannot_work_is_refused_by_name() {
    let no_url = RerankConfig {
        kind: RerankKind::Http,
        ..RerankConfig::default()
    };
    assert!(no_url.build(None).unwrap_err().to_string().contains("url"));
    let no_llm = RerankConfig {
        kind: RerankKind::Llm,
        ..RerankConfig::default()
    };
    assert!(no_llm
        .build(None)
        .unwrap_err()
        .to_string()
        .contains("[llm]"));
    let deep = RerankConfig {
        top_n: 0,
        ..http("http://127.0.0.1:1".into(), RerankFormat::Tei)
    };
    assert!(deep.build(None).is_err());
    assert!(RerankConfig::default().build(None).unwrap().is_none());
    for url in [
        "http://user:key@127.0.0.1:8080",
        "http://127.0.0.1:8080/rerank?api_key=k",
        "ftp://h",
    ] {
        let e = http(url.into(), RerankFormat::Tei)
            .build(None)
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains("key@") && !e.contains("api_key=k"),
            "the refusal echoes no secret: {e}"
        );
    }
    assert_eq!(
        no_llm.timeout(),
        Duration::from_secs(5),
        "a chat model gets seconds by default"
    );
    assert_eq!(
        RerankConfig::default().timeout(),
        Duration::from_millis(500)
    );
    let text = "[rerank]\nkind = \"http\"\nurl = \"http://127.0.0.1:8080\"\nformat = \"cohere\"\ntop_n = 30\n";
    let cfg = memloop::Config::from_toml(text, std::path::Path::new("t.toml")).unwrap();
    assert_eq!(
        (cfg.rerank.kind, cfg.rerank.format, cfg.rerank.top_n),
        (RerankKind::Http, RerankFormat::Cohere, 30)
    );
    let bad = "[rerank]\nkind = \"http\"\n";
    assert!(memloop::Config::from_toml(bad, std::path::Path::new("t.toml")).is_err());
}
