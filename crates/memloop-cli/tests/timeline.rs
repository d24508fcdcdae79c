#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The real `memloop` binary: past conversations written with `--at`
//! (`add` and `remember`), and `memloop sessions` listing them on the time
//! axis, newest first, by when they were said rather than written.

use serde_json::Value;

mod common;
use common::Store;

#[test]
fn sessions_written_with_at_are_listed_where_they_were_said() {
    let s = Store::new();
    // Five sessions, written out of order, by add and by remember.
    let talks = [
        (
            "s4",
            "2023-06-02T18:30:00Z",
            "We talked about the tax forms",
        ),
        ("s1", "2023-05-08", "We talked about my new puppy Biscuit"),
        ("s5", "1686400000", "We talked about the pottery exhibition"),
        (
            "s2",
            "2023-05-15T09:00:00+02:00",
            "We talked about the job offer in Oslo",
        ),
    ];
    for (session, at, text) in talks {
        let v = s.ok(&[
            "add",
            "--user",
            "ula",
            "--session",
            session,
            "--at",
            at,
            text,
        ]);
        let id = v["results"][0]["id"].as_str().unwrap().to_string();
        let got = s.ok(&["get", &id]);
        let want = memloop_time(at);
        assert_eq!(got["valid_from"], want, "{session}: {got}");
    }
    let r = s.ok(&[
        "remember",
        "--user",
        "ula",
        "--session",
        "s3",
        "--at",
        "2023-05-22",
        "--no-gate",
        "I am training for a marathon in Rome.",
    ]);
    let events = r["results"].as_array().unwrap();
    assert!(!events.is_empty(), "{r}");
    for e in events {
        let got = s.ok(&["get", e["id"].as_str().unwrap()]);
        assert_eq!(got["valid_from"], "2023-05-22T00:00:00.000Z", "{got}");
    }
    // Someone else's session is not ula's.
    s.ok(&[
        "add",
        "--user",
        "vic",
        "--session",
        "v1",
        "--at",
        "2023-07-01",
        "vic note",
    ]);

    let v = s.ok(&["sessions", "--user", "ula"]);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["sessions"], "{v}");
    let sessions = v["sessions"].as_array().unwrap();
    let got: Vec<(&str, u64, &str)> = sessions
        .iter()
        .map(|s| {
            let mut k: Vec<&String> = s.as_object().unwrap().keys().collect();
            k.sort();
            assert_eq!(
                k,
                ["ended_at", "id", "memories", "ordinal", "started_at"],
                "{s}"
            );
            assert_eq!(s["started_at"], s["ended_at"], "{s}");
            (
                s["id"].as_str().unwrap(),
                s["ordinal"].as_u64().unwrap(),
                s["started_at"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("s5", 5, "2023-06-10T12:26:40.000Z"),
            ("s4", 4, "2023-06-02T18:30:00.000Z"),
            ("s3", 3, "2023-05-22T00:00:00.000Z"),
            ("s2", 2, "2023-05-15T07:00:00.000Z"),
            ("s1", 1, "2023-05-08T00:00:00.000Z"),
        ]
    );
    assert_eq!(sessions[0]["memories"], 1);
    assert_eq!(
        sessions[2]["memories"].as_u64().unwrap() as usize,
        events.len()
    );

    // The text form: one line per session, newest first.
    let out = s.run(&["sessions", "--user", "ula"]);
    assert!(out.code == Some(0));
    let text = out.stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[0].starts_with("#5") && lines[0].ends_with("s5"),
        "{text}"
    );
    assert!(
        lines[4].starts_with("#1") && lines[4].ends_with("s1"),
        "{text}"
    );
    let none = s.ok(&["sessions", "--user", "nobody"]);
    assert_eq!(none["sessions"], Value::Array(Vec::new()));
}

/// What `get` shows as valid_from for an `--at` value of the test.
fn memloop_time(at: &str) -> &'static str {
    match at {
        "2023-06-02T18:30:00Z" => "2023-06-02T18:30:00.000Z",
        "2023-05-08" => "2023-05-08T00:00:00.000Z",
        "1686400000" => "2023-06-10T12:26:40.000Z",
        "2023-05-15T09:00:00+02:00" => "2023-05-15T07:00:00.000Z",
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn a_bad_at_stores_nothing_and_sessions_needs_a_scope() {
    let s = Store::new();
    for args in [
        &["add", "--user", "ula", "--at", "last tuesday", "a fact"][..],
        &["add", "--user", "ula", "--at", "99999-01-01", "a fact"][..],
        &[
            "remember",
            "--user",
            "ula",
            "--at",
            "2023-02-30",
            "I live in Oslo",
        ][..],
    ] {
        let out = s.run(args);
        assert_eq!(out.code, Some(2), "{args:?}");
        let err = out.stderr;
        assert!(err.starts_with("error:") && err.contains("--at"), "{err}");
    }
    let listed = s.ok(&["list", "--user", "ula"]);
    assert_eq!(listed["results"], Value::Array(Vec::new()));
    let out = s.run(&["sessions"]);
    assert_eq!(out.code, Some(2));
}

/// A later employer ends the earlier one in the graph, and `--as-of` reads
/// the links as they were. Both memories stay current (written as given,
/// with their facts' structure), so only the relations' own validity
/// tells which holds.
#[test]
fn links_show_the_relations_that_held_then() {
    let s = Store::new();
    for (at, org) in [("2026-01-10", "Acme"), ("2026-01-20", "Globex")] {
        let fact =
            format!(r#"{{"fact":{{"subject":"anna","attribute":"works_at","value":"{org}"}}}}"#);
        s.ok(&[
            "add",
            "--user",
            "ula",
            "--at",
            at,
            "--metadata",
            &fact,
            &format!("Anna works at {org}"),
        ]);
    }
    let works = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["links", "Anna", "--user", "ula"];
        args.extend_from_slice(extra);
        let v = s.ok(&args);
        v["relations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["relation"] == "works_at")
            .map(|r| r["object"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(works(&[]), ["Globex"]);
    assert_eq!(works(&["--as-of", "2026-01-15"]), ["Acme"]);
    // Before anything was said no memory named Anna: not found (exit 3),
    // with a message that says where to look.
    let before = s.run(&["links", "Anna", "--user", "ula", "--as-of", "2026-01-05"]);
    assert_eq!(before.code, Some(3), "{}", before.stderr);
    assert!(
        before.stderr.contains("names the entity \"Anna\"")
            && before.stderr.contains("memloop entities"),
        "{}",
        before.stderr
    );
    let entities = s.ok(&["entities", "--user", "ula", "--as-of", "2026-01-15"]);
    let names: Vec<&str> = entities["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Acme") && !names.contains(&"Globex"),
        "{names:?}"
    );
    let bad = s.run(&[
        "links", "Anna", "--user", "ula", "--as-of", "soon", "--json",
    ]);
    assert_eq!(bad.code, Some(2), "{}", bad.stdout);
    assert!(bad.stdout.contains("--as-of"), "{}", bad.stdout);
}
