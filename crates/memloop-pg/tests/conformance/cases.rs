//! The cases, each written once against `&dyn Backend`.

use std::sync::{Arc, Barrier};

use memloop_core::{
    now_millis, Error, ErrorClass, Event, Filter, Kind, NewMemory, Provenance, Scope,
};
use memloop_longterm::{ListQuery, LongTermStore, MemoryUpdate, SearchQuery};
use serde_json::json;

use crate::backend::{Backend, DIMS};
pub use crate::changes::{
    a_deleted_evidence_episode_reads_as_deleted, changes_to_ended_memories_are_refused_alike,
};
pub use crate::expiry::expired_reads_as_deleted_and_counts_leave_it_out;
pub use crate::graph::{
    a_dump_carries_the_graph, graph_links_current_memories_within_walls,
    single_valued_relations_end_and_as_of_reads_the_past,
};

/// A deterministic unit vector per text: what it means does not matter,
/// only that equal texts get equal vectors.
pub fn vector(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v = Vec::with_capacity(DIMS);
    for _ in 0..DIMS {
        for b in text.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = h.rotate_left(17);
        v.push(((h >> 40) as f32 / (1u64 << 24) as f32) - 0.5);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

pub(crate) fn add(store: &dyn LongTermStore, scope: &Scope, m: NewMemory) -> String {
    let v = vector(&m.text);
    let mut out = store.insert(scope, vec![(m, v)]).unwrap();
    out.pop().unwrap().0.id
}

fn text(store: &dyn LongTermStore, scope: &Scope, t: &str) -> String {
    add(store, scope, NewMemory::text(t))
}

fn list(store: &dyn LongTermStore, q: ListQuery) -> Vec<String> {
    store
        .list(&q)
        .unwrap()
        .into_iter()
        .map(|r| r.text)
        .collect()
}

fn query(scope: &Scope) -> ListQuery {
    ListQuery {
        scope: scope.clone(),
        ..Default::default()
    }
}

fn search(store: &dyn LongTermStore, q: SearchQuery) -> Vec<String> {
    let v = vector(&q.text);
    store
        .search(&q, &v)
        .unwrap()
        .into_iter()
        .map(|h| h.record.text)
        .collect()
}

pub(crate) fn alice() -> Scope {
    Scope::user("alice")
}

pub fn crud_and_history(b: &dyn Backend) {
    let s = b.handle();
    let id = add(
        s.as_ref(),
        &alice(),
        NewMemory::text("I live in Lisbon")
            .metadata(json!({"topic": "home", "n": 1.5}))
            .kind(Kind::Fact),
    );
    let rec = s.get("default", &id).unwrap();
    assert_eq!(rec.text, "I live in Lisbon");
    assert_eq!(rec.metadata, json!({"topic": "home", "n": 1.5}));
    assert_eq!(rec.scope, alice());
    assert_eq!(rec.valid_until, None);
    assert_eq!(rec.importance, 0.5);

    let v = vector("I live in Porto");
    let (updated, old) = s
        .update(
            "default",
            &id,
            MemoryUpdate {
                text: Some(("I live in Porto".into(), v)),
                importance: Some(0.9),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(old, "I live in Lisbon");
    assert_eq!(updated.text, "I live in Porto");
    assert_eq!(s.get("default", &id).unwrap().importance, 0.9);
    assert_eq!(list(s.as_ref(), query(&alice())), vec!["I live in Porto"]);
    assert_eq!(s.count(&query(&alice())).unwrap(), 1);

    let deleted = s.delete("default", &id, Some("moved away")).unwrap();
    assert!(deleted.valid_until.is_some());
    // Kept, readable by id, out of lists.
    assert!(s.get("default", &id).unwrap().valid_until.is_some());
    assert!(list(s.as_ref(), query(&alice())).is_empty());
    let all = ListQuery {
        include_superseded: true,
        ..query(&alice())
    };
    assert_eq!(list(s.as_ref(), all), vec!["I live in Porto"]);
    // A second delete, or an update of a deleted memory, is refused.
    assert_eq!(
        s.delete("default", &id, None).unwrap_err().class(),
        ErrorClass::InvalidInput
    );
    let h = s.history("default", &id).unwrap();
    let events: Vec<Event> = h.iter().map(|e| e.event).collect();
    assert_eq!(events, vec![Event::Add, Event::Update, Event::Delete]);
    assert_eq!(h[1].old_memory.as_deref(), Some("I live in Lisbon"));
    assert_eq!(h[2].reason.as_deref(), Some("moved away"));
    assert!(matches!(
        s.get("default", "no-such-id"),
        Err(Error::NotFound(_))
    ));
    // Bad input is refused before anything is stored.
    let err = s
        .insert(&alice(), vec![(NewMemory::text("   "), vector("x"))])
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidInput);
    let err = s
        .insert(&alice(), vec![(NewMemory::text("short"), vec![0.0; 3])])
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidInput);
    assert_eq!(s.count(&all_versions(&alice())).unwrap(), 1);
}

fn all_versions(scope: &Scope) -> ListQuery {
    ListQuery {
        include_superseded: true,
        ..query(scope)
    }
}

pub fn list_filters_kinds_and_narrowing(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    add(
        s.as_ref(),
        &a,
        NewMemory::text("likes green tea").metadata(json!({"topic": "food", "rating": 5})),
    );
    add(
        s.as_ref(),
        &a,
        NewMemory::text("likes black coffee").metadata(json!({"topic": "food", "rating": 2})),
    );
    add(
        s.as_ref(),
        &a.clone().with_agent("coach"),
        NewMemory::text("runs on mondays").kind(Kind::Procedure),
    );
    add(
        s.as_ref(),
        &a.clone().with_session("s1"),
        NewMemory::text("said hello").kind(Kind::Episode),
    );
    // Newest first.
    assert_eq!(
        list(s.as_ref(), query(&a)),
        vec![
            "said hello",
            "runs on mondays",
            "likes black coffee",
            "likes green tea"
        ]
    );
    let filtered = ListQuery {
        filter: Some(Filter::parse("topic = \"food\" AND rating >= 4").unwrap()),
        ..query(&a)
    };
    assert_eq!(list(s.as_ref(), filtered.clone()), vec!["likes green tea"]);
    assert_eq!(s.count(&filtered).unwrap(), 1);
    let kinds = ListQuery {
        kinds: vec![Kind::Procedure, Kind::Episode],
        ..query(&a)
    };
    assert_eq!(
        list(s.as_ref(), kinds),
        vec!["said hello", "runs on mondays"]
    );
    assert_eq!(
        list(s.as_ref(), query(&a.clone().with_agent("coach"))),
        vec!["runs on mondays"]
    );
    assert_eq!(
        list(s.as_ref(), query(&a.clone().with_session("s1"))),
        vec!["said hello"]
    );
    // Paging.
    let page = ListQuery {
        limit: 2,
        offset: 1,
        ..query(&a)
    };
    assert_eq!(
        list(s.as_ref(), page),
        vec!["runs on mondays", "likes black coffee"]
    );
    let filtered_page = ListQuery {
        filter: Some(Filter::parse("topic = \"food\"").unwrap()),
        limit: 1,
        offset: 1,
        ..query(&a)
    };
    assert_eq!(list(s.as_ref(), filtered_page), vec!["likes green tea"]);
    // Another user's partition is another world.
    assert!(list(s.as_ref(), query(&Scope::user("bob"))).is_empty());
}

pub fn search_ranks_keyword_and_vector_matches(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    for t in [
        "My sister lives in Berlin",
        "I went hiking in the Alps last summer",
        "Favourite food is ramen",
        "The cat is called Miso",
    ] {
        text(s.as_ref(), &a, t);
    }
    let hits = search(s.as_ref(), SearchQuery::new(a.clone(), "hiking trips"));
    assert_eq!(hits[0], "I went hiking in the Alps last summer");
    // The exact text matches on both signals.
    let q = SearchQuery::new(a.clone(), "The cat is called Miso");
    let v = vector(&q.text);
    let found = s.search(&q, &v).unwrap();
    assert_eq!(found[0].record.text, "The cat is called Miso");
    assert!(found[0].scores.bm25.is_some() && found[0].scores.vector.is_some());
    assert!(found.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    assert!(found.windows(2).all(|w| w[0].score >= w[1].score));
    // Keyword-only and vector-only searches.
    let kw = SearchQuery {
        vector_weight: 0.0,
        ..SearchQuery::new(a.clone(), "ramen")
    };
    assert_eq!(search(s.as_ref(), kw), vec!["Favourite food is ramen"]);
    let dense = SearchQuery {
        keyword_weight: 0.0,
        top_k: 2,
        ..SearchQuery::new(a.clone(), "Favourite food is ramen")
    };
    assert_eq!(search(s.as_ref(), dense)[0], "Favourite food is ramen");
    // Bad queries are refused.
    let bad = SearchQuery {
        top_k: 0,
        ..SearchQuery::new(a.clone(), "x")
    };
    assert_eq!(
        s.search(&bad, &vector("x")).unwrap_err().class(),
        ErrorClass::InvalidInput
    );
    assert!(search(s.as_ref(), SearchQuery::new(Scope::user("bob"), "cat")).is_empty());
}

/// Alice's keyword-only hits for "apple" (as of a time, if given): text and BM25.
fn apple_bm25(s: &dyn LongTermStore, as_of: Option<i64>) -> Vec<(String, f32)> {
    let q = SearchQuery {
        vector_weight: 0.0,
        as_of,
        ..SearchQuery::new(alice(), "apple")
    };
    s.search(&q, &vector(&q.text))
        .unwrap()
        .into_iter()
        .map(|h| (h.record.text, h.scores.bm25.unwrap_or(-1.0)))
        .collect()
}

/// The keyword signal is BM25 (k1 1.2, b 0.75) of the counted terms, the
/// same number on both backends, and it follows deletes and expiry: the
/// PostgreSQL store reads it from postings its trigger keeps, the embedded
/// one from its in-memory index.
pub fn keyword_scores_are_bm25_of_the_counted_terms(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    let short = text(s.as_ref(), &a, "apple banana");
    text(s.as_ref(), &a, "apple apple cherry");
    text(s.as_ref(), &a, "banana");
    let bm25 = |s: &dyn LongTermStore| apple_bm25(s, None);
    // term score: tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg len)),
    // times ln(1 + (docs - df + 0.5) / (df + 0.5)).
    let idf = |docs: f32, df: f32| (1.0 + (docs - df + 0.5) / (df + 0.5)).ln();
    let tf = |tf: f32, len: f32, avg: f32| tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg));
    let close = |got: &[(String, f32)], want: &[(&str, f32)]| {
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((t, g), (wt, w)) in got.iter().zip(want) {
            assert_eq!(t, wt, "{got:?}");
            assert!((g - w).abs() < 1e-4, "{t}: bm25 {g}, expected {w}");
        }
    };
    let (docs, avg) = (3.0, 2.0);
    close(
        &bm25(s.as_ref()),
        &[
            ("apple apple cherry", idf(docs, 2.0) * tf(2.0, 3.0, avg)),
            ("apple banana", idf(docs, 2.0) * tf(1.0, 2.0, avg)),
        ],
    );
    // Deleted: out of the results and of the statistics.
    s.delete("default", &short, None).unwrap();
    close(
        &bm25(s.as_ref()),
        &[("apple apple cherry", idf(2.0, 1.0) * tf(2.0, 3.0, 2.0))],
    );
    // Expired: out of the results before the cut.
    let mut m = NewMemory::text("apple pie");
    m.expires_at = Some(now_millis() - 1);
    add(s.as_ref(), &a, m);
    let found = bm25(s.as_ref());
    assert!(found.iter().all(|(t, _)| t != "apple pie"), "{found:?}");
    // Purged: the statistics forget every row, so a new start counts anew.
    s.forget(&a, true).unwrap();
    text(s.as_ref(), &a, "apple banana");
    text(s.as_ref(), &a, "banana");
    close(
        &bm25(s.as_ref()),
        &[("apple banana", idf(2.0, 1.0) * tf(1.0, 2.0, 1.5))],
    );
}

/// A context of many words weighs `CONTEXT_WORDS` in all, each word at
/// less weight (`bounded_context_weight`), in the stored statistics the
/// current rows are scored from and in the versions a search of the past
/// reads: a short turn beside a long reply keeps its own words' weight.
pub fn a_long_context_weighs_at_most_its_bound(b: &dyn Backend) {
    use memloop_longterm::keyword::CONTEXT_WORDS;
    let s = b.handle();
    let a = alice();
    let mut beside = NewMemory::text("apple banana");
    beside.context = Some(format!("{} apple", ["cherry"; 999].join(" ")));
    add(s.as_ref(), &a, beside);
    text(s.as_ref(), &a, "apple");
    let bm25 = |as_of: Option<i64>| apple_bm25(s.as_ref(), as_of);
    let idf = (1.0f32 + 0.5 / 2.5).ln();
    let tf = |tf: f32, len: f32, avg: f32| tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg));
    // The 1000 context words weigh CONTEXT_WORDS in all, not 500.
    let weight = CONTEXT_WORDS / 1000.0;
    let long = 2.0 + CONTEXT_WORDS;
    let avg = (long + 1.0) / 2.0;
    let want = [
        ("apple", idf * tf(1.0, 1.0, avg)),
        ("apple banana", idf * tf(1.0 + weight, long, avg)),
    ];
    for as_of in [None, Some(now_millis() + 1)] {
        let got = bm25(as_of);
        assert_eq!(got.len(), 2, "{got:?}");
        for ((t, g), (wt, w)) in got.iter().zip(&want) {
            assert_eq!(t, wt, "as of {as_of:?}: {got:?}");
            assert!(
                (g - w).abs() < 1e-4,
                "as of {as_of:?}: {t}: bm25 {g}, expected {w}"
            );
        }
    }
}

