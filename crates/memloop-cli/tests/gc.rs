//! `memloop gc` on a data directory holding an expired memory: before, the
//! real binary counts it as expired, not current; gc deletes it and says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use memloop::time::Clock;
use memloop::{LocalEmbedder, Memory, NewMemory, Scope, StoreOptions};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_memloop");
const DAY: i64 = 86_400_000;

fn json(dir: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--json")
        .args(args)
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("MEMLOOP_STORE")
        .env_remove("MEMLOOP_SHORT_TERM")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn gc_deletes_what_expired_and_stats_never_counted_it_as_current() {
    let dir = tempfile::tempdir().unwrap();
    {
        // Written a year ago by the store's clock, with a one-day TTL.
        let clock = Clock::manual(memloop::now_millis() - 365 * DAY);
        let embedder = Arc::new(LocalEmbedder::locate_and_load(None).unwrap());
        let options = StoreOptions::default().with_clock(clock);
        let memory = Memory::with_embedder(dir.path(), embedder, options).unwrap();
        let carol = Scope::user("carol");
        let mut short = NewMemory::text("The hotel wifi password is tulip42");
        short.expires_at = Some(memory.expiry_after("1d").unwrap());
        memory.add(&carol, short).unwrap();
        memory
            .add(&carol, NewMemory::text("Carol is allergic to peanuts"))
            .unwrap();
    }
    let stats = json(dir.path(), &["stats"]);
    assert_eq!(
        (&stats["current"], &stats["expired"]),
        (&1.into(), &1.into())
    );
    let listed = json(dir.path(), &["list", "--user", "carol"]);
    assert_eq!(listed["results"].as_array().unwrap().len(), 1, "{listed}");
    let gc = json(dir.path(), &["gc"]);
    assert_eq!(gc["expired_deleted"], 1, "{gc}");
    let stats = json(dir.path(), &["stats"]);
    assert_eq!(
        (&stats["memories"], &stats["expired"]),
        (&1.into(), &0.into())
    );
    assert_eq!(json(dir.path(), &["gc"])["expired_deleted"], 0);
}

/// Writes, a year ago by the store's clock, a memory with a one-day TTL
/// (expired now) and one kept; returns the expired one's id.
fn expired_and_kept(dir: &Path) -> String {
    let clock = Clock::manual(memloop::now_millis() - 365 * DAY);
    let embedder = Arc::new(LocalEmbedder::locate_and_load(None).unwrap());
    let options = StoreOptions::default().with_clock(clock);
    let memory = Memory::with_embedder(dir, embedder, options).unwrap();
    let carol = Scope::user("carol");
    let mut short = NewMemory::text("The hotel wifi password is tulip42");
    short.expires_at = Some(memory.expiry_after("1d").unwrap());
    let id = memory.add(&carol, short).unwrap().id;
    memory
        .add(&carol, NewMemory::text("Carol is allergic to peanuts"))
        .unwrap();
    id
}

#[test]
fn get_answers_an_expired_memory_as_not_found_unless_deleted_ones_are_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let id = expired_and_kept(dir.path());
    let out = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["get", &id])
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("MEMLOOP_STORE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("expired at"), "{stderr}");
    assert!(stderr.contains("--include-deleted"), "{stderr}");
    let shown = json(dir.path(), &["get", &id, "--include-deleted"]);
    assert_eq!(shown["status"], "expired", "{shown}");
    // A one-shot command never sweeps: it is still there for gc.
    assert_eq!(json(dir.path(), &["stats"])["expired"], 1);
}

/// `memloop mcp` held open sweeps every `[forgetting] gc_interval`: the
/// expired memory is deleted without anyone running `memloop gc`.
#[test]
fn memloop_mcp_sweeps_what_expired_while_it_runs() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    expired_and_kept(dir.path());
    let config = dir.path().join("memloop.toml");
    std::fs::write(&config, "[forgetting]\ngc_interval = \"1s\"\n").unwrap();
    let mut mcp = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .arg("--config")
        .arg(&config)
        .arg("mcp")
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("MEMLOOP_STORE")
        .env_remove("MEMLOOP_SHORT_TERM")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let swept = loop {
        let stats = json(dir.path(), &["stats"]);
        if stats["expired"] == 0 {
            break stats;
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = mcp.kill();
            panic!("memloop mcp did not sweep within 30 s: {stats}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(swept["memories"], 1, "{swept}");
    // Closing stdin ends it promptly, sweeper and all (without an MCP
    // handshake it says so and exits 1: not what is tested here).
    drop(mcp.stdin.take());
    let closed = std::time::Instant::now();
    while mcp.try_wait().unwrap().is_none() {
        if closed.elapsed() > std::time::Duration::from_secs(10) {
            let _ = mcp.kill();
            panic!("memloop mcp still running 10 s after its stdin closed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
