//! A purge killed (SIGKILL) at random moments never damages the store: on
//! reopening, SQLite's integrity check passes, the purged user's memories
//! are either all there or all gone (all gone once the purge said it was
//! done), the other user's are all there and searchable, and running the
//! purge again leaves no copy of the purged texts in any file.
//!
//! The purging process is this test binary run again with `CHILD_ENV` set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memloop_core::{EmbedderInfo, NewMemory, Scope};
use memloop_store::prelude::*;
use memloop_store::{EmbeddedStore, MemoryUpdate, SearchQuery, StoreOptions};

const CHILD_ENV: &str = "MEMLOOP_PURGE_CRASH_CHILD";
const DIMS: usize = 16;
/// The victim's memories per round: enough that the purge's transaction
/// and checkpoint take long enough to be interrupted inside.
const VICTIM_MEMORIES: usize = 3_000;
const BYSTANDER_MEMORIES: usize = 40;
const SECRETS: [&str; 3] = [
    "quagga-secret-text",
    "quagga-secret-updated",
    "quagga-secret-outbox",
];

fn info() -> EmbedderInfo {
    EmbedderInfo {
        model_id: "test-hash".into(),
        dimensions: DIMS,
    }
}

/// A deterministic unit vector per text.
fn vector(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v = Vec::with_capacity(DIMS);
    for _ in 0..DIMS {
        for b in text.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = h.rotate_left(17);
        v.push(((h >> 40) as f32 / (1u64 << 24) as f32) - 0.5);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn options() -> StoreOptions {
    StoreOptions::default().with_ann_threshold(10)
}

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open(dir, info(), options()).unwrap()
}

fn victim() -> Scope {
    Scope::user("victim")
}

fn bystander() -> Scope {
    Scope::user("bystander")
}

/// The purger: opens the store, says so, purges the victim, says so.
#[test]
fn child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut out = std::io::stdout().lock();
    writeln!(out).unwrap();
    let store = open(Path::new(&dir));
    writeln!(out, "OPEN").unwrap();
    out.flush().unwrap();
    let report = store.forget(&victim(), true).unwrap();
    writeln!(out, "PURGED {}", report.memories_deleted).unwrap();
    out.flush().unwrap();
}

/// The victim's memories (a secret in the first, an updated one whose old
/// text is in history, a queued outbox write) with a saved HNSW index.
fn seed_victim(store: &EmbeddedStore) {
    let mut items: Vec<(NewMemory, Vec<f32>)> = (0..VICTIM_MEMORIES)
        .map(|i| {
            let text = format!("victim note {i} about quaggas");
            (NewMemory::text(text.clone()), vector(&text))
        })
        .collect();
    items[0].0.text = format!("{} in the first note", SECRETS[0]);
    let first = store.insert(&victim(), items).unwrap().remove(0).0;
    let text = format!("{} in the first note", SECRETS[1]);
    store
        .update(
            Scope::DEFAULT_TENANT,
            &first.id,
            MemoryUpdate {
                text: Some((text.clone(), vector(&text))),
                ..Default::default()
            },
        )
        .unwrap();
    store
        .outbox_push(
            &victim(),
            &serde_json::json!({ "turn": SECRETS[2] }),
            "the LLM timed out",
        )
        .unwrap();
    store
        .search(&SearchQuery::new(victim(), "quagga"), &vector("quagga"))
        .unwrap();
    store.flush().unwrap();
}

fn seed_bystander(store: &EmbeddedStore) {
    let items = (0..BYSTANDER_MEMORIES)
        .map(|i| {
            let text = format!("bystander keeps fact {i}");
            (NewMemory::text(text.clone()), vector(&text))
        })
        .collect();
    store.insert(&bystander(), items).unwrap();
}

fn count(dir: &Path, user: &str) -> usize {
    let conn = rusqlite::Connection::open(dir.join("memloop.db")).unwrap();
    conn.query_row(
        "SELECT count(*) FROM memories WHERE user_id = ?1",
        [user],
        |r| r.get::<_, i64>(0),
    )
    .unwrap() as usize
}

fn integrity(dir: &Path) -> String {
    let conn = rusqlite::Connection::open(dir.join("memloop.db")).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

fn files_holding(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            for n in needles {
                if bytes.windows(n.len()).any(|w| w == n.as_bytes()) {
                    found.push(format!("{} holds {n:?}", path.display()));
                }
            }
        }
    }
    found
}

/// Runs the purger and kills it `after` its store is open (None: lets it
/// finish). Returns whether it reported the purge done.
fn purge_and_kill(dir: &Path, after: Option<Duration>) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .expect("the purger ended before opening")
            .unwrap();
        if line == "OPEN" {
            break;
        }
    }
    if let Some(after) = after {
        // Where in the purge the kill lands is what this test varies.
        std::thread::sleep(after);
        child.kill().unwrap();
    }
    let done = lines.any(|l| l.is_ok_and(|l| l.starts_with("PURGED")));
    child.wait().unwrap();
    done
}

#[test]
fn a_purge_killed_at_any_moment_leaves_a_sound_store_and_running_it_again_finishes_it() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        seed_bystander(&store);
    }
    // How long an uninterrupted purge takes here, to spread the kills over it.
    {
        let store = open(dir.path());
        seed_victim(&store);
    }
    let start = Instant::now();
    assert!(purge_and_kill(dir.path(), None));
    let full = start.elapsed();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let (mut before, mut after) = (0, 0);
    for round in 0..10 {
        {
            let store = open(dir.path());
            seed_victim(&store);
        }
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let kill_at = full.mul_f64((seed >> 11) as f64 / (1u64 << 53) as f64);
        let done = purge_and_kill(dir.path(), Some(kill_at));

        assert_eq!(integrity(dir.path()), "ok", "round {round}");
        let left = count(dir.path(), "victim");
        assert!(
            left == 0 || left == VICTIM_MEMORIES,
            "round {round}: a purge is all or nothing, {left} memories left"
        );
        assert!(
            !done || left == 0,
            "round {round}: reported done, {left} left"
        );
        if left == 0 {
            after += 1;
        } else {
            before += 1;
        }
        assert_eq!(count(dir.path(), "bystander"), BYSTANDER_MEMORIES);

        // Reopened, the store answers, and the purge run again finishes it.
        let store = open(dir.path());
        let hits = store
            .search(
                &SearchQuery::new(bystander(), "bystander keeps fact 7"),
                &vector("bystander keeps fact 7"),
            )
            .unwrap();
        assert!(!hits.is_empty(), "round {round}");
        store.forget(&victim(), true).unwrap();
        assert_eq!(store.outbox_len().unwrap(), 0);
        drop(store);
        let copies = files_holding(dir.path(), &SECRETS);
        assert!(copies.is_empty(), "round {round}: {copies:?}");
        assert!(!files_holding(dir.path(), &["bystander keeps fact 7"]).is_empty());
    }
    println!("kills before the commit: {before}, after: {after} (a purge takes {full:?})");
}
