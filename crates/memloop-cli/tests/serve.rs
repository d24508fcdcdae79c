#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `memloop serve` as an operator starts it: the real binary on a loopback
//! port, configured from a file, spoken to over a raw socket.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
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

/// A free port, never one this process has handed out before: the tests
/// run at once, and when two were given the same port one server could not
/// bind it and the other answered both tests' requests (a 403 for a host
/// only the first allowed, seen once in CI).
fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN.lock().unwrap();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

fn start(dir: &std::path::Path, config: &str) -> Server {
    start_logging(dir, config, Stdio::null())
}

fn start_logging(dir: &std::path::Path, config: &str, log: Stdio) -> Server {
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
        .env_remove("MEMLOOP_LOG_TEXTS")
        .stdout(Stdio::null())
        .stderr(log)
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
    exchange(addr, method, path, host, body).map(|(status, _)| status)
}

/// One HTTP/1.1 request on its own connection: the status and the body.
fn exchange(addr: &str, method: &str, path: &str, host: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    s.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Some((status, body.to_string()))
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

#[test]
fn mcp_context_calls_show_in_the_inspectors_turns_as_rest_ones_do() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "[server]\ntrace_ring = 10\n");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_context","arguments":{"user_id":"ana","session_id":"s1","input":"what do I do for work?"}}}"#;
    let (status, body) = exchange(&server.addr, "POST", "/mcp", "127.0.0.1", call).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"result\""), "{body}");
    let (status, body) = exchange(&server.addr, "GET", "/v1/traces", "127.0.0.1", "").unwrap();
    assert_eq!(status, 200, "{body}");
    let traces: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    let kept = traces["results"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{traces}");
    assert_eq!(kept[0]["route"], "context");
    assert_eq!(kept[0]["trace"]["query"], "what do I do for work?");
    assert_eq!(kept[0]["trace"]["user_id"], "ana");
}

/// Every value under memloop's short-term prefix in the real Redis, as text.
fn redis_contents() -> String {
    let redis = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", "6379", "--raw"])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut all = String::new();
    for key in redis(&["--scan", "--pattern", "memloop:st*"]).lines() {
        let value = match redis(&["TYPE", key]).trim() {
            "string" => redis(&["GET", key]),
            "list" => redis(&["LRANGE", key, "0", "-1"]),
            "set" => redis(&["SMEMBERS", key]),
            "hash" => redis(&["HGETALL", key]),
            other => format!("<{other}>"),
        };
        all.push_str(key);
        all.push('\n');
        all.push_str(&value);
    }
    all
}

/// Every byte of every file under `dir`.
fn files_contents(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                all.extend(std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    all
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_purge_through_the_running_server_leaves_no_byte_of_the_user_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = start_logging(
        dir.path(),
        "[short_term]\nurl = \"redis://127.0.0.1:6379\"\n",
        Stdio::from(log),
    );
    let run = std::process::id();
    let (victim, keeper) = (format!("victim-{run}"), format!("keeper-{run}"));
    // Distinctive strings: raw text, a text the write pipeline distils, a
    // metadata value, a short-term turn, and a query.
    let secrets = [
        format!("quokkasecret{run} lives under my bed"),
        format!("I moved to Zanzibarville{run} last month."),
        format!("metavalue{run}"),
        format!("sessionsecret{run} about the surprise party"),
        format!("querysecret{run}"),
    ];
    let kept = format!("keepersecret{run} stays");
    let call = |method: &str, path: &str, body: String| {
        let (status, body) = exchange(&server.addr, method, path, "127.0.0.1", &body).unwrap();
        assert_eq!(status, 200, "{method} {path}: {body}");
        body
    };
    call(
        "POST",
        "/v1/memories",
        format!(
            r#"{{"messages":"{}","user_id":"{victim}","infer":false,"metadata":{{"tag":"{}"}}}}"#,
            secrets[0], secrets[2]
        ),
    );
    call(
        "POST",
        "/v1/memories",
        format!(
            r#"{{"messages":"{}","user_id":"{victim}","infer":true}}"#,
            secrets[1]
        ),
    );
    call(
        "POST",
        "/v1/memories",
        format!(r#"{{"messages":"{kept}","user_id":"{keeper}","infer":false}}"#),
    );
    call(
        "POST",
        &format!("/v1/sessions/s-{run}/messages"),
        format!(
            r#"{{"messages":[{{"role":"user","content":"{}"}}],"user_id":"{victim}"}}"#,
            secrets[3]
        ),
    );
    let found = call(
        "POST",
        "/v1/memories/search",
        format!(
            r#"{{"query":"{} quokkasecret{run}","user_id":"{victim}"}}"#,
            secrets[4]
        ),
    );
    assert!(found.contains(&secrets[0]), "{found}");
    // The texts are really there before the purge, so the scan below can fail.
    assert!(redis_contents().contains(&secrets[3]));
    let files = files_contents(&dir.path().join("data"));
    assert!(holds(&files, &secrets[0]) && holds(&files, &kept));

    let purged = call(
        "DELETE",
        &format!("/v1/memories?user_id={victim}&purge=true"),
        String::new(),
    );
    let v: serde_json::Value = serde_json::from_str(&purged).unwrap();
    assert!(v["memories_deleted"].as_u64().unwrap() >= 2, "{purged}");
    assert_eq!(v["short_term_sessions_cleared"], 1, "{purged}");

    // The server is still running, with the store open, while we look.
    let files = files_contents(&dir.path().join("data"));
    let redis = redis_contents();
    let logs = std::fs::read(&log_path).unwrap();
    for secret in &secrets {
        // The distinctive word of each: what no other text could contain.
        let word = secret
            .split_whitespace()
            .find(|w| w.contains(&run.to_string()))
            .unwrap();
        let word = word.trim_end_matches('.');
        assert!(
            !holds(&files, word),
            "{word} is still in a file of the data directory"
        );
        assert!(!redis.contains(word), "{word} is still in Redis");
        assert!(!holds(&logs, word), "{word} is in the server's log");
    }
    assert!(holds(&files, &kept), "the other user's memory must stay");
    let after = call(
        "GET",
        &format!("/v1/memories?user_id={keeper}"),
        String::new(),
    );
    assert!(after.contains(&kept), "{after}");
}
