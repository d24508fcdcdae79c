//! `memloop eval` end to end: a hand-made conversation with known answers,
//! and a slice of the LoCoMo dev split when it is beside the repository.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod pg_common;
use common::Store;
use pg_common::{server_url, Database};

fn eval(args: &[&str]) -> serde_json::Value {
    eval_on(None, args)
}

/// `memloop eval` on the embedded store, or on PostgreSQL at `store`.
fn eval_on(store: Option<&str>, args: &[&str]) -> serde_json::Value {
    let mut all: Vec<&str> = store.map_or_else(Vec::new, |url| vec!["--store", url]);
    all.extend(["--json", "eval"]);
    all.extend(args);
    let out = Store::new().run(&all);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn tiny_conversation_has_known_recall() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny-eval.jsonl"
    );
    let out = tempfile::tempdir().unwrap();
    let r = eval(&["jsonl", fixture, "--out", out.path().to_str().unwrap()]);
    // Three questions with evidence outside category 5; the one without evidence is excluded.
    assert_eq!(r["questions"], 3);
    // Six turns: every evidence turn is within the top 50, so recall@50 is exactly 1.
    assert_eq!(r["recall"]["50"], 1.0);
    // The greyhound and the flat are found first.
    let single = &r["per_category"]["4"];
    assert_eq!(single["recall"]["1"], 1.0, "{r}");
    assert_eq!(single["mrr"], 1.0);
    for method in ["bm25", "dense"] {
        assert_eq!(r["baselines"][method]["recall"]["50"], 1.0, "{method}");
    }
    let recall = r["recall"].as_object().unwrap();
    assert_eq!(
        recall.keys().cloned().collect::<Vec<_>>(),
        ["1", "10", "25", "5", "50"]
    );
    for v in recall.values() {
        assert!((0.0..=1.0).contains(&v.as_f64().unwrap()));
    }
    assert!(out.path().join("eval.json").is_file());
    let svg = std::fs::read_to_string(out.path().join("recall.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("polyline"));
}

#[test]
fn details_hold_each_question_with_the_default_hits_and_their_signals() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny-eval.jsonl"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("details.jsonl");
    eval(&["jsonl", fixture, "--details", path.to_str().unwrap()]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The three questions with evidence, in the file's order.
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["question"], "What is the name of Ana's greyhound?");
    for line in &lines {
        let hits = line["hits"].as_array().unwrap();
        // Six turns, each a memory of its own: all of them, best first.
        assert_eq!(hits.len(), 6, "{line}");
        let turns: Vec<&str> = hits
            .iter()
            .map(|h| h["turns"][0].as_str().unwrap())
            .collect();
        assert_eq!(line["top10"].as_array().unwrap().len(), 6);
        assert!(turns
            .iter()
            .zip(line["top10"].as_array().unwrap())
            .all(|(t, u)| u == t));
        let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        for h in hits {
            let session = h["session"].as_str().unwrap();
            let turn = h["turns"][0].as_str().unwrap();
            // T1–T4 were said in session 1, T5 and T6 in session 2.
            assert_eq!(session == "1", turn < "T5", "{h}");
            assert!(h["words"].as_u64().unwrap() >= 7, "{h}");
            assert!(["Ana", "Ben"].contains(&h["speaker"].as_str().unwrap()));
            assert!(h["scores"]["fused"].as_f64().is_some(), "{h}");
        }
    }
    // The greyhound's turn is first, found by both signals.
    let first = &lines[0]["hits"][0];
    assert_eq!(first["turns"][0], "T1");
    assert!(first["scores"]["bm25"].as_f64().unwrap() > 0.0);
    assert!(first["scores"]["vector"].as_f64().unwrap() > 0.0);
}

#[test]
fn locomo_slice_runs_with_baselines() {
    let data = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/locomo-dev.json"
    );
    if !std::path::Path::new(data).is_file() {
        eprintln!("skipped: {data} is not there");
        return;
    }
    let r = eval(&["locomo", data, "--limit", "1"]);
    assert_eq!(r["conversations"], 1);
    assert!(r["questions"].as_u64().unwrap() > 100);
    let r10 = r["recall"]["10"].as_f64().unwrap();
    let bm25 = r["baselines"]["bm25"]["recall"]["10"].as_f64().unwrap();
    let dense = r["baselines"]["dense"]["recall"]["10"].as_f64().unwrap();
    assert!(
        r10 > 0.5 && bm25 > 0.3 && dense > 0.3,
        "{r10} {bm25} {dense}"
    );
    assert!(r["per_category"]["5"]["questions"].as_u64().unwrap() > 0);
}

#[test]
fn gate_measurement_reports_consistent_counts() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny-eval.jsonl"
    );
    let r = eval(&["gate", fixture, "--misses", "5"]);
    assert_eq!(r["turns"], 6);
    let c = &r["counts"];
    let count = |k: &str| c[k].as_u64().unwrap();
    assert_eq!(count("tp") + count("fp") + count("fn") + count("tn"), 6);
    // T1, T3, T4 and T6 are cited; each states a fact the gate keeps.
    assert_eq!(r["evidence_turns"], 4);
    assert_eq!(count("tp") + count("fn"), 4);
    assert_eq!(r["recall"], 1.0, "{r}");
    assert_eq!(r["kept"].as_u64().unwrap(), count("tp") + count("fp"));
    for key in ["precision", "recall", "f1", "kept_fraction"] {
        let v = r[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "{key} = {v}");
    }
    assert_eq!(r["per_category"]["4"]["evidence_turns"], 2);
    assert_eq!(r["per_category"]["1"]["recall"], 1.0);
    assert!(r["misses"].as_array().unwrap().is_empty());
    let kept_reasons: u64 = r["reasons"]["kept"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(kept_reasons, count("tp") + count("fp"));
}

