#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The `memloop` binary against a careless or hostile terminal session: a
//! reader that goes away (`| head -1`), stored text that carries terminal
//! control sequences, and filters built to exhaust the parser's stack.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_memloop");
/// The signal number of SIGPIPE on Linux: how `yes | head -1` ends `yes`.
const SIGPIPE: i32 = 13;

fn memloop(dir: &std::path::Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(dir)
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("RUST_BACKTRACE");
    c
}

fn add(dir: &std::path::Path, texts: &[&str]) {
    let out = memloop(dir)
        .args(["add", "--user", "u"])
        .args(texts)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<String> = (0..400)
        .map(|i| format!("memory number {i} with some words to fill the line"))
        .collect();
    add(
        dir.path(),
        &many.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    for args in [
        vec!["list", "--user", "u"],
        vec!["list", "--user", "u", "--json"],
    ] {
        let mut child = memloop(dir.path())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -c 10`: read a little, then close the pipe.
        let mut first = [0u8; 10];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        assert!(
            status.success() || status.signal() == Some(SIGPIPE),
            "{args:?} ended with {status:?}: {stderr}"
        );
    }
}

#[test]
fn stored_control_characters_are_escaped_in_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    // ESC ] 0 ; title BEL retitles a terminal; ESC [ 2 J clears it; U+202E reverses text.
    let hostile = "evil\u{1b}]0;pwned\u{7}\u{1b}[2Jline\nforged \u{202e}txt.exe";
    add(dir.path(), &[hostile]);
    for args in [
        vec!["list", "--user", "u"],
        vec!["search", "--user", "u", "evil line forged"],
    ] {
        let out = memloop(dir.path()).args(&args).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            !stdout.contains('\u{1b}') && !stdout.contains('\u{7}') && !stdout.contains('\u{202e}'),
            "{args:?} printed raw control characters: {stdout:?}"
        );
        assert!(
            stdout.contains("evil\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jline\\nforged \\u{202e}txt.exe"),
            "{args:?}: {stdout}"
        );
        assert_eq!(stdout.lines().filter(|l| l.contains("evil")).count(), 1);
    }
    // JSON keeps the exact text (escaped by JSON itself).
    let out = memloop(dir.path())
        .args(["list", "--user", "u", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["memory"], hostile);
}

#[test]
fn deeply_nested_filters_are_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    add(dir.path(), &["kept safe"]);
    let parens = format!("{}a = 1{}", "(".repeat(3_000), ")".repeat(3_000));
    let nots = format!("{}a = 1", "NOT ".repeat(4_000));
    for filter in [parens, nots] {
        for cmd in ["search", "list"] {
            let mut c = memloop(dir.path());
            c.args([cmd, "--user", "u", "--filter", &filter]);
            if cmd == "search" {
                c.arg("safe");
            }
            let out = c.output().unwrap();
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
            assert!(stderr.contains("bad filter"), "{cmd}: {stderr}");
        }
    }
    let out = memloop(dir.path())
        .args(["list", "--user", "u", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["memory"], "kept safe");
}
