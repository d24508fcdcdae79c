#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Time expressions in search queries, through the real `memloop` binary:
//! `--now` sets when the question is asked, `--time-mode` what the window
//! does, and the output says how the query was read.

use serde_json::Value;

mod common;
use common::Store;

/// The texts of a search's hits, best first.
fn texts(v: &Value) -> Vec<String> {
    common::texts(common::results(v))
}

/// Five sessions a week apart, written afterwards with `--at` (by `add`
/// and by `remember`, out of order): "three sessions ago" is s3, "the last
/// session" s5 and "the first time we talked" s1, counted back from `--now`;
/// a question asked before s5 began counts from s4. The reading names the
/// session and its span, and only its memories are returned.
#[test]
fn session_references_find_the_session_counted_back_from_now() {
    let s = Store::new();
    let talks = [
        (
            "s3",
            "2024-03-15T18:00:00Z",
            "add",
            "We planned the garden: tomatoes, basil and a small pond",
        ),
        (
            "s1",
            "2024-03-01T18:00:00Z",
            "remember",
            "My sister Ines is getting married in Lisbon in June",
        ),
        (
            "s5",
            "2024-03-29T18:00:00Z",
            "add",
            "We compared two laptops for video editing",
        ),
        (
            "s2",
            "2024-03-08T18:00:00Z",
            "add",
            "We went over the budget for the kitchen renovation",
        ),
        (
            "s4",
            "2024-03-22T18:00:00Z",
            "remember",
            "I started training for the half marathon in May",
        ),
    ];
    for (session, at, how, text) in talks {
        s.ok(&[how, "--user", "u", "--session", session, "--at", at, text]);
        // A second memory in the session, said an hour later.
        let later = at.replace("T18", "T19");
        s.ok(&[
            "add",
            "--user",
            "u",
            "--session",
            session,
            "--at",
            &later,
            &format!("Follow-up in {session}: we agreed to talk again"),
        ]);
    }
    let sessions_of = |v: &Value| -> Vec<String> {
        common::results(v)
            .iter()
            .map(|h| h["session_id"].as_str().unwrap().to_string())
            .collect()
    };
    let now = "2024-04-02";
    let cases = [
        ("what did we talk about three sessions ago", now, "s3"),
        ("what did we talk about in the last session", now, "s5"),
        ("what did we discuss the first time we talked", now, "s1"),
        (
            "what did we talk about in the last session",
            "2024-03-28",
            "s4",
        ),
    ];
    for (q, now, want) in cases {
        let v = s.ok(&["search", "--user", "u", "--now", now, q]);
        let got = sessions_of(&v);
        assert!(!got.is_empty(), "{q} (now {now}): nothing found: {v}");
        assert!(
            got.iter().all(|x| x == want),
            "{q} (now {now}): {got:?}, want only {want}: {v}"
        );
        assert!(got.len() >= 2, "{q}: the session's memories, not one: {v}");
        assert_eq!(v["time"]["session"], want, "{v}");
        assert_eq!(v["time"]["mode"], "filter", "{v}");
    }
    // The span: s3 ran from its first turn to its last.
    let v = s.ok(&["search", "--user", "u", "--now", now, "three sessions ago"]);
    assert_eq!(v["time"]["start"], "2024-03-15T18:00:00.000Z", "{v}");
    assert_eq!(v["time"]["end"], "2024-03-15T19:00:00.001Z", "{v}");
    // Printed as the trace line says.
    let out = s.run(&[
        "search",
        "--user",
        "u",
        "--now",
        now,
        "what did we talk about three sessions ago",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("from \"three sessions ago\" (filter), session s3"),
        "{}",
        out.stdout
    );
    // More sessions back than there are: said, and the search is not narrowed.
    let v = s.ok(&[
        "search",
        "--user",
        "u",
        "--now",
        now,
        "what did we talk about nine sessions ago",
    ]);
    assert!(
        v["time"]["note"]
            .as_str()
            .unwrap()
            .contains("no such session"),
        "{v}"
    );
    assert!(sessions_of(&v).len() > 2, "{v}");
}

/// Memories written now; questions asked on 2030-01-10 about "yesterday"
/// (2030-01-09): the boost still finds them, the filter finds none, and
/// asked today the filter finds them. Each says how the query was read.
#[test]
fn a_question_s_time_is_read_against_now_and_filters_or_boosts() {
    let s = Store::new();
    s.ok(&["add", "--user", "u", "I bought a red bicycle"]);
    s.ok(&["add", "--user", "u", "I repaired the bicycle chain"]);
    let q = "what did I do with the bicycle yesterday";
    let boosted = s.ok(&["search", "--user", "u", "--now", "2030-01-10", q]);
    assert_eq!(texts(&boosted).len(), 2, "{boosted}");
    let t = &boosted["time"];
    assert_eq!(t["phrase"], "yesterday");
    assert_eq!(t["start"], "2030-01-09T00:00:00.000Z");
    assert_eq!(t["end"], "2030-01-10T00:00:00.000Z");
    assert_eq!(t["mode"], "boost");
    // Outside the window: the signal is there, below 1.
    let signal = boosted["results"][0]["scores"]["time"].as_f64().unwrap();
    assert!(signal > 0.0 && signal < 1.0, "{signal}");

    let filtered = s.ok(&[
        "search",
        "--user",
        "u",
        "--now",
        "2030-01-10",
        "--time-mode",
        "filter",
        q,
    ]);
    assert!(texts(&filtered).is_empty(), "{filtered}");
    assert_eq!(filtered["time"]["mode"], "filter");

    let today = s.ok(&[
        "search",
        "--user",
        "u",
        "--time-mode",
        "filter",
        "what did I do with the bicycle today",
    ]);
    assert_eq!(texts(&today).len(), 2, "{today}");
    assert_eq!(today["results"][0]["scores"]["time"], 1.0);

    let off = s.ok(&["search", "--user", "u", "--time-mode", "off", q]);
    assert!(off.get("time").is_none(), "{off}");
    assert_eq!(off["results"][0]["scores"]["time"], 0.0);

    // The human output says how the query was read.
    let out = s.run(&[
        "search",
        "--user",
        "u",
        "--now",
        "2030-01-10",
        "bicycle in May 2029",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("time: 2029-05-01..2029-05-31 from \"in May 2029\" (boost)\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn bad_reference_times_and_modes_are_refused_saying_what_to_write() {
    let s = Store::new();
    s.ok(&["add", "--user", "u", "I bought a red bicycle"]);
    for (args, words) in [
        (["--now", "soon"], "--now \"soon\" is not a date"),
        (["--time-mode", "strict"], "--time-mode"),
    ] {
        let mut all = vec!["search", "--user", "u", "bicycle"];
        all.extend(args);
        let out = s.run(&all);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("error:") && out.stderr.contains(words),
            "{}",
            out.stderr
        );
    }
}
