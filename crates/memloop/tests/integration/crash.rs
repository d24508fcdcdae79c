//! Durability: a writer process is killed with SIGKILL at random moments;
//! every write it acknowledged must be there when the store is reopened.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memloop::{ListQuery, NewMemory, Scope};

use crate::open;

const CHILD_ENV: &str = "MEMLOOP_CRASH_CHILD_DIR";

/// The writer: runs only when re-executed by the test below. Adds, updates
/// and deletes in a loop, printing each acknowledged change.
#[test]
fn crash_writer_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let m = open(std::path::Path::new(&dir));
    let u = Scope::user("crash");
    let start: usize = std::env::var("MEMLOOP_CRASH_START")
        .unwrap()
        .parse()
        .unwrap();
    for i in start.. {
        let batch: Vec<NewMemory> = (0..1 + i % 3)
            .map(|j| NewMemory::text(format!("fact {i}.{j}")))
            .collect();
        for r in m.add_batch(&u, batch).unwrap() {
            println!("ADD {} {}", r.id, r.memory);
        }
        if i % 5 == 4 {
            let listed = m
                .list(&ListQuery {
                    scope: u.clone(),
                    limit: 1,
                    ..Default::default()
                })
                .unwrap();
            if let Some(rec) = listed.first() {
                m.delete(&rec.id).unwrap();
                println!("DEL {}", rec.id);
            }
        }
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<(String, String)> = Vec::new();
    let mut deleted: Vec<String> = Vec::new();
    let rounds = 12;
    let mut seed = 0x5eed_u64;
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash::crash_writer_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD_ENV, dir.path())
            .env("MEMLOOP_CRASH_START", (round * 100_000).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let kill_after = Duration::from_millis(30 + (seed >> 33) % 400);
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Kill at a random moment after the writer has started acknowledging.
        let mut lines = Vec::new();
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("writer never acknowledged a write");
            let started = line.starts_with("ADD ");
            lines.push(line);
            if started {
                break;
            }
        }
        let t = Instant::now();
        while t.elapsed() < kill_after {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(5)) {
                lines.push(l);
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        lines.extend(rx.try_iter());
        for line in lines {
            let mut parts = line.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("ADD"), Some(id), Some(text)) => {
                    acked.push((id.to_string(), text.to_string()))
                }
                (Some("DEL"), Some(id), None) => deleted.push(id.to_string()),
                _ => {} // test harness output
            }
        }
    }
    assert!(
        acked.len() > rounds,
        "too few writes to be a test: {}",
        acked.len()
    );
    let m = open(dir.path());
    for (id, text) in &acked {
        let rec = m
            .get_with(Scope::DEFAULT_TENANT, id, memloop::Lookup::IncludeDeleted)
            .unwrap_or_else(|e| panic!("acknowledged write {id} ({text}) lost: {e}"));
        assert_eq!(&rec.text, text);
        // An acknowledged delete is there; a delete killed before its
        // acknowledgement may or may not have committed.
        if deleted.contains(id) {
            assert!(
                rec.valid_until.is_some(),
                "acknowledged delete of {id} lost"
            );
        }
    }
    let deleted_count = acked
        .iter()
        .filter(|(id, _)| {
            m.get_with(Scope::DEFAULT_TENANT, id, memloop::Lookup::IncludeDeleted)
                .unwrap()
                .valid_until
                .is_some()
        })
        .count();
    assert!(deleted_count >= deleted.len());
    let current = m
        .list(&ListQuery {
            scope: Scope::user("crash"),
            limit: 1000,
            ..Default::default()
        })
        .unwrap();
    let stats = m.stats().unwrap();
    assert!(stats.current as usize >= current.len());
    // The indexes rebuilt from the log agree with the table.
    let hits = m
        .search(&memloop::SearchQuery::new(
            Scope::user("crash"),
            &acked[0].1,
        ))
        .unwrap();
    assert!(!hits.is_empty());
}
