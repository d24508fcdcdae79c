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
