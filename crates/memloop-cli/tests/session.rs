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

/// A session appended with `--user` is that user's: purging the user clears
/// it, and a session of another user stays.
#[test]
fn a_session_appended_for_a_user_goes_with_the_users_purge() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let tag = std::process::id();
    let (mine, theirs) = (format!("cli-purge-a-{tag}"), format!("cli-purge-b-{tag}"));
    let (victim, other) = (format!("victim-{tag}"), format!("other-{tag}"));
    for (session, user) in [(&mine, &victim), (&theirs, &other)] {
        let out = memloop(&[
            "session",
            "append",
            "--session",
            session,
            "--user",
            user,
            "a",
            "turn",
        ]);
        assert!(out.status.success(), "{out:?}");
    }
    let out = memloop(&[
        "--data-dir",
        data,
        "--json",
        "forget",
        "--user",
        &victim,
        "--purge",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["short_term_sessions_cleared"], 1, "{v}");
    let turns = |session: &str| {
        let out = memloop(&["--json", "session", "show", "--session", session]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["turns"].as_array().unwrap().len()
    };
    assert_eq!(turns(&mine), 0);
    assert_eq!(turns(&theirs), 1);
    assert!(memloop(&["session", "clear", "--session", &theirs])
        .status
        .success());
}
