#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Time expressions in search queries, through the real `memloop` binary:
//! `--now` sets when the question is asked, `--time-mode` what the window
//! does, and the output says how the query was read.

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_memloop");

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    fn new() -> Store {
        Store {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Out {
        let out = Command::new(BIN)
            .arg("--data-dir")
            .arg(self.dir.path())
            .args(args)
            .env_remove("MEMLOOP_DATA_DIR")
            .env_remove("MEMLOOP_CONFIG")
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        Out {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    fn ok(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert_eq!(
            out.code,
            Some(0),
            "memloop {args:?} failed\nstdout: {}\nstderr: {}",
            out.stdout,
            out.stderr
        );
        serde_json::from_str(&out.stdout).unwrap()
    }
}

fn texts(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["memory"].as_str().unwrap().to_string())
        .collect()
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
