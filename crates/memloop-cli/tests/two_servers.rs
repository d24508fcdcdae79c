#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Several servers, one database: two real `memloop serve` processes, each
//! with its own empty data directory, on one fresh PostgreSQL database. A
//! write through one is read through the other on the next request, two
//! supersessions of one fact racing through both leave one current version,
//! and two tenants see nothing of each other through either server.
//! Needs the test server (scripts/pg.sh); starts it when it can.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_memloop");
const ALPHA: &str = "key-alpha-7f3a9c01";
const BRAVO: &str = "key-bravo-2c26b46b";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The test server's URL: MEMLOOP_TEST_PG_URL, else scripts/pg.sh's server,
/// started here. None only when neither is available.
fn server_url() -> Option<String> {
    if let Ok(url) = std::env::var("MEMLOOP_TEST_PG_URL") {
        return Some(url);
    }
    let pg = |arg: &str| {
        Command::new("bash")
            .arg(repo_root().join("scripts/pg.sh"))
            .arg(arg)
            .output()
    };
    match pg("start") {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!(
                "SKIPPED two_servers: MEMLOOP_TEST_PG_URL is unset and scripts/pg.sh start failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("SKIPPED two_servers: MEMLOOP_TEST_PG_URL is unset and scripts/pg.sh could not run: {e}");
            return None;
        }
    }
    let out = pg("url").unwrap();
    Some(String::from_utf8(out.stdout).unwrap().trim().to_string())
}

/// The URL of `url` with another database name.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    format!("{}/{db}{query}", &base[..path_start])
}