pub fn search_filters_and_narrowing(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    add(
        s.as_ref(),
        &a,
        NewMemory::text("paris trip in may").metadata(json!({"year": 2023})),
    );
    add(
        s.as_ref(),
        &a,
        NewMemory::text("paris trip in june").metadata(json!({"year": 2024})),
    );
    add(
        s.as_ref(),
        &a.clone().with_agent("planner"),
        NewMemory::text("paris trip booked").kind(Kind::Procedure),
    );
    let q = SearchQuery {
        filter: Some(Filter::parse("year = 2024").unwrap()),
        ..SearchQuery::new(a.clone(), "paris trip")
    };
    assert_eq!(search(s.as_ref(), q), vec!["paris trip in june"]);
    let q = SearchQuery {
        kinds: vec![Kind::Procedure],
        ..SearchQuery::new(a.clone(), "paris trip")
    };
    assert_eq!(search(s.as_ref(), q), vec!["paris trip booked"]);
    let q = SearchQuery::new(a.clone().with_agent("planner"), "paris");
    assert_eq!(search(s.as_ref(), q), vec!["paris trip booked"]);
    let q = SearchQuery {
        min_score: 2.0,
        ..SearchQuery::new(a.clone(), "paris")
    };
    assert!(search(s.as_ref(), q).is_empty());
}

