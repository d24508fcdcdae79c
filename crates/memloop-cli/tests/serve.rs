#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `memloop serve` as an operator starts it: the real binary on a loopback
//! port, configured from a file, spoken to over a raw socket.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_memloop");

struct Server {
    child: Child,
    addr: String,
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

fn start(dir: &std::path::Path, config: &str) -> Server {
    let file = dir.join("memloop.toml");
    std::fs::write(&file, config).unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(&file)
        .args(["serve", "--addr", &addr])
        .env_remove("MEMLOOP_API_KEYS")
        .env_remove("MEMLOOP_SHORT_TERM")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, addr };
    let deadline = Instant::now() + Duration::from_secs(60);
    while request(&server.addr, "GET", "/healthz", "127.0.0.1", "").is_none() {
        assert!(Instant::now() < deadline, "memloop serve did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// The status code of one HTTP/1.1 request, or None when nothing answers.
fn request(addr: &str, method: &str, path: &str, host: &str, body: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

#[test]
fn mcp_answers_the_hosts_the_operator_allowed_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "[server]\nallowed_hosts = [\"memory.test\"]\n");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    for (host, want) in [
        ("memory.test", 200),
        ("127.0.0.1", 200),
        ("localhost", 200),
        ("evil.test", 403),
    ] {
        let status = request(&server.addr, "POST", "/mcp", host, init);
        assert_eq!(status, Some(want), "Host: {host}");
    }
}