/// A database of this test's own, dropped afterwards.
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    fn create(admin: &str) -> Database {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("memloop_two_servers_{}_{nanos}", std::process::id());
        let mut c = postgres::Client::connect(admin, postgres::NoTls).unwrap_or_else(|e| {
            panic!("cannot reach the test server at {admin}: run scripts/pg.sh start ({e})")
        });
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Database {
            admin: admin.to_string(),
            url: with_database(admin, &name),
            name,
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

struct Server {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `memloop serve` on a loopback port with an empty data directory of its
/// own, the store at `store`, and the two tenants' keys.
fn spawn(store: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("memloop.toml");
    std::fs::write(
        &config,
        format!(
            "[store]\nurl = \"{store}\"\n\n[server.api_keys]\n\"{ALPHA}\" = \"alpha\"\n\"{BRAVO}\" = \"bravo\"\n"
        ),
    )
    .unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .args(["serve", "--addr", &addr])
        .env_remove("MEMLOOP_API_KEYS")
        .env_remove("MEMLOOP_SHORT_TERM")
        .env_remove("MEMLOOP_STORE")
        .env_remove("MEMLOOP_LOG_TEXTS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server {
        child,
        addr,
        _dir: dir,
    }
}

/// Waits until the server reports ready: store, embedder and all.
fn wait_ready(server: &Server) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while exchange(&server.addr, "GET", "/readyz", "", "").map(|(s, _)| s) != Some(200) {
        assert!(
            Instant::now() < deadline,
            "memloop serve on {} did not become ready",
            server.addr
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One HTTP/1.1 request on its own connection: the status and the body.
fn exchange(addr: &str, method: &str, path: &str, key: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(120))).ok()?;
    let auth = if key.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {key}\r\n")
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    s.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Some((status, body.to_string()))
}

/// A request that must answer 200; its body as JSON.
fn call(server: &Server, key: &str, method: &str, path: &str, body: Value) -> Value {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let (status, text) = exchange(&server.addr, method, path, key, &body)
        .unwrap_or_else(|| panic!("{method} {path} on {}: no answer", server.addr));
    assert_eq!(status, 200, "{method} {path} on {}: {text}", server.addr);
    serde_json::from_str(&text).unwrap()
}

fn texts(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn two_servers_on_one_database_share_one_truth() {
    let Some(admin) = server_url() else {
        return;
    };
    // Dropped last: the servers go first, then their database.
    let db = Database::create(&admin);
    let (a, b) = (spawn(&db.url), spawn(&db.url));
    // Started together: the schema is created once under an advisory lock.
    wait_ready(&a);
    wait_ready(&b);
    let run = std::process::id();

    // (1) Written through A, found through B on the very next request.
    let secret = format!("The spare key {run} hides under the blue teapot");
    let added = call(
        &a,
        ALPHA,
        "POST",
        "/v1/memories",
        json!({"messages": secret, "user_id": "ann", "infer": false}),
    );
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    let found = call(
        &b,
        ALPHA,
        "POST",
        "/v1/memories/search",
        json!({"query": "where is the spare key", "user_id": "ann"}),
    );
    assert_eq!(
        found["results"][0]["id"], id,
        "B's first search finds A's write: {found}"
    );
    let one = call(&b, ALPHA, "GET", &format!("/v1/memories/{id}"), Value::Null);
    assert_eq!(one["memory"], secret.as_str());

    // (2) One fact superseded through both servers at once, several rounds
    // so the race has chances to interleave both ways.
    for round in 0..3 {
        let user = format!("mover-{round}");
        let paris = call(
            &a,
            ALPHA,
            "POST",
            "/v1/memories",
            json!({"messages": "I live in Paris", "user_id": user, "infer": true}),
        );
        let paris_id = paris["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "fact")
            .unwrap_or_else(|| panic!("no fact distilled from Paris: {paris}"))["id"]
            .as_str()
            .unwrap()
            .to_string();
        let barrier = Arc::new(Barrier::new(2));
        let race = [(&a, "I moved to Berlin"), (&b, "I moved to Madrid")].map(|(s, text)| {
            let (addr, barrier, user) = (s.addr.clone(), barrier.clone(), user.clone());
            std::thread::spawn(move || {
                let body = json!({"messages": text, "user_id": user, "infer": true}).to_string();
                barrier.wait();
                exchange(&addr, "POST", "/v1/memories", ALPHA, &body)
            })
        });
        let mut updates = 0;
        for h in race {
            let (status, body) = h.join().unwrap().expect("a racing add got no answer");
            assert_eq!(status, 200, "round {round}: {body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            updates += v["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["event"] == "UPDATE" && r["previous_memory"] == "User lives in Paris")
                .count();
        }
        assert_eq!(
            updates, 1,
            "round {round}: one of the two supersedes Paris (the other may supersede the winner)"
        );
        for server in [&a, &b] {
            let current = call(
                server,
                ALPHA,
                "GET",
                &format!("/v1/memories?user_id={user}&kind=fact"),
                Value::Null,
            );
            let lives: Vec<&Value> = current["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["metadata"]["fact"]["attribute"] == "lives_in")
                .collect();
            assert_eq!(
                lives.len(),
                1,
                "round {round}: one current lives_in: {current}"
            );
            let city = lives[0]["metadata"]["fact"]["value"].as_str().unwrap();
            assert!(
                ["Berlin", "Madrid"].contains(&city),
                "round {round}: {city}"
            );
        }
        let history = call(
            &b,
            ALPHA,
            "GET",
            &format!("/v1/memories/{paris_id}/history"),
            Value::Null,
        );
        let events: Vec<&str> = history["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            events.iter().filter(|e| **e != "ADD").count(),
            1,
            "round {round}: Paris superseded once: {history}"
        );
        let old = call(
            &a,
            ALPHA,
            "GET",
            &format!("/v1/memories/{paris_id}?include_deleted=true"),
            Value::Null,
        );
        assert!(
            !old["valid_until"].is_null(),
            "Paris is no longer current: {old}"
        );
    }

    // (3) Tenants: the same user id under two keys, through both servers.
    let bravo_text = format!("Bravo's spare key {run} is in the red kettle");
    call(
        &b,
        BRAVO,
        "POST",
        "/v1/memories",
        json!({"messages": bravo_text, "user_id": "ann", "infer": false}),
    );
    for server in [&a, &b] {
        let [alpha_sees, bravo_sees] = [ALPHA, BRAVO].map(|key| {
            let hits = call(
                server,
                key,
                "POST",
                "/v1/memories/search",
                json!({"query": "spare key teapot kettle", "user_id": "ann"}),
            );
            let listed = call(server, key, "GET", "/v1/memories?user_id=ann", Value::Null);
            let mut seen = texts(&hits);
            seen.extend(texts(&listed));
            seen
        });
        assert!(alpha_sees.contains(&secret) && bravo_sees.contains(&bravo_text));
        assert!(
            !alpha_sees.contains(&bravo_text),
            "alpha sees bravo's memory on {}",
            server.addr
        );
        assert!(
            !bravo_sees.contains(&secret),
            "bravo sees alpha's memory on {}",
            server.addr
        );
        let (status, body) = exchange(
            &server.addr,
            "GET",
            &format!("/v1/memories/{id}"),
            BRAVO,
            "",
        )
        .unwrap();
        assert_eq!(status, 404, "alpha's id through bravo's key: {body}");
        let entities = call(server, BRAVO, "GET", "/v1/entities", Value::Null);
        assert!(
            !entities.to_string().contains("mover-"),
            "bravo sees alpha's users: {entities}"
        );
    }
}
