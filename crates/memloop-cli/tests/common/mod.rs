#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The real `memloop` binary on a data directory of a test's own: runs it
//! and reads its `--json` output, for every CLI test file.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_memloop");

pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A data directory of its own, and the binary run on it.
pub struct Store {
    pub dir: tempfile::TempDir,
}

impl Store {
    pub fn new() -> Store {
        Store {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs with this directory and none of the caller's memloop settings.
    pub fn run(&self, args: &[&str]) -> Out {
        let out = Command::new(BIN)
            .arg("--data-dir")
            .arg(self.dir.path())
            .args(args)
            .env_remove("MEMLOOP_DATA_DIR")
            .env_remove("MEMLOOP_CONFIG")
            .env_remove("MEMLOOP_STORE")
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        Out {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    /// Runs with `--json`, expects success and a quiet stderr, and parses
    /// the whole of stdout as exactly one JSON document.
    pub fn ok(&self, args: &[&str]) -> Value {
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
        assert!(
            out.stderr.is_empty(),
            "memloop {args:?} wrote to stderr: {}",
            out.stderr
        );
        one_json_document(&out.stdout, args)
    }
}

pub fn one_json_document(stdout: &str, args: &[&str]) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| {
        panic!("memloop {args:?}: stdout is not exactly one JSON document ({e}):\n{stdout}")
    })
}

pub fn results(v: &Value) -> &Vec<Value> {
    v["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results array in {v}"))
}

/// The `memory` texts of a list of records.
pub fn texts(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["memory"].as_str().unwrap().to_string())
        .collect()
}
