#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `memloop export` / `memloop import` with the real binary: an embedded
//! store moved to PostgreSQL and back is the same store, line for line;
//! importing twice writes nothing twice; a bad line is refused by number,
//! keeping the lines before it. Needs the test server (scripts/pg.sh).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod pg_common;
use pg_common::{server_url, Database};

const BIN: &str = env!("CARGO_BIN_EXE_memloop");

/// The binary on a data directory, or on a database when `store` is set.
fn memloop(dir: &Path, store: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("MEMLOOP_STORE")
        .env_remove("MEMLOOP_SHORT_TERM")
        .stdin(Stdio::null());
    if let Some(url) = store {
        cmd.arg("--store").arg(url);
    }
    cmd.output().unwrap()
}

fn ok(dir: &Path, store: Option<&str>, args: &[&str]) -> String {
    let out = memloop(dir, store, args);
    assert!(
        out.status.success(),
        "memloop {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn import(dir: &Path, store: Option<&str>, file: &Path) -> Value {
    let report = ok(dir, store, &["import", file.to_str().unwrap(), "--json"]);
    serde_json::from_str(&report).unwrap()
}

fn id_of(json: &str) -> String {
    let v: Value = serde_json::from_str(json).unwrap();
    v["results"][0]["id"].as_str().unwrap().to_string()
}

#[test]
fn embedded_to_postgres_to_embedded_round_trips_exactly() {
    let Some(admin) = server_url() else { return };
    let db = Database::create(&admin);
    let tmp = tempfile::tempdir().unwrap();
    let (a, pg, c) = (
        tmp.path().join("a"),
        tmp.path().join("pg"),
        tmp.path().join("c"),
    );

    // A store with every kind of row: current, updated, deleted,
    // superseded, metadata, a TTL, two users, and history whose memory
    // `forget` removed.
    ok(
        &a,
        None,
        &["remember", "--user", "alice", "--json", "I live in Paris"],
    );
    ok(
        &a,
        None,
        &[
            "remember",
            "--user",
            "alice",
            "--json",
            "I moved to Berlin last month",
        ],
    );
    let tea = id_of(&ok(
        &a,
        None,
        &[
            "add",
            "--user",
            "alice",
            "--json",
            "--metadata",
            r#"{"topic":"food","n":2}"#,
            "Alice drinks green tea",
        ],
    ));
    ok(
        &a,
        None,
        &["update", &tea, "--json", "Alice drinks oolong tea"],
    );
    let gone = id_of(&ok(
        &a,
        None,
        &["add", "--user", "alice", "--json", "Alice owns a red bike"],
    ));
    ok(&a, None, &["delete", &gone, "--json"]);
    ok(
        &a,
        None,
        &[
            "add",
            "--user",
            "alice",
            "--json",
            "--ttl",
            "30d",
            "--importance",
            "0.9",
            "Alice has a dentist appointment",
        ],
    );
    ok(
        &a,
        None,
        &[
            "add",
            "--user",
            "bob",
            "--json",
            "Bob plays chess on Sundays",
        ],
    );
    // A memory longer than the model's window: its later pieces travel too.
    let long: String = (1..=60)
        .map(|i| format!("In week {i} Bob studied chess opening number {i}. "))
        .collect();
    ok(&a, None, &["add", "--user", "bob", "--json", long.trim()]);
    ok(
        &a,
        None,
        &["add", "--user", "carol", "--json", "Carol collects stamps"],
    );
    ok(&a, None, &["forget", "--user", "carol", "--json"]);

    let first = ok(&a, None, &["export", "--vectors"]);
    let lines: Vec<Value> = first
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "header");
    let memories = lines.iter().filter(|l| l["type"] == "memory").count();
    let history = lines.iter().filter(|l| l["type"] == "history").count();
    assert!(memories >= 6, "{first}");
    assert!(history >= memories + 3, "{first}");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "memory" && l["superseded_by"].is_string()),
        "the Paris fact's successor"
    );
    assert!(lines
        .iter()
        .any(|l| l["type"] == "history" && l["new_memory"] == "Carol collects stamps"));
    let pieces: Vec<usize> = lines
        .iter()
        .filter_map(|l| l["pieces"].as_array().map(Vec::len))
        .collect();
    assert_eq!(pieces.len(), 1, "only the long memory has pieces");
    assert!(pieces[0] >= 1, "{pieces:?}");
    // The entity graph travels with its memories (the names the rules found).
    let linked = lines
        .iter()
        .filter(|l| l["links"]["mentions"].is_array())
        .count();
    assert!(linked >= 3, "{first}");
    let graph = |dir: &Path, store: Option<&str>| {
        ["alice", "bob"].map(|u| ok(dir, store, &["entities", "--user", u, "--json"]))
    };
    let graph_a = graph(&a, None);
    assert!(graph_a[1].contains("Bob"), "{graph_a:?}");

    let file = tmp.path().join("a.jsonl");
    std::fs::write(&file, &first).unwrap();
    let report = import(&pg, Some(&db.url), &file);
    assert_eq!(report["memories"], memories);
    assert_eq!(report["history"], history);
    let second = ok(&pg, Some(&db.url), &["export", "--vectors"]);
    assert_eq!(
        second, first,
        "PostgreSQL's export differs from the embedded store's"
    );

    let file2 = tmp.path().join("pg.jsonl");
    std::fs::write(&file2, &second).unwrap();
    import(&c, None, &file2);
    assert_eq!(ok(&c, None, &["export", "--vectors"]), first);
    assert_eq!(graph(&pg, Some(&db.url)), graph_a);
    assert_eq!(graph(&c, None), graph_a);

    // Again: nothing is written twice.
    let again = import(&c, None, &file);
    assert_eq!(again["memories"], 0);
    assert_eq!(again["memories_present"], memories);
    assert_eq!(again["history"], 0);
    assert_eq!(ok(&c, None, &["export", "--vectors"]), first);
    let again = import(&pg, Some(&db.url), &file);
    assert_eq!(
        (again["memories"].clone(), again["history"].clone()),
        (0.into(), 0.into())
    );

    // Searchable after import, on both backends (a search counts a
    // retrieval, so after the comparisons).
    for (dir, store) in [(&c, None), (&pg, Some(db.url.as_str()))] {
        let found = ok(
            dir,
            store,
            &[
                "search",
                "--user",
                "alice",
                "--json",
                "where does alice live",
            ],
        );
        assert!(found.contains("Berlin"), "{found}");
    }

    // One user, without vectors: embedded again on import, same texts.
    let bob = ok(&a, None, &["export", "--user", "bob"]);
    assert_eq!(
        bob.lines()
            .filter(|l| l.contains(r#""type":"memory""#))
            .count(),
        2
    );
    assert!(!bob.contains("\"vector\"") && !bob.contains("\"pieces\""));
    let bob_file = tmp.path().join("bob.jsonl");
    std::fs::write(&bob_file, &bob).unwrap();
    let d = tmp.path().join("d");
    import(&d, None, &bob_file);
    assert_eq!(ok(&d, None, &["export", "--user", "bob"]), bob);
    // Embedded on import as a write embeds: the same vectors, pieces too
    // (up to rounding: a batch may pad texts differently).
    let with_vectors = ["export", "--user", "bob", "--vectors"];
    let vectors_of = |dir: &Path| -> Vec<Vec<Vec<f64>>> {
        ok(dir, None, &with_vectors)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["type"] == "memory")
            .map(|l| {
                let mut all = vec![l["vector"].clone()];
                all.extend(l["pieces"].as_array().cloned().unwrap_or_default());
                all.iter()
                    .map(|v| serde_json::from_value::<Vec<f64>>(v.clone()).unwrap())
                    .collect()
            })
            .collect()
    };
    let (written, imported) = (vectors_of(&a), vectors_of(&d));
    assert_eq!(
        written.iter().map(Vec::len).collect::<Vec<_>>(),
        imported.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert!(
        written.iter().any(|m| m.len() > 1),
        "the long memory's pieces"
    );
    for (x, y) in written.iter().flatten().zip(imported.iter().flatten()) {
        let cos: f64 = x.iter().zip(y).map(|(p, q)| p * q).sum();
        assert!(cos > 0.9999, "cosine {cos}");
    }
    let found = ok(
        &d,
        None,
        &["search", "--user", "bob", "--json", "board games"],
    );
    assert!(found.contains("chess"), "{found}");
}

#[test]
fn a_bad_line_is_refused_by_number_keeping_the_lines_before() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    for t in ["Dana sails", "Dana paints", "Dana cooks", "Dana runs"] {
        ok(&a, None, &["add", "--user", "dana", "--json", t]);
    }
    let full = ok(&a, None, &["export"]);
    let mut lines: Vec<String> = full.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1 + 4 + 4);
    let good = lines[3].clone();
    lines[3] = r#"{"type":"memory","memory":"no id, no scope"}"#.into();
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n")).unwrap();

    let b = tmp.path().join("b");
    let out = memloop(&b, None, &["import", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("line 4:"), "{err}");
    assert!(err.contains("2 memories"), "{err}");
    let kept = ok(&b, None, &["export"]);
    assert_eq!(kept.lines().count(), 1 + 2, "{kept}");

    // Fixed, imported again: the rest is added, nothing twice.
    lines[3] = good;
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let report = import(&b, None, &bad);
    assert_eq!(report["memories"], 2);
    assert_eq!(report["memories_present"], 2);
    assert_eq!(ok(&b, None, &["export"]), full);

    let not_json = tmp.path().join("x.jsonl");
    std::fs::write(&not_json, format!("{}\n{{oops\n", lines[0])).unwrap();
    let out = memloop(&b, None, &["import", not_json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2:"));

    // Links no write could have stored are refused, saying what is wrong.
    let mut memory: Value = serde_json::from_str(&lines[1]).unwrap();
    memory["links"] = serde_json::json!({"mentions": [{"name": " ?! ", "kind": "person"}]});
    let bad_links = tmp.path().join("links.jsonl");
    std::fs::write(&bad_links, format!("{}\n{memory}\n", lines[0])).unwrap();
    let out = memloop(&b, None, &["import", bad_links.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 2:") && err.contains("is not a name"),
        "{err}"
    );
}