#[test]
fn gate_on_a_locomo_slice_keeps_most_evidence() {
    let data = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/locomo-dev.json"
    );
    if !std::path::Path::new(data).is_file() {
        eprintln!("skipped: {data} is not there");
        return;
    }
    let r = eval(&["gate", data, "--limit", "1", "--misses", "3"]);
    let c = &r["counts"];
    let total: u64 = ["tp", "fp", "fn", "tn"]
        .iter()
        .map(|k| c[*k].as_u64().unwrap())
        .sum();
    assert_eq!(total, r["turns"].as_u64().unwrap());
    assert!(total > 400, "conv-26 has 419 turns");
    let recall = r["recall"].as_f64().unwrap();
    let kept = r["kept_fraction"].as_f64().unwrap();
    // The gate errs towards keeping, yet drops a good share of chit-chat.
    assert!(recall > 0.9 && kept < 0.8, "recall {recall}, kept {kept}");
    assert!(r["misses"].as_array().unwrap().len() <= 3);
    for cat in ["1", "2", "3", "4", "5"] {
        let v = r["per_category"][cat]["recall"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "category {cat}: {v}");
    }
}

/// The eval on PostgreSQL (`--store`) ranks as the embedded store does (one
/// ranking for every backend), says which store it ran on, and leaves
/// nothing behind in the database: its tenant is its own and purged.
#[test]
fn the_eval_runs_on_postgres_alike_and_cleans_up() {
    let Some(admin) = server_url() else {
        eprintln!("skipped: no PostgreSQL (scripts/pg.sh start)");
        return;
    };
    let db = Database::create(&admin);
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny-eval.jsonl"
    );
    let embedded = eval(&["jsonl", fixture]);
    let pg = eval_on(Some(&db.url), &["jsonl", fixture]);
    assert_eq!(embedded["store"], "embedded");
    assert_eq!(pg["store"], "postgres");
    for (name, a, b) in [
        ("default", &embedded, &pg),
        (
            "bm25",
            &embedded["baselines"]["bm25"],
            &pg["baselines"]["bm25"],
        ),
        (
            "dense",
            &embedded["baselines"]["dense"],
            &pg["baselines"]["dense"],
        ),
    ] {
        for k in ["1", "5", "10", "50"] {
            let (x, y) = (
                a["recall"][k].as_f64().unwrap(),
                b["recall"][k].as_f64().unwrap(),
            );
            assert!(
                (x - y).abs() < 1e-9,
                "{name} R@{k}: embedded {x}, postgres {y}"
            );
        }
    }
    // Every tenant's rows, counted past the tenant wall; one memory written
    // afterwards shows the count sees what is there.
    let count = |table: &str| -> i64 {
        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
        let mut tx = c.transaction().unwrap();
        tx.batch_execute("SET LOCAL memloop.all_tenants = 'on'")
            .unwrap();
        tx.query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(count("memories"), 0, "the eval's memories were not purged");
    assert_eq!(count("history"), 0, "the eval's history was not purged");
    let out = Store::new().run(&["--store", &db.url, "add", "--user", "u", "one memory"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(count("memories"), 1);
}

#[test]
fn a_suite_reports_each_dataset_as_its_own_eval_and_a_cache_changes_nothing() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny-eval.jsonl"
    );
    let alone = eval(&["jsonl", fixture]);
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let sampled = format!("{fixture}@2");
    let run = || {
        eval(&[
            "suite",
            fixture,
            &sampled,
            "synthetic-long:1",
            "--limit",
            "1",
            "--embed-cache",
            cache_dir,
        ])
    };
    let first = run();
    let datasets = first["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 3, "{first}");
    assert_eq!(datasets[0]["dataset"], "tiny-eval.jsonl");
    assert_eq!(datasets[1]["dataset"], "tiny-eval.jsonl (every 2)");
    // The same file, the same figures as `eval jsonl`.
    for key in ["recall", "mrr", "per_category"] {
        assert_eq!(datasets[0]["report"][key], alone[key], "{key}");
    }
    assert_eq!(datasets[0]["report"]["baselines"], alone["baselines"]);
    // The synthetic conversations are made in memory: 30 questions a user.
    assert_eq!(datasets[2]["report"]["conversations"], 1);
    assert_eq!(datasets[2]["report"]["questions"], 30);
    assert!(first["model"].as_str().unwrap().contains("MiniLM"));
    // The cache holds the vectors, and a run that reads them back ranks alike.
    let files: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
    let second = run();
    for (a, b) in datasets.iter().zip(second["datasets"].as_array().unwrap()) {
        assert_eq!(a["report"]["recall"], b["report"]["recall"]);
        assert_eq!(a["report"]["baselines"], b["report"]["baselines"]);
    }
    // A dataset it cannot read is refused before anything runs.
    let out = Store::new().run(&["eval", "suite", "data.jsonl.zst"]);
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("zstd -d"), "{}", out.stderr);
}