pub fn supersession_is_single_and_marks_evidence(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    let turn = |t: &str| Provenance {
        session_id: Some("s1".into()),
        turn_ids: vec![t.into()],
        source: "rule".into(),
        confidence: None,
    };
    let mut episode = NewMemory::text("I moved to Lisbon last year").kind(Kind::Episode);
    episode.provenance = turn("t1");
    let episode_id = add(s.as_ref(), &a, episode);
    let mut fact = NewMemory::text("lives in Lisbon");
    fact.provenance = turn("t1");
    let old_id = add(s.as_ref(), &a, fact);
    let new = NewMemory::text("lives in Porto");
    let (added, old) = s
        .supersede(
            &a,
            &old_id,
            (new.clone(), vector("lives in Porto")),
            "moved",
        )
        .unwrap();
    assert_eq!(old.id, old_id);
    assert!(old.valid_until.is_some());
    assert_eq!(old.superseded_by.as_deref(), Some(added.id.as_str()));
    assert_eq!(
        s.get("default", &old_id).unwrap().superseded_by.as_deref(),
        Some(added.id.as_str())
    );
    // Only the new one is current.
    let texts = list(s.as_ref(), query(&a));
    assert!(texts.contains(&"lives in Porto".to_string()));
    assert!(!texts.contains(&"lives in Lisbon".to_string()));
    // A second supersession of the same memory is refused.
    let err = s
        .supersede(
            &a,
            &old_id,
            (NewMemory::text("lives in Faro"), vector("lives in Faro")),
            "again",
        )
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err}");
    // Another partition cannot supersede it.
    let err = s
        .supersede(
            &Scope::user("bob"),
            &added.id,
            (NewMemory::text("x y"), vector("x y")),
            "r",
        )
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound);
    // History of the old memory: ADD, then UPDATE naming its successor.
    let h = s.history("default", &old_id).unwrap();
    assert_eq!(h.last().unwrap().event, Event::Update);
    assert!(h
        .last()
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .contains(&added.id));
    // The episode it came from stays current, names the replacement, and
    // ranks below it.
    let ep = s.get("default", &episode_id).unwrap();
    assert!(ep.valid_until.is_none());
    assert_eq!(ep.superseded_by.as_deref(), Some(added.id.as_str()));
    let q = SearchQuery::new(a.clone(), "Lisbon Porto");
    let v = vector(&q.text);
    let hits = s.search(&q, &v).unwrap();
    let ep_hit = hits.iter().position(|h| h.record.id == episode_id).unwrap();
    let new_hit = hits.iter().position(|h| h.record.id == added.id).unwrap();
    assert!(new_hit < ep_hit);
    assert_eq!(
        hits[ep_hit].superseded_by.as_ref().map(|r| r.id.as_str()),
        Some(added.id.as_str())
    );
}

