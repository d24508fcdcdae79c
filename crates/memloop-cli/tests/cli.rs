#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The real `memloop` binary on a temporary data directory, checked against
//! the CLI contract of shared/design/interfaces.md: `--json` output shapes,
//! exit codes, one-line errors, and that bad input stores nothing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// memloop_core::MAX_TEXT_BYTES
const MAX_TEXT_BYTES: usize = 32 * 1024;

mod common;
use common::{one_json_document, results, texts, Store, BIN};

impl Store {
    /// Runs once with `--json` and once without; both must exit with `exit`
    /// and write exactly one line starting with `error:` on stderr. With
    /// `--json` stdout is `{"error":{"code","message"}}` and nothing else;
    /// without, stdout is empty. Returns the message.
    fn fails(&self, args: &[&str], exit: i32, code: &str) -> String {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert_eq!(
            out.code,
            Some(exit),
            "memloop {args:?}: exit code\nstdout: {}\nstderr: {}",
            out.stdout,
            out.stderr
        );
        assert_one_error_line(&out.stderr, args);
        let v = one_json_document(&out.stdout, args);
        let obj = v.as_object().unwrap();
        assert_eq!(
            obj.keys().collect::<Vec<_>>(),
            ["error"],
            "memloop {args:?}: {v}"
        );
        let err = v["error"].as_object().unwrap();
        let keys: BTreeSet<&str> = err.keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["code", "message"]), "{v}");
        assert_eq!(v["error"]["code"], code, "memloop {args:?}: {v}");
        let message = v["error"]["message"].as_str().unwrap().to_string();
        assert!(!message.is_empty());

        let plain = self.run(args);
        assert_eq!(plain.code, Some(exit), "memloop {args:?} without --json");
        assert_one_error_line(&plain.stderr, args);
        assert!(
            plain.stdout.is_empty(),
            "memloop {args:?}: an error printed to stdout: {}",
            plain.stdout
        );
        message
    }

    fn add(&self, user: &str, texts: &[&str]) -> Vec<String> {
        let mut args = vec!["add", "--user", user];
        args.extend_from_slice(texts);
        let v = self.ok(&args);
        results(&v)
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    }

    fn list(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["list"];
        all.extend_from_slice(args);
        results(&self.ok(&all)).to_vec()
    }

    fn list_ids(&self, user: &str) -> BTreeSet<String> {
        self.list(&["--user", user])
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Every memory of the store, current or not, all scopes.
    fn stored_count(&self) -> u64 {
        self.ok(&["stats"])["memories"].as_u64().unwrap()
    }
}

fn assert_one_error_line(stderr: &str, args: &[&str]) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "memloop {args:?}: stderr must be one line, got: {stderr:?}"
    );
    assert!(
        lines[0].starts_with("error:"),
        "memloop {args:?}: stderr must start with `error:`: {stderr:?}"
    );
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

#[test]
fn add_json_shape_and_noop_on_repeat() {
    let s = Store::new();
    let v = s.ok(&[
        "add",
        "--user",
        "alice",
        "Alice is allergic to peanuts",
        "Alice plays the cello",
    ]);
    assert_eq!(keys(&v), BTreeSet::from(["results".to_string()]));
    let rs = results(&v);
    assert_eq!(rs.len(), 2);
    for (r, text) in rs
        .iter()
        .zip(["Alice is allergic to peanuts", "Alice plays the cello"])
    {
        assert_eq!(
            keys(r),
            BTreeSet::from(["id".into(), "memory".into(), "event".into()]),
            "{r}"
        );
        assert_eq!(r["event"], "ADD");
        assert_eq!(r["memory"], text);
        assert!(!r["id"].as_str().unwrap().is_empty());
    }
    assert_ne!(rs[0]["id"], rs[1]["id"]);
    let first_id = rs[0]["id"].clone();

    // The same text again is a NOOP carrying the existing id.
    let again = s.ok(&["add", "--user", "alice", "Alice is allergic to peanuts"]);
    let again = results(&again);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["event"], "NOOP");
    assert_eq!(again[0]["id"], first_id);
    assert_eq!(again[0]["memory"], "Alice is allergic to peanuts");
    assert_eq!(
        s.list(&["--user", "alice"]).len(),
        2,
        "nothing stored twice"
    );

    // The same text for another user is a memory of its own.
    let bob = s.ok(&["add", "--user", "bob", "Alice is allergic to peanuts"]);
    assert_eq!(results(&bob)[0]["event"], "ADD");
    assert_ne!(results(&bob)[0]["id"], first_id);
}

