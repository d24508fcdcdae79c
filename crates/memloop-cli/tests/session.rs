//! `memloop session` against the real Redis on this machine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn memloop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memloop"))
        .env("MEMLOOP_SHORT_TERM", "redis://127.0.0.1:6379")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn append_show_clear_across_processes() {
    let session = format!("cli-test-{}", std::process::id());
    let s = session.as_str();
    assert!(memloop(&[
        "session",
        "append",
        "--session",
        s,
        "I",
        "live",
        "in",
        "Paris"
    ])
    .status
    .success());
    assert!(memloop(&[
        "session",
        "append",
        "--session",
        s,
        "--role",
        "assistant",
        "Noted."
    ])
    .status
    .success());
    let out = memloop(&["--json", "session", "show", "--session", s]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let turns = v["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["role"], "user");
    assert_eq!(turns[0]["content"], "I live in Paris");
    assert_eq!(turns[1]["role"], "assistant");
    assert!(memloop(&["session", "clear", "--session", s])
        .status
        .success());
    let out = memloop(&["--json", "session", "show", "--session", s]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["turns"].as_array().unwrap().len(), 0);
}

#[test]
fn bad_session_input_is_refused() {
    let out = memloop(&[
        "--json",
        "session",
        "append",
        "--session",
        "s",
        "--role",
        "robot",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "invalid_input");
    let out = Command::new(env!("CARGO_BIN_EXE_memloop"))
        .env_remove("MEMLOOP_SHORT_TERM")
        .args(["session", "show", "--session", "s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--short-term"));
}