pub fn concurrent_supersessions_leave_one_current(b: &dyn Backend) {
    let a = alice();
    let first = b.handle();
    let old_id = text(first.as_ref(), &a, "works at Acme");
    for round in 0..3 {
        let current = list(first.as_ref(), query(&a));
        assert_eq!(current.len(), 1);
        let target = first.list(&query(&a)).unwrap()[0].id.clone();
        let handles: Vec<Arc<dyn LongTermStore>> = (0..4).map(|_| b.handle()).collect();
        let barrier = Arc::new(Barrier::new(handles.len()));
        let results: Vec<_> = std::thread::scope(|sc| {
            let joins: Vec<_> = handles
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let (barrier, a, target) = (barrier.clone(), a.clone(), target.clone());
                    sc.spawn(move || {
                        let t = format!("works at company {round}-{i}");
                        barrier.wait();
                        h.supersede(&a, &target, (NewMemory::text(&t), vector(&t)), "job change")
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "{results:?}");
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(r.class(), ErrorClass::InvalidInput, "{r}");
        }
        assert_eq!(list(first.as_ref(), query(&a)).len(), 1);
    }
    assert!(first.get("default", &old_id).unwrap().valid_until.is_some());
}

pub fn delete_forget_and_purge(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    let bob = Scope::user("bob");
    let kept = text(s.as_ref(), &bob, "bob likes chess");
    let one = text(s.as_ref(), &a, "alice likes tea");
    let gone = text(s.as_ref(), &a, "alice likes jazz");
    s.delete("default", &gone, None).unwrap();
    let agent_only = text(s.as_ref(), &a.clone().with_agent("x"), "alice agent note");
    s.outbox_push(&a, &json!({"text": "queued"}), "llm down")
        .unwrap();
    s.outbox_push(&bob, &json!({"text": "bob queued"}), "llm down")
        .unwrap();
    // Narrowed to an agent: only its memories.
    let r = s.forget(&a.clone().with_agent("x"), false).unwrap();
    assert_eq!(r.memories_deleted, 1);
    assert!(s.get("default", &agent_only).is_err());
    assert!(s.get("default", &one).is_ok());
    // The whole user: every version, history kept (with a DELETE).
    let r = s.forget(&a, false).unwrap();
    assert_eq!(r.memories_deleted, 2);
    assert_eq!(r.history_deleted, 0);
    assert!(list(s.as_ref(), all_versions(&a)).is_empty());
    let h = s.history("default", &one).unwrap();
    assert_eq!(h.last().unwrap().event, Event::Delete);
    assert_eq!(
        s.outbox_len().unwrap(),
        1,
        "the scope's queued write is dropped"
    );
    // Purge drops history too.
    let again = text(s.as_ref(), &a, "alice likes tea again");
    let r = s.forget(&a, true).unwrap();
    assert_eq!(r.memories_deleted, 1);
    assert!(r.history_deleted >= 1);
    assert!(matches!(
        s.history("default", &again),
        Err(Error::NotFound(_))
    ));
    // Bob is untouched.
    assert_eq!(s.get("default", &kept).unwrap().text, "bob likes chess");
    assert_eq!(list(s.as_ref(), query(&bob)), vec!["bob likes chess"]);
}

pub fn tenants_are_walls(b: &dyn Backend) {
    let s = b.handle();
    let acme = Scope::user("alice").with_tenant("acme");
    let other = Scope::user("alice").with_tenant("globex");
    let id = text(s.as_ref(), &acme, "the launch code is blue");
    for (tenant, visible) in [("acme", true), ("globex", false), ("default", false)] {
        assert_eq!(s.get(tenant, &id).is_ok(), visible, "{tenant}");
        assert_eq!(s.history(tenant, &id).is_ok(), visible, "{tenant}");
    }
    assert!(matches!(s.get("globex", &id), Err(Error::NotFound(_))));
    assert!(matches!(
        s.update(
            "globex",
            &id,
            MemoryUpdate {
                importance: Some(1.0),
                ..Default::default()
            }
        ),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        s.delete("globex", &id, None),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        s.supersede(&other, &id, (NewMemory::text("x z"), vector("x z")), "r"),
        Err(Error::NotFound(_))
    ));
    assert!(list(s.as_ref(), query(&other)).is_empty());
    assert!(search(s.as_ref(), SearchQuery::new(other.clone(), "launch code")).is_empty());
    assert!(s.entities("globex").unwrap().is_empty());
    assert_eq!(s.entities("acme").unwrap().len(), 1);
    s.touch("globex", &[id.as_str()]).unwrap();
    assert_eq!(s.get("acme", &id).unwrap().access_count, 0);
    assert_eq!(s.forget(&other, true).unwrap().memories_deleted, 0);
    assert_eq!(s.get("acme", &id).unwrap().text, "the launch code is blue");
    // The same text in another tenant is another memory.
    let twin = text(s.as_ref(), &other, "the launch code is blue");
    assert_ne!(twin, id);
}

pub fn idempotent_inserts(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    let m = NewMemory::text("Allergic to  peanuts");
    let first = s.insert(&a, vec![(m.clone(), vector("p"))]).unwrap();
    assert_eq!(first[0].1, Event::Add);
    let again = s
        .insert(
            &a,
            vec![(NewMemory::text("allergic to peanuts"), vector("p"))],
        )
        .unwrap();
    assert_eq!(again[0].1, Event::Noop);
    assert_eq!(again[0].0.id, first[0].0.id);
    // In one batch, the second copy is a NOOP of the first.
    let batch = s
        .insert(
            &a,
            vec![
                (NewMemory::text("owns a bike"), vector("b")),
                (NewMemory::text("owns a bike"), vector("b")),
            ],
        )
        .unwrap();
    assert_eq!(batch[0].1, Event::Add);
    assert_eq!(batch[1].1, Event::Noop);
    assert_eq!(batch[1].0.id, batch[0].0.id);
    // Another kind, another scope or an episode of another turn is new.
    let other_kind = s
        .insert(&a, vec![(m.clone().kind(Kind::Procedure), vector("p"))])
        .unwrap();
    assert_eq!(other_kind[0].1, Event::Add);
    let agent = s
        .insert(&a.clone().with_agent("z"), vec![(m.clone(), vector("p"))])
        .unwrap();
    assert_eq!(agent[0].1, Event::Add);
    assert_eq!(s.count(&query(&a)).unwrap(), 4);
    // Once deleted, the same text is stored anew.
    s.delete("default", &first[0].0.id, None).unwrap();
    let fresh = s.insert(&a, vec![(m, vector("p"))]).unwrap();
    assert_eq!(fresh[0].1, Event::Add);
}

pub fn concurrent_identical_inserts_store_one(b: &dyn Backend) {
    let a = alice();
    let handles: Vec<Arc<dyn LongTermStore>> = (0..4).map(|_| b.handle()).collect();
    let barrier = Arc::new(Barrier::new(handles.len()));
    let ids: Vec<String> = std::thread::scope(|sc| {
        let joins: Vec<_> = handles
            .iter()
            .map(|h| {
                let (barrier, a) = (barrier.clone(), a.clone());
                sc.spawn(move || {
                    barrier.wait();
                    add(h.as_ref(), &a, NewMemory::text("speaks Portuguese"))
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");
    assert_eq!(handles[0].count(&query(&a)).unwrap(), 1);
}

pub fn ttl_expired_is_gone(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    let now = now_millis();
    let mut expired = NewMemory::text("parking spot 42 today");
    expired.expires_at = Some(now - 1_000);
    let expired_id = add(s.as_ref(), &a, expired);
    let mut later = NewMemory::text("parking spot 7 next week");
    later.expires_at = Some(now + 86_400_000);
    add(s.as_ref(), &a, later);
    assert_eq!(
        list(s.as_ref(), query(&a)),
        vec!["parking spot 7 next week"]
    );
    assert_eq!(s.count(&query(&a)).unwrap(), 1);
    assert_eq!(
        search(s.as_ref(), SearchQuery::new(a.clone(), "parking spot")),
        vec!["parking spot 7 next week"]
    );
    // Readable by id until expire deletes it.
    assert!(s.get("default", &expired_id).is_ok());
    let stats = s.stats().unwrap();
    assert_eq!((stats.current, stats.expired), (1, 1));
    let report = s.expire().unwrap();
    assert_eq!((report.memories_deleted, report.partitions), (1, 1));
    assert!(matches!(
        s.get("default", &expired_id),
        Err(Error::NotFound(_))
    ));
    let h = s.history("default", &expired_id).unwrap();
    assert_eq!(h.last().unwrap().reason.as_deref(), Some("expired"));
    assert_eq!(s.expire().unwrap().memories_deleted, 0);
    // A TTL can be set and cleared by update.
    let id = text(s.as_ref(), &a, "temporary note");
    s.update(
        "default",
        &id,
        MemoryUpdate {
            expires_at: Some(Some(now - 1)),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!list(s.as_ref(), query(&a)).contains(&"temporary note".to_string()));
}

pub fn concurrent_writers_lose_nothing(b: &dyn Backend) {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let handles: Vec<Arc<dyn LongTermStore>> = (0..WRITERS).map(|_| b.handle()).collect();
    let acked: usize = std::thread::scope(|sc| {
        let joins: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(w, h)| {
                sc.spawn(move || {
                    for i in 0..EACH {
                        // Half into a shared partition, half into their own.
                        let scope = if i % 2 == 0 {
                            alice()
                        } else {
                            Scope::user(format!("writer{w}"))
                        };
                        add(h.as_ref(), &scope, NewMemory::text(format!("note {w} {i}")));
                    }
                    EACH
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).sum()
    });
    let s = &handles[0];
    let mut total = s.count(&query(&alice())).unwrap();
    for w in 0..WRITERS {
        total += s.count(&query(&Scope::user(format!("writer{w}")))).unwrap();
    }
    assert_eq!(total, acked);
    assert_eq!(s.stats().unwrap().memories as usize, acked);
}

pub fn as_of_reads_the_past(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    let mut m = NewMemory::text("team lead is Ana");
    m.valid_from = Some(1_000_000);
    let old_id = add(s.as_ref(), &a, m);
    let mut next = NewMemory::text("team lead is Rui");
    next.valid_from = Some(2_000_000);
    s.supersede(&a, &old_id, (next.clone(), vector(&next.text)), "reorg")
        .unwrap();
    let at = |t: i64| ListQuery {
        as_of: Some(t),
        ..query(&a)
    };
    assert_eq!(list(s.as_ref(), at(1_500_000)), vec!["team lead is Ana"]);
    assert_eq!(list(s.as_ref(), at(2_500_000)), vec!["team lead is Rui"]);
    assert!(list(s.as_ref(), at(500_000)).is_empty());
    assert_eq!(s.count(&at(1_500_000)).unwrap(), 1);
    let q = SearchQuery {
        as_of: Some(1_500_000),
        ..SearchQuery::new(a.clone(), "team lead")
    };
    assert_eq!(search(s.as_ref(), q), vec!["team lead is Ana"]);
    let q = SearchQuery {
        include_superseded: true,
        ..SearchQuery::new(a.clone(), "team lead")
    };
    let mut every = search(s.as_ref(), q);
    every.sort();
    assert_eq!(every, vec!["team lead is Ana", "team lead is Rui"]);
    assert_eq!(
        search(s.as_ref(), SearchQuery::new(a.clone(), "team lead")),
        vec!["team lead is Rui"]
    );
}

pub fn another_handle_sees_writes_at_once(b: &dyn Backend) {
    let one = b.handle();
    let two = b.handle();
    let a = alice();
    // Read first so the second handle has its indexes loaded.
    assert!(search(two.as_ref(), SearchQuery::new(a.clone(), "violin")).is_empty());
    let id = text(one.as_ref(), &a, "plays the violin");
    assert_eq!(
        search(two.as_ref(), SearchQuery::new(a.clone(), "violin")),
        vec!["plays the violin"]
    );
    one.delete("default", &id, None).unwrap();
    assert!(search(two.as_ref(), SearchQuery::new(a.clone(), "violin")).is_empty());
    assert!(two.get("default", &id).unwrap().valid_until.is_some());
}

/// Retrievals are counted in memory and written in batches: a search
/// never waits for a write to count its hits. The handle that counted
/// sees its counts at once; another sees them once a flush (or the
/// counting handle's drop) writes them.
pub fn retrievals_are_batched_and_seen_at_once(b: &dyn Backend) {
    let counting = b.handle();
    let other = b.handle();
    let a = alice();
    let id = text(counting.as_ref(), &a, "keeps bees on the roof");
    for _ in 0..3 {
        counting.record_access("default", &[id.as_str()]).unwrap();
    }
    assert_eq!(other.get("default", &id).unwrap().access_count, 0);
    let q = SearchQuery::new(a.clone(), "keeps bees on the roof");
    let hits = counting.search(&q, &vector(&q.text)).unwrap();
    assert_eq!(hits[0].record.id, id);
    assert_eq!(hits[0].record.access_count, 3);
    counting.flush().unwrap();
    let stored = other.get("default", &id).unwrap();
    assert_eq!(stored.access_count, 3);
    assert!(stored.last_accessed_at.is_some());
    // Another tenant's count of the same id changes nothing here.
    counting.record_access("globex", &[id.as_str()]).unwrap();
    counting.record_access("default", &[id.as_str()]).unwrap();
    drop(counting);
    assert_eq!(other.get("default", &id).unwrap().access_count, 4);
}

pub fn outbox_round_trip(b: &dyn Backend) {
    let s = b.handle();
    let a = Scope::user("alice").with_tenant("acme");
    let payload = json!({"messages": [{"role": "user", "content": "hi"}], "n": 3});
    let id = s.outbox_push(&a, &payload, "timeout").unwrap();
    assert_eq!(s.outbox_len().unwrap(), 1);
    let due = s.outbox_due(10, false).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].id, id);
    assert_eq!(due[0].scope, a);
    assert_eq!(due[0].payload, payload);
    assert_eq!(due[0].attempts, 1);
    assert_eq!(due[0].last_error.as_deref(), Some("timeout"));
    s.outbox_failed(id, "again").unwrap();
    // Backed off: not due now, but listed with `all`.
    assert!(s.outbox_due(10, false).unwrap().is_empty());
    let all = s.outbox_due(10, true).unwrap();
    assert_eq!(
        (all[0].attempts, all[0].last_error.as_deref()),
        (2, Some("again"))
    );
    s.outbox_done(id).unwrap();
    assert_eq!(s.outbox_len().unwrap(), 0);
}

pub fn stats_and_entities(b: &dyn Backend) {
    let s = b.handle();
    text(s.as_ref(), &alice(), "one fact");
    let id = text(s.as_ref(), &alice(), "another fact");
    text(s.as_ref(), &Scope::agent("helper"), "agent fact");
    s.delete("default", &id, None).unwrap();
    let st = s.stats().unwrap();
    assert_eq!((st.memories, st.current, st.superseded), (3, 2, 1));
    assert_eq!(st.partitions, 2);
    assert_eq!(st.by_kind.get("fact"), Some(&2));
    assert!(st.history_entries >= 4);
    assert!(st.schema_version >= 1);
    let e = s.entities("default").unwrap();
    let names: Vec<(&str, &str, i64)> = e
        .iter()
        .map(|e| (e.kind, e.name.as_str(), e.memories))
        .collect();
    assert_eq!(names, vec![("user", "alice", 1), ("agent", "helper", 1)]);
}

/// A memory said at `at` (ms): its `valid_from`.
fn said(t: &str, kind: Kind, at: i64) -> NewMemory {
    let mut m = NewMemory::text(t).kind(kind);
    m.valid_from = Some(at);
    m
}

fn sessions(store: &dyn LongTermStore, scope: &Scope) -> Vec<(String, u32, i64, i64, i64)> {
    store
        .sessions(scope)
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.ordinal, s.started_at, s.ended_at, s.memories))
        .collect()
}

pub fn sessions_on_a_time_axis(b: &dyn Backend) {
    let s = b.handle();
    let st = s.as_ref();
    let t0 = 1_683_000_000_000; // 2023-05-02
    let a = alice();
    // Written out of order: the times said, not the write order, number them.
    let s3 = a.clone().with_session("s3");
    add(st, &s3, said("s3 plans the trip", Kind::Fact, t0 + 2_000));
    add(st, &s3, said("s3 books the hotel", Kind::Fact, t0 + 2_500));
    let mut gone = said("s3 parking note", Kind::Fact, t0 + 2_900);
    gone.expires_at = Some(now_millis() - 1_000);
    add(st, &s3, gone);
    let s1 = a.clone().with_session("s1");
    add(st, &s1, said("s1 hello there", Kind::Episode, t0));
    add(st, &s1, said("s1 my dog is Rex", Kind::Episode, t0 + 10));
    let s2 = a.clone().with_session("s2");
    add(
        st,
        &s2,
        said("s2 back from Paris", Kind::Episode, t0 + 1_000),
    );
    // A fact about last year: its valid_from is not when the session was.
    add(
        st,
        &s2,
        said("s2 went to Paris", Kind::Fact, t0 - 31_536_000_000),
    );
    // A session whose memories are all deleted is no session any more.
    let s0 = a.clone().with_session("s0");
    let id = add(st, &s0, said("s0 deleted", Kind::Episode, t0 - 5_000));
    s.delete("default", &id, None).unwrap();
    // Memories without a session belong to none.
    add(st, &a, said("no session at all", Kind::Fact, t0 + 5_000));
    // Another user's and another tenant's sessions are walls.
    add(
        st,
        &Scope::user("bob").with_session("s9"),
        said("bob says hi", Kind::Episode, t0 + 9_000),
    );
    add(
        st,
        &Scope::user("alice").with_tenant("acme").with_session("s8"),
        said("acme alice", Kind::Episode, t0 + 8_000),
    );
    let want = vec![
        ("s3".to_string(), 3, t0 + 2_000, t0 + 2_500, 2),
        ("s2".to_string(), 2, t0 + 1_000, t0 + 1_000, 2),
        ("s1".to_string(), 1, t0, t0 + 10, 2),
    ];
    assert_eq!(sessions(st, &a), want);
    // Naming a session keeps its place among all of them.
    assert_eq!(sessions(st, &s2), vec![want[1].clone()]);
    assert!(sessions(st, &a.clone().with_session("nope")).is_empty());
    // An agent narrows (and is numbered among its own sessions).
    let helper = a.clone().with_agent("helper");
    add(
        st,
        &helper.clone().with_session("s4"),
        said("s4 via the helper", Kind::Episode, t0 + 3_000),
    );
    assert_eq!(
        sessions(st, &helper),
        vec![("s4".to_string(), 1, t0 + 3_000, t0 + 3_000, 1)]
    );
    assert_eq!(sessions(st, &a)[0].0, "s4");
    assert_eq!(sessions(st, &a)[0].1, 4);
    assert_eq!(
        sessions(st, &Scope::user("bob")),
        vec![("s9".to_string(), 1, t0 + 9_000, t0 + 9_000, 1)]
    );
    assert_eq!(
        sessions(st, &Scope::user("alice").with_tenant("acme")),
        vec![("s8".to_string(), 1, t0 + 8_000, t0 + 8_000, 1)]
    );
    assert!(sessions(st, &Scope::user("alice").with_tenant("globex")).is_empty());
    // Another handle (another process, another server) sees the same.
    assert_eq!(sessions(b.handle().as_ref(), &a).len(), 4);
    // No user and no agent: no partition to read.
    assert!(matches!(
        s.sessions(&Scope::default()),
        Err(e) if e.class() == ErrorClass::InvalidInput
    ));
}

/// A search's time window (what "in May" in a query resolves to), on each
/// memory's `valid_from`. As a filter it narrows the search before any
/// cut: 150 better-matching memories from January never take the places
/// of the 3 from May. As a boost every memory stays a candidate and those
/// inside the window rank first; each hit's scores show the time signal.
pub fn time_window_filters_and_boosts(b: &dyn Backend) {
    use memloop_longterm::{TimeMode, TimeWindow};
    const DAY: i64 = 86_400_000;
    // 2023-01-01 and 2023-05-01, 2023-06-01 (UTC).
    let (jan, may, june) = (1_672_531_200_000, 1_682_899_200_000, 1_685_577_600_000);
    let s = b.handle();
    let a = alice();
    let at = |t: &str, from: i64| {
        let mut m = NewMemory::text(t);
        m.valid_from = Some(from);
        (m.clone(), vector(&m.text))
    };
    let january: Vec<_> = (0..150)
        .map(|i| {
            at(
                &format!("paris trip notes paris trip {i}"),
                jan + i * 60_000,
            )
        })
        .collect();
    s.insert(&a, january).unwrap();
    let in_may: Vec<_> = (0..3)
        .map(|i| at(&format!("a trip somewhere, notes {i}"), may + (i + 1) * DAY))
        .collect();
    s.insert(&a, in_may).unwrap();
    let window = |mode| TimeWindow {
        start: Some(may),
        end: Some(june),
        mode,
    };
    let q = |mode| SearchQuery {
        time: Some(window(mode)),
        top_k: 5,
        ..SearchQuery::new(a.clone(), "paris trip notes")
    };
    let v = vector("paris trip notes");
    let filtered = s.search(&q(TimeMode::Filter), &v).unwrap();
    let mut texts: Vec<&str> = filtered.iter().map(|h| h.record.text.as_str()).collect();
    texts.sort_unstable();
    assert_eq!(
        texts,
        [
            "a trip somewhere, notes 0",
            "a trip somewhere, notes 1",
            "a trip somewhere, notes 2"
        ]
    );
    assert!(filtered.iter().all(|h| h.scores.time == 1.0));
    // Without a window the January memories fill the top 5.
    let plain = s
        .search(
            &SearchQuery {
                top_k: 5,
                ..SearchQuery::new(a.clone(), "paris trip notes")
            },
            &v,
        )
        .unwrap();
    assert!(plain
        .iter()
        .all(|h| h.record.valid_from < may && h.scores.time == 0.0));
    // Boosted (weighted high enough to outweigh the keywords): the May
    // memories first, then the January ones, whose time signal is lower
    // the farther they are from the window. A boost reorders the
    // candidates, so here every memory is one.
    let boosted = s
        .search(
            &SearchQuery {
                candidates: 200,
                ..q(TimeMode::Boost(2.0))
            },
            &v,
        )
        .unwrap();
    assert_eq!(boosted.len(), 5);
    assert!(
        boosted[..3].iter().all(|h| h.scores.time == 1.0),
        "{boosted:?}"
    );
    assert!(boosted[3..]
        .iter()
        .all(|h| h.record.valid_from < may && h.scores.time > 0.0 && h.scores.time < 0.5));
    assert!(boosted.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    // An open window: everything since May.
    let since = SearchQuery {
        time: Some(TimeWindow {
            start: Some(may),
            end: None,
            mode: TimeMode::Filter,
        }),
        ..SearchQuery::new(a.clone(), "trip")
    };
    assert_eq!(s.search(&since, &vector("trip")).unwrap().len(), 3);
    // A window that ends before it starts is refused, saying so.
    let bad = SearchQuery {
        time: Some(TimeWindow {
            start: Some(june),
            end: Some(may),
            mode: TimeMode::Filter,
        }),
        ..SearchQuery::new(a.clone(), "trip")
    };
    let e = s.search(&bad, &vector("trip")).unwrap_err();
    assert_eq!(e.class(), ErrorClass::InvalidInput);
    assert!(e.to_string().contains("ends before it starts"), "{e}");
}

/// The dense hits (text, vector score) for the vector of `probe`.
fn dense_hits(store: &dyn LongTermStore, scope: &Scope, probe: &str) -> Vec<(String, f32)> {
    let q = SearchQuery {
        keyword_weight: 0.0,
        top_k: 50,
        ..SearchQuery::new(scope.clone(), probe)
    };
    store
        .search(&q, &vector(probe))
        .unwrap()
        .into_iter()
        .map(|h| (h.record.text, h.scores.vector.unwrap_or(0.0)))
        .collect()
}

/// Whether `probe`'s vector finds `text` first, once, at its full
/// similarity (a long memory's ranking discount leaves the cosine it
/// reports as it is: duplicate checks compare it).
fn answers(store: &dyn LongTermStore, scope: &Scope, probe: &str, text: &str) -> bool {
    let hits = dense_hits(store, scope, probe);
    hits.first().is_some_and(|(t, s)| t == text && *s > 0.999)
        && hits.iter().filter(|(t, _)| t == text).count() == 1
}

/// A long memory's later pieces (`NewMemory::pieces`) answer for it in an
/// exact scan and through the vector index, once, and go with it: an update
/// replaces them, reindex re-embeds them, a dump carries them and a restore
/// writes them back, a delete takes them.
pub fn pieces_answer_for_their_memory(b: &dyn Backend) {
    let s = b.handle();
    let a = alice();
    for i in 0..30 {
        text(s.as_ref(), &a, &format!("short note {i}"));
    }
    let mut long = NewMemory::text("a long reply");
    long.pieces = vec![vector("its middle"), vector("its end")];
    let id = s
        .insert(&a, vec![(long, vector("a long reply"))])
        .unwrap()
        .pop()
        .unwrap()
        .0
        .id;
    let indexed = b.indexed_handle();
    let mut discounts = Vec::new();
    for store in [s.as_ref(), indexed.as_ref()] {
        for probe in ["a long reply", "its middle", "its end"] {
            assert!(
                answers(store, &a, probe, "a long reply"),
                "{probe}: {:?}",
                dense_hits(store, &a, probe)
            );
        }
        // Its three vectors are among the nearest: it ranks below its
        // cosine, by the same discount in an exact scan and an index walk.
        let q = SearchQuery {
            keyword_weight: 0.0,
            ..SearchQuery::new(a.clone(), "its middle")
        };
        let hits = store.search(&q, &vector("its middle")).unwrap();
        discounts.push(hits[0].scores.pieces_discount);
    }
    assert!(discounts[0] > 0.0, "{discounts:?}");
    assert!((discounts[0] - discounts[1]).abs() < 1e-3, "{discounts:?}");
    // Reindex: each text's vectors from the function, pieces included.
    let embed = |texts: &[&str]| -> memloop_core::Result<Vec<memloop_longterm::Embedded>> {
        Ok(texts
            .iter()
            .map(|t| memloop_longterm::Embedded {
                vector: vector(t),
                pieces: if *t == "a long reply" {
                    vec![vector("reindexed end")]
                } else {
                    Vec::new()
                },
            })
            .collect())
    };
    assert_eq!(s.reindex(&embed, &|_, _| {}).unwrap(), 31);
    let s = b.handle();
    let indexed = b.indexed_handle();
    for store in [s.as_ref(), indexed.as_ref()] {
        assert!(answers(store, &a, "reindexed end", "a long reply"));
        assert!(!answers(store, &a, "its end", "a long reply"));
    }
    // A dump with vectors carries them; a restore into an emptied store
    // writes them back.
    let mut lines = Vec::new();
    s.dump(None, true, &mut |l| {
        lines.push(l);
        Ok(())
    })
    .unwrap();
    let mut batch = memloop_longterm::dump::RestoreBatch::default();
    for l in lines {
        if let memloop_longterm::dump::DumpLine::Memory(m) = l {
            let (r, e, links) = m.into_parts();
            let e = e.expect("a dump with vectors has them");
            if r.text == "a long reply" {
                // As stored: the embedded store keeps half precision.
                assert_eq!(e.pieces.len(), 1);
                let cos: f32 = e.pieces[0]
                    .iter()
                    .zip(vector("reindexed end"))
                    .map(|(x, y)| x * y)
                    .sum();
                assert!(cos > 0.999, "{cos}");
            } else {
                assert!(e.pieces.is_empty(), "{}", r.text);
            }
            batch.memories.push(memloop_longterm::dump::RestoredMemory {
                record: r,
                embedded: e,
                links,
            });
        }
    }
    s.forget(&a, true).unwrap();
    assert!(!answers(s.as_ref(), &a, "reindexed end", "a long reply"));
    assert_eq!(s.restore(&batch).unwrap().memories, 31);
    let s = b.handle();
    let indexed = b.indexed_handle();
    for store in [s.as_ref(), indexed.as_ref()] {
        assert!(answers(store, &a, "reindexed end", "a long reply"));
    }
    // An update with a new text and no pieces: the old piece is gone.
    let change = MemoryUpdate {
        text: Some(("a short reply now".into(), vector("a short reply now"))),
        ..Default::default()
    };
    s.update("default", &id, change).unwrap();
    for store in [s.as_ref(), b.indexed_handle().as_ref()] {
        assert!(dense_hits(store, &a, "reindexed end")
            .iter()
            .all(|(_, score)| *score < 0.99));
        assert!(answers(store, &a, "a short reply now", "a short reply now"));
    }
    // An update that brings pieces, then a delete: none answers after it.
    let change = MemoryUpdate {
        text: Some(("long again".into(), vector("long again"))),
        pieces: vec![vector("again, its end")],
        ..Default::default()
    };
    s.update("default", &id, change).unwrap();
    assert!(answers(s.as_ref(), &a, "again, its end", "long again"));
    s.delete("default", &id, None).unwrap();
    for store in [s.as_ref(), b.indexed_handle().as_ref()] {
        assert!(dense_hits(store, &a, "again, its end")
            .iter()
            .all(|(t, _)| t != "long again"));
    }
}