#[test]
fn add_without_json_prints_lines() {
    let s = Store::new();
    let out = s.run(&["add", "--user", "alice", "Alice likes green tea"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.stdout.starts_with("ADD"), "{}", out.stdout);
    assert!(
        out.stdout.contains("Alice likes green tea"),
        "{}",
        out.stdout
    );
}

#[test]
fn search_results_carry_scores_kind_and_metadata() {
    let s = Store::new();
    s.ok(&[
        "add",
        "--user",
        "alice",
        "Alice is allergic to peanuts",
        "--metadata",
        r#"{"topic":"food","rating":5}"#,
    ]);
    s.ok(&[
        "add",
        "--user",
        "alice",
        "Alice works as a nurse in Lisbon",
        "Alice's favourite colour is green",
        "--metadata",
        r#"{"topic":"life"}"#,
    ]);

    let v = s.ok(&["search", "--user", "alice", "peanuts allergy"]);
    let rs = results(&v);
    assert_eq!(rs.len(), 3, "{v}");
    let top = &rs[0];
    assert_eq!(top["memory"], "Alice is allergic to peanuts", "{v}");
    for r in rs {
        for k in ["id", "memory", "score", "scores", "kind", "metadata"] {
            assert!(r.get(k).is_some(), "search result lacks {k}: {r}");
        }
        assert!(r["id"].is_string());
        assert_eq!(r["kind"], "fact");
        assert_eq!(r["user_id"], "alice");
        let score = r["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score), "score {score}");
        let scores = r["scores"].as_object().unwrap();
        for k in ["vector", "bm25", "fused"] {
            assert!(scores.contains_key(k), "scores lacks {k}: {r}");
        }
    }
    assert_eq!(
        top["metadata"],
        serde_json::json!({"topic": "food", "rating": 5})
    );
    // The keyword matched: the top hit has a BM25 score and a vector score.
    assert!(top["scores"]["bm25"].as_f64().unwrap() > 0.0, "{top}");
    assert!(top["scores"]["vector"].is_number(), "{top}");
    // Ranked best first.
    let scores: Vec<f64> = rs.iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    let one = s.ok(&["search", "--user", "alice", "peanuts", "--top-k", "1"]);
    assert_eq!(results(&one).len(), 1);

    let filtered = s.ok(&[
        "search",
        "--user",
        "alice",
        "peanuts allergy",
        "--filter",
        r#"topic = "life""#,
    ]);
    let filtered = results(&filtered);
    assert_eq!(filtered.len(), 2);
    assert!(filtered.iter().all(|r| r["metadata"]["topic"] == "life"));
}

#[test]
fn get_list_and_filters() {
    let s = Store::new();
    let food = s.ok(&[
        "add",
        "--user",
        "alice",
        "Alice is allergic to peanuts",
        "Alice loves spicy ramen",
        "--metadata",
        r#"{"topic":"food","rating":4}"#,
    ]);
    let food_ids: BTreeSet<String> = results(&food)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    s.ok(&[
        "add",
        "--user",
        "alice",
        "Alice runs every morning",
        "--metadata",
        r#"{"topic":"sport","rating":2}"#,
    ]);
    let episode = s.ok(&[
        "add",
        "--user",
        "alice",
        "--kind",
        "episode",
        "Yesterday Alice and I talked about Lisbon",
    ]);
    let episode_id = results(&episode)[0]["id"].as_str().unwrap().to_string();

    // get ID: the memory object itself.
    let id = food_ids.iter().next().unwrap().clone();
    let g = s.ok(&["get", &id]);
    assert_eq!(g["id"], id.as_str());
    assert!(g["memory"].is_string());
    assert_eq!(g["kind"], "fact");
    assert_eq!(g["user_id"], "alice");
    assert_eq!(g["metadata"]["topic"], "food");
    assert!(g["created_at"].is_string());
    assert!(g["valid_until"].is_null());

    // list: everything, newest first (the last add comes first).
    let all = s.list(&["--user", "alice"]);
    assert_eq!(all.len(), 4);
    assert_eq!(all[0]["id"], episode_id.as_str());

    // --filter, text form.
    let only_food = s.list(&["--user", "alice", "--filter", r#"topic = "food""#]);
    let got: BTreeSet<String> = only_food
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, food_ids);

    let rated = s.list(&[
        "--user",
        "alice",
        "--filter",
        r#"rating >= 3 AND topic IN ["food", "sport"]"#,
    ]);
    assert_eq!(rated.len(), 2);
    assert!(rated.iter().all(|r| r["metadata"]["topic"] == "food"));

    // --filter, JSON form.
    let sport = s.list(&["--user", "alice", "--filter", r#"{"topic": "sport"}"#]);
    assert_eq!(texts(&sport), ["Alice runs every morning"]);
    let low = s.list(&["--user", "alice", "--filter", r#"{"rating": {"lt": 3}}"#]);
    assert_eq!(texts(&low), ["Alice runs every morning"]);

    // --kind.
    let episodes = s.list(&["--user", "alice", "--kind", "episode"]);
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0]["kind"], "episode");

    // --limit / --offset.
    assert_eq!(s.list(&["--user", "alice", "--limit", "2"]).len(), 2);
    let rest = s.list(&["--user", "alice", "--limit", "10", "--offset", "3"]);
    assert_eq!(rest.len(), 1);
}

#[test]
fn update_delete_and_history() {
    let s = Store::new();
    let id = s.add("alice", &["Alice lives in Porto"]).remove(0);

    let v = s.ok(&["update", &id, "Alice", "lives", "in", "Lisbon"]);
    let r = &results(&v)[0];
    assert_eq!(r["event"], "UPDATE");
    assert_eq!(r["id"], id.as_str());
    assert_eq!(r["memory"], "Alice lives in Lisbon");
    assert_eq!(r["previous_memory"], "Alice lives in Porto");
    assert_eq!(s.ok(&["get", &id])["memory"], "Alice lives in Lisbon");

    // Search finds the new text, not the old one.
    let hits = s.ok(&["search", "--user", "alice", "Lisbon"]);
    assert_eq!(texts(results(&hits)), ["Alice lives in Lisbon"]);

    // Metadata-only update keeps the text.
    let v = s.ok(&["update", &id, "--metadata", r#"{"city":"Lisbon"}"#]);
    assert_eq!(results(&v)[0]["memory"], "Alice lives in Lisbon");
    assert_eq!(s.ok(&["get", &id])["metadata"]["city"], "Lisbon");

    let v = s.ok(&["delete", &id]);
    let r = &results(&v)[0];
    assert_eq!(r["event"], "DELETE");
    assert_eq!(r["id"], id.as_str());
    assert_eq!(r["memory"], "Alice lives in Lisbon");

    // Gone from list, search and get; readable with --include-deleted and
    // in history.
    assert!(s.list(&["--user", "alice"]).is_empty());
    let hits = s.ok(&["search", "--user", "alice", "Lisbon"]);
    assert!(results(&hits).is_empty(), "{hits}");
    assert_eq!(
        s.list(&["--user", "alice", "--include-superseded"]).len(),
        1
    );
    let m = s.fails(&["get", &id], 3, "not_found");
    assert!(m.contains("was deleted"), "{m}");
    assert!(m.contains("--include-deleted"), "{m}");
    let past = s.ok(&["get", &id, "--include-deleted"]);
    assert!(past["valid_until"].is_string(), "{past}");
    assert_eq!(past["status"], "deleted", "{past}");
    assert!(past["superseded_by"].is_null(), "{past}");
    assert_eq!(past["memory"], "Alice lives in Lisbon");
    let plain = s.run(&["get", &id, "--include-deleted"]);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    assert!(
        plain.stdout.contains("status:     deleted"),
        "{}",
        plain.stdout
    );

    let h = s.ok(&["history", &id]);
    let entries = results(&h);
    let events: Vec<&str> = entries
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["ADD", "UPDATE", "UPDATE", "DELETE"], "{h}");
    for e in entries {
        for k in ["event", "old_memory", "new_memory", "at"] {
            assert!(e.get(k).is_some(), "history entry lacks {k}: {e}");
        }
        assert_eq!(e["memory_id"], id.as_str());
    }
    assert!(entries[0]["old_memory"].is_null());
    assert_eq!(entries[0]["new_memory"], "Alice lives in Porto");
    assert_eq!(entries[1]["old_memory"], "Alice lives in Porto");
    assert_eq!(entries[1]["new_memory"], "Alice lives in Lisbon");
    assert_eq!(entries[3]["old_memory"], "Alice lives in Lisbon");
    assert!(entries[3]["new_memory"].is_null());
    // Oldest first.
    let at: Vec<&str> = entries.iter().map(|e| e["at"].as_str().unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");

    // A deleted memory can be neither deleted nor updated again.
    s.fails(&["delete", &id], 2, "invalid_input");
    s.fails(&["update", &id, "Alice lives in Faro"], 2, "invalid_input");
    assert_eq!(results(&s.ok(&["history", &id])).len(), 4);
}

#[test]
fn forget_counts_and_isolates_users() {
    let s = Store::new();
    let alice = s.add(
        "alice",
        &[
            "Alice is allergic to peanuts",
            "Alice has a cat named Miso",
            "Alice works night shifts at the hospital",
        ],
    );
    let bob = s.add("bob", &["Bob plays the trumpet", "Bob has a dog named Rex"]);
    let alice_set: BTreeSet<String> = alice.iter().cloned().collect();
    let bob_set: BTreeSet<String> = bob.iter().cloned().collect();

    // Bob never sees Alice's memories, even searching for her words.
    for query in ["peanuts allergy", "cat named Miso", "Alice"] {
        let v = s.ok(&["search", "--user", "bob", query, "--top-k", "50"]);
        for r in results(&v) {
            assert_eq!(r["user_id"], "bob", "{r}");
            assert!(!alice_set.contains(r["id"].as_str().unwrap()), "{r}");
        }
    }
    assert_eq!(s.list_ids("bob"), bob_set);
    assert_eq!(s.list_ids("alice"), alice_set);
    // A user with nothing stored gets nothing.
    let v = s.ok(&["search", "--user", "carol", "peanuts"]);
    assert!(results(&v).is_empty(), "{v}");

    let report = s.ok(&["forget", "--user", "alice"]);
    assert_eq!(report["memories_deleted"], 3, "{report}");
    assert_eq!(report["history_deleted"], 0, "{report}");
    assert!(s.list_ids("alice").is_empty());
    let v = s.ok(&["search", "--user", "alice", "peanuts"]);
    assert!(results(&v).is_empty(), "{v}");
    // Without --purge the history stays.
    assert!(!results(&s.ok(&["history", &alice[0]])).is_empty());

    // Bob's memories are untouched.
    assert_eq!(s.list_ids("bob"), bob_set);
    let v = s.ok(&["search", "--user", "bob", "trumpet"]);
    assert_eq!(results(&v)[0]["id"], bob[0].as_str());
    for id in &bob {
        assert!(s.ok(&["get", id])["valid_until"].is_null());
    }

    // Forgetting again finds nothing; --purge drops the history too.
    assert_eq!(s.ok(&["forget", "--user", "alice"])["memories_deleted"], 0);
    let purged = s.ok(&["forget", "--user", "bob", "--purge"]);
    assert_eq!(purged["memories_deleted"], 2, "{purged}");
    assert_eq!(purged["history_deleted"], 2, "{purged}");
    s.fails(&["history", &bob[0]], 3, "not_found");
}

#[test]
fn agent_scope_is_separate_from_user_scope() {
    let s = Store::new();
    let agent = s.ok(&["add", "--agent", "helper", "Always answer in French"]);
    let agent_id = results(&agent)[0]["id"].as_str().unwrap().to_string();
    s.add("alice", &["Alice speaks Portuguese"]);
    let listed = s.list(&["--agent", "helper"]);
    assert_eq!(texts(&listed), ["Always answer in French"]);
    assert_eq!(listed[0]["agent_id"], "helper");
    assert!(!s.list_ids("alice").contains(&agent_id));
}

#[test]
fn file_input_one_memory_per_line() {
    let s = Store::new();
    let path = s.dir.path().join("memories.txt");
    std::fs::write(
        &path,
        "Alice drinks oat milk\r\n\n   \nAlice was born in 1990\n",
    )
    .unwrap();
    let v = s.ok(&["add", "--user", "alice", "--file", path.to_str().unwrap()]);
    assert_eq!(
        texts(results(&v)),
        ["Alice drinks oat milk", "Alice was born in 1990"]
    );
}

#[test]
fn ttl_sets_expiry() {
    let s = Store::new();
    let id = s.ok(&["add", "--user", "alice", "Alice is in Paris", "--ttl", "7d"])["results"][0]
        ["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(s.ok(&["get", &id])["expires_at"].is_string());
}

#[test]
fn text_at_the_size_limit_is_accepted() {
    let s = Store::new();
    let text = "word ".repeat(MAX_TEXT_BYTES / 5) + &"x".repeat(MAX_TEXT_BYTES % 5);
    assert_eq!(text.len(), MAX_TEXT_BYTES);
    let v = s.ok(&["add", "--user", "alice", &text]);
    assert_eq!(results(&v)[0]["event"], "ADD");
}

/// A store with a few memories, to check that bad input loses nothing.
fn seeded() -> (Store, BTreeSet<String>) {
    let s = Store::new();
    let ids = s.add(
        "alice",
        &["Alice is allergic to peanuts", "Alice has a cat named Miso"],
    );
    (s, ids.into_iter().collect())
}

fn assert_untouched(s: &Store, ids: &BTreeSet<String>) {
    assert_eq!(&s.list_ids("alice"), ids, "bad input changed the store");
    assert_eq!(
        s.stored_count(),
        ids.len() as u64,
        "bad input stored something"
    );
}

#[test]
fn empty_and_oversized_text_are_refused() {
    let (s, ids) = seeded();
    let m = s.fails(&["add", "--user", "alice", ""], 2, "invalid_input");
    assert!(m.contains("empty"), "{m}");
    s.fails(&["add", "--user", "alice", "   \t "], 2, "invalid_input");
    s.fails(&["add", "--user", "alice"], 2, "invalid_input");
    // One bad text among good ones stores none of them.
    s.fails(
        &["add", "--user", "alice", "Alice likes jazz", ""],
        2,
        "invalid_input",
    );

    let big = "a".repeat(MAX_TEXT_BYTES + 1);
    let m = s.fails(&["add", "--user", "alice", &big], 2, "invalid_input");
    assert!(m.contains("32768"), "{m}");
    s.fails(
        &["add", "--user", "alice", "Alice likes jazz", &big],
        2,
        "invalid_input",
    );

    // The same through --file.
    let path = s.dir.path().join("big.txt");
    std::fs::write(&path, format!("Alice likes jazz\n{big}\n")).unwrap();
    s.fails(
        &["add", "--user", "alice", "--file", path.to_str().unwrap()],
        2,
        "invalid_input",
    );

    // Updates are held to the same rules.
    let id = ids.iter().next().unwrap();
    s.fails(&["update", id, ""], 2, "invalid_input");
    s.fails(&["update", id, &big], 2, "invalid_input");
    s.fails(&["search", "--user", "alice", ""], 2, "invalid_input");

    assert_untouched(&s, &ids);
    for id in &ids {
        // No update went through.
        assert_eq!(results(&s.ok(&["history", id])).len(), 1);
    }
}

#[test]
fn invalid_utf8_file_stores_nothing() {
    let (s, ids) = seeded();
    let path = s.dir.path().join("bad.txt");
    std::fs::write(&path, b"ok line\n\xff\xfe bad\n").unwrap();
    let m = s.fails(
        &["add", "--user", "alice", "--file", path.to_str().unwrap()],
        2,
        "invalid_input",
    );
    assert!(m.contains("UTF-8"), "{m}");
    assert!(m.contains("line 2"), "{m}");
    assert_untouched(&s, &ids);
    assert!(!texts(&s.list(&["--user", "alice"])).contains(&"ok line".to_string()));

    // With texts on the command line too: still nothing.
    s.fails(
        &[
            "add",
            "--user",
            "alice",
            "Alice likes jazz",
            "--file",
            path.to_str().unwrap(),
        ],
        2,
        "invalid_input",
    );
    assert_untouched(&s, &ids);
}

#[test]
fn missing_file_is_an_error() {
    let (s, ids) = seeded();
    let missing = s.dir.path().join("nope.txt");
    let out = s.run(&[
        "add",
        "--user",
        "alice",
        "--file",
        missing.to_str().unwrap(),
        "--json",
    ]);
    assert_ne!(out.code, Some(0));
    assert_one_error_line(&out.stderr, &["add --file missing"]);
    let v = one_json_document(&out.stdout, &["add --file missing"]);
    assert!(v["error"]["message"].as_str().unwrap().contains("nope.txt"));
    assert_untouched(&s, &ids);
}

#[test]
fn bad_filters_are_refused() {
    let (s, ids) = seeded();
    for filter in [
        "topic = ",
        r#"(topic = "food""#,
        r#"topic = "food" AND"#,
        r#"topic ~ "food""#,
        r#"topic = "unclosed"#,
        "{not json",
        r#"{"topic": {"foo": 1}}"#,
        r#"{"topic": {"in": "food"}}"#,
    ] {
        let m = s.fails(
            &["list", "--user", "alice", "--filter", filter],
            2,
            "invalid_input",
        );
        assert!(m.contains("filter"), "{filter}: {m}");
        s.fails(
            &["search", "--user", "alice", "peanuts", "--filter", filter],
            2,
            "invalid_input",
        );
    }
    assert_untouched(&s, &ids);
}

#[test]
fn unknown_ids_are_not_found() {
    let (s, ids) = seeded();
    let unknown = "01890000-0000-7000-8000-000000000000";
    for args in [
        vec!["get", unknown],
        vec!["update", unknown, "Alice likes jazz"],
        vec!["update", unknown, "--metadata", r#"{"a":1}"#],
        vec!["delete", unknown],
        vec!["history", unknown],
        vec!["get", "not-an-id"],
    ] {
        let m = s.fails(&args, 3, "not_found");
        assert!(m.contains(args[1]), "{m}");
    }
    assert_untouched(&s, &ids);
}

/// A control character cannot be in an id: refused as invalid (exit 2),
/// echoed escaped, so the error stays one line.
#[test]
fn id_with_a_newline_still_gives_one_error_line() {
    let (s, _) = seeded();
    let m = s.fails(&["get", "abc\ndef"], 2, "invalid_input");
    assert!(m.contains(r#""abc\ndef""#), "{m}");
    s.fails(&["delete", "abc\r\ndef"], 2, "invalid_input");
}

/// An id no store could hold (5,000 bytes) is the caller's error for every
/// by-id command, refused before the store or the model is touched, and
/// echoed as a short prefix with its length rather than in full.
#[test]
fn oversized_ids_are_invalid_input() {
    let (s, ids) = seeded();
    let long = "x".repeat(5000);
    for args in [
        vec!["get", &long],
        vec!["delete", &long],
        vec!["history", &long],
        vec!["update", &long, "Alice likes jazz"],
        vec!["update", &long, "--metadata", r#"{"a":1}"#],
    ] {
        let m = s.fails(&args, 2, "invalid_input");
        assert!(m.len() < 300, "{} bytes: {m}", m.len());
        assert!(m.contains("(5000 bytes)"), "{m}");
    }
    assert_untouched(&s, &ids);
}

#[test]
fn missing_scope_is_refused() {
    let (s, ids) = seeded();
    for args in [
        vec!["add", "Alice likes jazz"],
        vec!["add", "--session", "s1", "Alice likes jazz"],
        vec!["search", "peanuts"],
        vec!["list"],
        vec!["forget"],
        vec!["forget", "--purge"],
        vec!["forget", "--session", "s1"],
    ] {
        let m = s.fails(&args, 2, "invalid_input");
        assert!(m.contains("--user"), "{m}");
    }
    // In particular, forget without a scope forgot nothing.
    assert_untouched(&s, &ids);
}

#[test]
fn bad_metadata_is_refused() {
    let (s, ids) = seeded();
    for metadata in ["{bad", "[1, 2]", r#""food""#, "42", "null", ""] {
        let m = s.fails(
            &[
                "add",
                "--user",
                "alice",
                "Alice likes jazz",
                "--metadata",
                metadata,
            ],
            2,
            "invalid_input",
        );
        assert!(m.contains("metadata"), "{metadata}: {m}");
    }
    let id = ids.iter().next().unwrap();
    s.fails(&["update", id, "--metadata", "{bad"], 2, "invalid_input");
    s.fails(
        &["update", id, "Alice likes jazz", "--metadata", "[]"],
        2,
        "invalid_input",
    );
    assert_untouched(&s, &ids);
    assert_eq!(results(&s.ok(&["history", id])).len(), 1);
}

#[test]
fn bad_ttl_is_refused() {
    let (s, ids) = seeded();
    for ttl in [
        "5y",
        "",
        "d",
        "-1d",
        "0s",
        "1.5h",
        "tomorrow",
        "3日",
        "7 d",
        "99999999999999999w",
    ] {
        // `--ttl=VALUE`, so that "-1d" reaches memloop rather than clap.
        let arg = format!("--ttl={ttl}");
        let m = s.fails(
            &["add", "--user", "alice", "Alice likes jazz", &arg],
            2,
            "invalid_input",
        );
        assert!(m.contains("--ttl"), "{ttl}: {m}");
    }
    assert_untouched(&s, &ids);
}

#[test]
fn other_bad_options_are_refused() {
    let (s, ids) = seeded();
    s.fails(
        &[
            "add",
            "--user",
            "alice",
            "Alice likes jazz",
            "--kind",
            "opinion",
        ],
        2,
        "invalid_input",
    );
    s.fails(
        &[
            "add",
            "--user",
            "alice",
            "Alice likes jazz",
            "--importance",
            "2",
        ],
        2,
        "invalid_input",
    );
    s.fails(
        &["list", "--user", "alice", "--kind", "opinion"],
        2,
        "invalid_input",
    );
    s.fails(
        &["add", "--user", "", "Alice likes jazz"],
        2,
        "invalid_input",
    );
    s.fails(
        &["add", "--user", "al\nice", "Alice likes jazz"],
        2,
        "invalid_input",
    );
    assert_untouched(&s, &ids);
}

#[test]
fn data_dir_is_where_memories_live() {
    let s = Store::new();
    s.add("alice", &["Alice is allergic to peanuts"]);
    let other = Store::new();
    assert!(other.list_ids("alice").is_empty());
    assert!(Path::new(s.dir.path()).read_dir().unwrap().next().is_some());
}

fn fact_events(v: &Value) -> Vec<(String, String)> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "fact")
        .map(|r| {
            (
                r["event"].as_str().unwrap().to_string(),
                r["memory"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `remember` gates with `[loop.gate]` from the config file, as the loop,
/// MCP and REST do (it used to apply the default gate whatever the file said).
#[test]
fn remember_uses_the_configured_gate() {
    let s = Store::new();
    let file = s.dir.path().join("memloop.toml");
    std::fs::write(&file, "[loop.gate]\njudged_roles = [\"human\"]\n").unwrap();
    let config = file.to_str().unwrap();
    let kept = s.ok(&["remember", "--user", "u1", "I live in Paris"]);
    assert_eq!(kept["persisted"], true);
    let skipped = s.ok(&[
        "--config",
        config,
        "remember",
        "--user",
        "u2",
        "I live in Paris",
    ]);
    assert_eq!(skipped["persisted"], false, "{skipped}");
    assert!(skipped["results"].as_array().unwrap().is_empty());
}

#[test]
fn remember_gates_extracts_supersedes_and_replays_as_noop() {
    let s = Store::new();
    let hi = s.ok(&["remember", "--user", "u1", "Hi there!"]);
    assert_eq!(hi["persisted"], false);
    assert!(hi["results"].as_array().unwrap().is_empty());
    assert!(!hi["reason"].as_str().unwrap().is_empty());

    let paris = s.ok(&["remember", "--user", "u1", "I live in Paris"]);
    assert_eq!(paris["persisted"], true);
    assert_eq!(
        fact_events(&paris),
        vec![("ADD".into(), "User lives in Paris".into())]
    );
    let paris_id = paris["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "fact")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let berlin = s.ok(&["remember", "--user", "u1", "I moved to Berlin last month"]);
    let ev = fact_events(&berlin);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].0, "UPDATE");
    assert!(ev[0].1.starts_with("User lives in Berlin"), "{ev:?}");
    let update = berlin["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "fact")
        .unwrap();
    assert_eq!(update["previous_memory"], "User lives in Paris");

    // Berlin is current, Paris superseded with valid_until and history.
    let current = s.ok(&["list", "--user", "u1", "--kind", "fact"]);
    let texts: Vec<&str> = current["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 1);
    assert!(texts[0].contains("Berlin"));
    let all = s.ok(&[
        "list",
        "--user",
        "u1",
        "--kind",
        "fact",
        "--include-superseded",
    ]);
    assert_eq!(all["results"].as_array().unwrap().len(), 2);
    // Superseded: not found, naming the successor; readable on request.
    let berlin_id = current["results"][0]["id"].as_str().unwrap().to_string();
    let m = s.fails(&["get", &paris_id], 3, "not_found");
    assert!(m.contains("was superseded by"), "{m}");
    assert!(m.contains(&berlin_id), "{m}");
    let old = s.ok(&["get", &paris_id, "--include-deleted"]);
    assert!(old["valid_until"].is_string(), "{old}");
    assert_eq!(old["status"], "superseded", "{old}");
    assert_eq!(old["superseded_by"], berlin_id.as_str(), "{old}");
    assert_eq!(s.ok(&["get", &berlin_id])["status"], "current");
    let history = s.ok(&["history", &paris_id]);
    let last = history["results"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["event"], "UPDATE");
    assert_eq!(last["old_memory"], "User lives in Paris");

    // Replaying the turn changes nothing.
    let again = s.ok(&["remember", "--user", "u1", "I moved to Berlin last month"]);
    assert!(
        again["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["event"] == "NOOP"),
        "{again}"
    );
    let after = s.ok(&["list", "--user", "u1", "--include-superseded"]);
    assert_eq!(
        after["results"].as_array().unwrap().len(),
        4,
        "2 episodes, 2 facts"
    );
}

#[test]
fn demo_recalls_across_sessions_offline_with_the_documented_shape() {
    let s = Store::new();
    let v = s.ok(&["demo"]);
    let turns = v["turns"].as_array().unwrap();
    assert!(turns.len() >= 8);
    for t in turns {
        for key in [
            "session",
            "input",
            "reply",
            "retrieved",
            "persisted",
            "reason",
            "input_tokens",
            "full_history_tokens",
        ] {
            assert!(t.get(key).is_some(), "turn lacks {key}: {t}");
        }
    }
    // Session 2 asks about what session 1 said, and gets it back.
    let ask = turns
        .iter()
        .find(|t| t["session"] == "demo-session-2" && t["input"].as_str().unwrap().contains("work"))
        .unwrap();
    let top = &ask["retrieved"][0];
    assert!(top["memory"].as_str().unwrap().contains("nurse"), "{ask}");
    assert!(top["id"].is_string() && top["score"].is_number());
    let hello = &turns[0];
    assert_eq!(hello["persisted"], false);
}

#[test]
fn chat_without_a_model_says_how_to_configure_one_and_shows_the_context() {
    use std::io::Write;
    let s = Store::new();
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(s.dir.path())
        .args([
            "--log-format",
            "json",
            "chat",
            "--user",
            "u1",
            "--session",
            "c1",
        ])
        .env_remove("MEMLOOP_LLM_PROVIDER")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"I am allergic to peanuts.\nWhat should I avoid eating?\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("no LLM configured") && stderr.contains("[llm]"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("--- context (offline) ---"), "{stdout}");
    assert!(
        stdout.contains("[user] What should I avoid eating?"),
        "{stdout}"
    );
}

/// The `memory_write` events a command logged (`--log-format json`), parsed.
fn write_events(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "memory_write")
        .collect()
}

/// Writes outside a turn are logged too, naming whose they were, with the
/// ids written and no text: `add` and `remember` (kept and skipped).
#[test]
fn add_and_remember_log_a_memory_write_naming_tenant_and_user() {
    let s = Store::new();
    let add = |args: &[&str]| {
        let mut all = vec!["--log-format", "json"];
        all.extend_from_slice(args);
        all.push("--json");
        let out = s.run(&all);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        (
            one_json_document(&out.stdout, args),
            write_events(&out.stderr),
        )
    };

    let (added, events) = add(&[
        "add",
        "--user",
        "u1",
        "--agent",
        "a1",
        "Ada likes green tea",
    ]);
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["source"], "add");
    assert_eq!(e["tenant"], "default");
    assert_eq!(e["user_id"], "u1");
    assert_eq!(e["agent_id"], "a1");
    let writes: Value = serde_json::from_str(e["writes"].as_str().unwrap()).unwrap();
    assert_eq!(writes[0]["id"], results(&added)[0]["id"]);
    assert_eq!(writes[0]["event"], "ADD");
    assert!(
        !e.to_string().contains("green tea"),
        "no text in the log: {e}"
    );

    let (kept, events) = add(&["remember", "--user", "u2", "I live in Paris"]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["source"], "remember");
    assert_eq!(events[0]["user_id"], "u2");
    assert_eq!(events[0]["persisted"], true);
    let writes: Value = serde_json::from_str(events[0]["writes"].as_str().unwrap()).unwrap();
    let ids: Vec<&Value> = writes
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["id"])
        .collect();
    for r in results(&kept) {
        assert!(ids.contains(&&r["id"]), "{r} not in {writes}");
    }
    assert!(!events[0].to_string().contains("Paris"));

    let (_, events) = add(&["remember", "--user", "u2", "Hi there!"]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["persisted"], false);
    assert_eq!(events[0]["writes"], "[]");
}

/// `memloop procedures add|search`: a failed run then a successful one of
/// the same task, from files; the search ranks and names the pitfall; a bad
/// file names its field and stores nothing; `demo --layers three` recalls
/// the procedure and its pitfall in a later session.
#[test]
fn procedures_are_recorded_from_files_merged_and_found_with_their_pitfall() {
    let s = Store::new();
    let write = |name: &str, v: Value| {
        let path = s.dir.path().join(name);
        std::fs::write(&path, v.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let failed = write(
        "fail.json",
        serde_json::json!({"task": "deploy the web app", "outcome": "failure",
            "steps": [{"tool": "shell", "args": "npm run deploy", "ok": false, "error": "EACCES"}]}),
    );
    let worked = write(
        "ok.json",
        serde_json::json!({"task": "deploy the web app", "outcome": "success",
            "steps": [{"tool": "shell", "args": "sudo -u deploy npm run deploy"}]}),
    );
    let a = s.ok(&["procedures", "add", "--user", "ops", "--file", &failed]);
    assert_eq!(a["results"][0]["event"], "ADD");
    let b = s.ok(&["procedures", "add", "--user", "ops", "--file", &worked]);
    assert_eq!(b["results"][0]["event"], "UPDATE");
    let found = s.ok(&[
        "procedures",
        "search",
        "--user",
        "ops",
        "deploy",
        "the",
        "web",
        "app",
    ]);
    let top = &found["results"][0];
    assert_eq!(top["procedure"]["successes"], 1, "{found}");
    assert_eq!(
        top["pitfalls"][0],
        "`shell npm run deploy` failed with EACCES; `shell sudo -u deploy npm run deploy` worked"
    );
    let text = s.run(&[
        "procedures",
        "search",
        "--user",
        "ops",
        "deploy the web app",
    ]);
    assert!(text.stdout.contains("× success 0.50"), "{}", text.stdout);
    assert!(text
        .stdout
        .contains("pitfall: last time `shell npm run deploy` failed"));

    let bad = write(
        "bad.json",
        serde_json::json!({"task": "x", "outcome": "success", "steps": [{"tool": "t", "ok": "maybe"}]}),
    );
    let msg = s.fails(
        &["procedures", "add", "--user", "ops", "--file", &bad],
        2,
        "invalid_input",
    );
    assert!(msg.contains("bad.json") && msg.contains("ok"), "{msg}");
    let listed = s.ok(&["list", "--user", "ops", "--kind", "procedure"]);
    assert_eq!(listed["results"].as_array().unwrap().len(), 1, "{listed}");

    let demo = s.ok(&["demo", "--layers", "three"]);
    let system = demo["context"]["system"].as_str().unwrap();
    assert!(system.contains("sudo -u deploy npm run deploy"), "{system}");
    assert!(
        system.contains("pitfall: last time `shell npm run deploy` failed"),
        "{system}"
    );
    let recorded = demo["recorded"].as_array().unwrap();
    assert_eq!(recorded[1]["procedure"]["event"], "UPDATE", "{demo}");
}

/// `bench --searches-only` imports a size's store once into `--work-dir`,
/// then measures only its searches on it: the second run has no import
/// figures, the same searches, and the recall of the same store.
#[test]
fn bench_searches_only_reuses_the_stored_store() {
    let store = Store::new();
    let work = store.path().join("bench-work");
    let work = work.to_str().unwrap();
    let args = [
        "bench",
        "--sizes",
        "400",
        "--skip-embedding",
        "--gc-memories",
        "0",
        "--long-users",
        "0",
        "--cold-users",
        "0",
        "--queries",
        "20",
        "--work-dir",
        work,
        "--searches-only",
    ];
    let first = store.ok(&args);
    let second = store.ok(&args);
    let (first, second) = (&first["stores"][0], &second["stores"][0]);
    assert!(
        first["bulk_import_per_s"].as_f64().unwrap() > 0.0,
        "{first}"
    );
    assert!(second["bulk_import_per_s"].is_null(), "{second}");
    assert!(second["open_ready_ms"].is_null(), "{second}");
    for key in ["search_hybrid_p99_ms", "search_dense_p50_ms"] {
        assert!(second[key].as_f64().unwrap() > 0.0, "{key}: {second}");
    }
    // The same store and queries: exact recall is computed against the
    // import replayed, so a store other than the import would score low.
    for run in [first, second] {
        assert!(run["recall_at_10"].as_f64().unwrap() > 0.8, "{run}");
    }
}
