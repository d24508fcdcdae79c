#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! PostgreSQL unreachable at start, and gone mid-load, with the real binary.
//! The database sits behind a TCP relay the test switches off (every
//! connection cut, new ones refused) and on again: what a restart of the
//! server looks like to memloop, without restarting the test server that
//! other tests share. Needs the test server (scripts/pg.sh).

use std::collections::BTreeSet;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod pg_common;
use pg_common::{exchange, server_url, spawn, wait_ready, Database, ALPHA, BIN};

/// A relay to the database that can be switched off and on.
struct Relay {
    addr: String,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(target: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let up = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (up2, open2, target) = (up.clone(), open.clone(), target.to_string());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !up2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut open = open2.lock().unwrap();
                open.push(client.try_clone().unwrap());
                open.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay { addr, up, open }
    }

    fn set(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
        if !up {
            for s in self.open.lock().unwrap().drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// `url` with its host and port replaced by `addr`, and a password added.
fn through(url: &str, addr: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user_host, path) = rest.split_once('/').unwrap();
    let user = user_host.split_once('@').map_or("memloop", |(u, _)| u);
    format!("{scheme}://{user}:hunter2secret@{addr}/{path}")
}

fn status(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    exchange(addr, method, path, ALPHA, body)
}

#[test]
fn unreachable_then_back_and_cut_mid_load_loses_no_acknowledged_write() {
    let Some(admin) = server_url() else { return };
    let db = Database::create(&admin);
    let target = db
        .url
        .split_once('@')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let relay = Relay::start(&target);
    let url = through(&db.url, &relay.addr);

    // Unreachable at start: the CLI exits 5 naming the database, never its password.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(tmp.path())
        .args(["--store", &url, "list", "--user", "alice"])
        .env_remove("MEMLOOP_STORE")
        .env_remove("MEMLOOP_CONFIG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains(&relay.addr), "{err}");
    assert!(!err.contains("hunter2secret"), "{err}");

    // The server starts anyway and answers 503 until the database is back,
    // then works without a restart.
    let server = spawn(&url);
    let deadline = Instant::now() + Duration::from_secs(120);
    let down = loop {
        match status(&server.addr, "GET", "/v1/memories?user_id=alice", "") {
            Some(r) => break r,
            None => {
                assert!(Instant::now() < deadline, "memloop serve did not answer");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    assert_eq!(down.0, 503, "{}", down.1);
    assert!(!down.1.contains("hunter2secret"), "{}", down.1);
    relay.set(true);
    wait_ready(&server);

    // Writers under load; the database goes away for 1.5 s twice.
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let failed = Arc::new(Mutex::new(0usize));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (acked, failed, stop) = (acked.clone(), failed.clone(), stop.clone());
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let body = json!({
                        "messages": format!("writer {w} note {i}"),
                        "user_id": "alice", "infer": false
                    });
                    match status(&addr, "POST", "/v1/memories", &body.to_string()) {
                        Some((200, text)) => {
                            let v: Value = serde_json::from_str(&text).unwrap();
                            let id = v["results"][0]["id"].as_str().unwrap().to_string();
                            acked.lock().unwrap().insert(id);
                        }
                        Some((503, _)) | None => *failed.lock().unwrap() += 1,
                        Some((s, text)) => panic!("write answered {s}: {text}"),
                    }
                }
            })
        })
        .collect();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(1500));
        relay.set(false);
        std::thread::sleep(Duration::from_millis(1500));
        relay.set(true);
    }
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 10,
        "only {} writes acknowledged",
        acked.len()
    );
    for id in &acked {
        let (s, text) = status(&server.addr, "GET", &format!("/v1/memories/{id}"), "").unwrap();
        assert_eq!(s, 200, "acknowledged {id} is lost: {text}");
    }
    eprintln!(
        "{} writes acknowledged and found after two cuts; {} answered 503",
        acked.len(),
        failed.lock().unwrap()
    );
}
