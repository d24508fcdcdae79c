#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The test PostgreSQL server (scripts/pg.sh) for the CLI's tests: its URL,
//! a fresh database per test, and `memloop serve` processes on it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The test server's URL: MEMLOOP_TEST_PG_URL, else scripts/pg.sh's server,
/// started here. None only when neither is available.
pub fn server_url() -> Option<String> {
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
                "SKIPPED: MEMLOOP_TEST_PG_URL is unset and scripts/pg.sh start failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("SKIPPED: MEMLOOP_TEST_PG_URL is unset and scripts/pg.sh could not run: {e}");
            return None;
        }
    }
    let out = pg("url").unwrap();
    Some(String::from_utf8(out.stdout).unwrap().trim().to_string())
}

/// The URL of `url` with another database name.
pub fn with_database(url: &str, db: &str) -> String {
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
pub struct Database {
    pub url: String,
    admin: String,
    name: String,
}

impl Database {
    pub fn create(admin: &str) -> Database {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("memloop_cli_test_{}_{nanos}_{n}", std::process::id());
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

pub const BIN: &str = env!("CARGO_BIN_EXE_memloop");
pub const ALPHA: &str = "key-alpha-7f3a9c01";
pub const BRAVO: &str = "key-bravo-2c26b46b";

pub struct Server {
    pub child: Child,
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `memloop serve` on a loopback port with an empty data directory of its
/// own, the store at `store`, and the two tenants' keys.
pub fn spawn(store: &str) -> Server {
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
pub fn wait_ready(server: &Server) {
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
pub fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    key: &str,
    body: &str,
) -> Option<(u16, String)> {
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
pub fn call(server: &Server, key: &str, method: &str, path: &str, body: Value) -> Value {
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
