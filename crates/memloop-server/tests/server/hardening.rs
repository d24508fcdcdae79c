//! Hostile and broken clients: stalled uploads and silent sockets over a
//! real socket, the per-IP connection bound, the Host guard on /mcp,
//! malformed ids and pages, a Redis that is down, and what the log says.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::*;

/// A server on 127.0.0.1 served by `serve_with` with the config's own
/// connection limits, as `memloop serve` runs it.
struct Live {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    handle: tokio::task::JoinHandle<std::io::Result<()>>,
    _server: TestServer,
}

impl Live {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.handle.await.unwrap().unwrap();
    }
}

async fn live(config: ServerConfig) -> Live {
    let limits = memloop_server::ConnLimits::from_config(&config);
    let server = server_with(config, None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let handle = tokio::spawn(memloop_server::serve_with(
        listener,
        server.app.clone(),
        async {
            let _ = stopped.await;
        },
        limits,
    ));
    Live {
        addr,
        stop: Some(stop),
        handle,
        _server: server,
    }
}

/// Everything the server sends until it closes the connection. The bound
/// only keeps a broken server from hanging the test; the server's own
/// timeouts in these tests are far shorter.
async fn read_until_closed(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the server never closed the connection");
    String::from_utf8_lossy(&out).into_owned()
}

/// One request on a fresh connection; the whole answer.
async fn raw(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    read_until_closed(&mut s).await
}

fn get(path: &str, key: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"
    )
}

/// Opens a connection that sends the headers of an add and half its body,
/// then stalls.
async fn stalled_upload(addr: SocketAddr, key: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"messages\": \"I am half"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// The server's gauge of requests being answered, read with key B.
async fn in_flight(addr: SocketAddr) -> usize {
    let text = raw(addr, &get("/metrics", KEY_B)).await;
    text.lines()
        .find_map(|l| l.strip_prefix("memloop_http_requests_in_flight "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_uploads_do_not_hold_the_keys_permits() {
    let run = live(ServerConfig {
        api_keys: keys_ab(),
        max_in_flight_per_key: 4,
        // Longer than the test: the uploads stay stalled throughout.
        body_read_timeout: Duration::from_secs(600),
        ..ServerConfig::default()
    })
    .await;
    let addr = run.addr;
    let mut stalled = Vec::new();
    for _ in 0..12 {
        stalled.push(stalled_upload(addr, KEY_A).await);
    }
    // Wait until the server has every stalled request inside it (the
    // metrics request itself is one more).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = in_flight(addr).await;
        if n >= 13 {
            break;
        }
        // A stalled upload has nothing to be answered with but a refusal
        // (before the fix: 429, its permit taken before its body came).
        for s in &stalled {
            let mut buf = [0u8; 512];
            if let Ok(got) = s.try_read(&mut buf) {
                panic!(
                    "a stalled upload was answered: {:?}",
                    String::from_utf8_lossy(&buf[..got])
                );
            }
        }
        assert!(
            Instant::now() < deadline,
            "the stalled requests never arrived ({n} in flight)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Twelve stalled uploads with key A, four permits: A is still served.
    let answer = raw(addr, &get("/v1/memories?user_id=alice", KEY_A)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // And a complete add goes through.
    let body = json!({"messages": "Alice waters the ferns on Sundays", "user_id": "alice", "infer": false}).to_string();
    let answer = raw(
        addr,
        &format!(
            "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY_A}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(stalled);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_uploads_and_silent_sockets_are_closed() {
    let run = live(ServerConfig {
        api_keys: keys_ab(),
        body_read_timeout: Duration::from_millis(500),
        header_read_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    })
    .await;
    let addr = run.addr;
    let mut uploads = Vec::new();
    for _ in 0..3 {
        uploads.push(stalled_upload(addr, KEY_A).await);
    }
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut half_header = TcpStream::connect(addr).await.unwrap();
    half_header
        .write_all(b"GET /v1/memories?user_id=alice HTTP/1.1\r\nHost: 127.0")
        .await
        .unwrap();

    for s in &mut uploads {
        let answer = read_until_closed(s).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("body_timeout"), "{answer}");
        assert!(answer.to_ascii_lowercase().contains("connection: close"));
    }
    // No request ever started on these: hyper closes them (it may first
    // answer 408 to the half-sent header).
    let answer = read_until_closed(&mut silent).await;
    assert!(answer.is_empty(), "{answer}");
    let answer = read_until_closed(&mut half_header).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_per_ip_are_bounded() {
    let run = live(ServerConfig {
        api_keys: keys_ab(),
        max_connections_per_ip: 3,
        header_read_timeout: Duration::from_secs(600),
        ..ServerConfig::default()
    })
    .await;
    let addr = run.addr;
    // Three idle connections, accepted in order: the fourth is one too many.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut fourth = TcpStream::connect(addr).await.unwrap();
    let answer = read_until_closed(&mut fourth).await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.contains("too_many_connections"), "{answer}");

    // One closes; once the server has noticed, a new connection is served.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = raw(addr, &get("/v1/memories?user_id=alice", KEY_A)).await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
        assert!(Instant::now() < deadline, "the slot was never given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(held);
    run.stop().await;
}

fn with_host(method: &str, uri: &str, host: &str, key: Option<&str>) -> Request<Body> {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", host);
    if let Some(k) = key {
        b = b.header("authorization", format!("Bearer {k}"));
    }
    b.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn mcp_answers_only_known_hosts_even_with_keys() {
    let s = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            addr: "0.0.0.0:8420".into(),
            allowed_hosts: vec!["memory.example".into()],
            ..ServerConfig::default()
        },
        None,
    );
    // A stand-in for memloop-mcp's router: the guard is the server's.
    let mcp = axum::Router::new().route("/mcp", axum::routing::post(|| async { "mcp" }));
    let app = memloop_server::router_with_mcp(s.state.clone(), Some(mcp));

    for host in ["evil.example", "evil.example:8420", "0.0.0.0:8420"] {
        send(&app, with_host("POST", "/mcp", host, Some(KEY_A)))
            .await
            .assert_error(403, "forbidden_host");
    }
    for host in [
        "127.0.0.1:8420",
        "localhost:8420",
        "[::1]:8420",
        "memory.example",
    ] {
        let a = send(&app, with_host("POST", "/mcp", host, Some(KEY_A))).await;
        assert_eq!(a.status, 200, "{host}: {}", a.text);
    }
    // REST routes with keys take any Host: a rebinding page has no key.
    let a = send(
        &app,
        with_host("GET", "/v1/memories?user_id=u", "evil.example", Some(KEY_A)),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);

    // Keyless, every route is guarded; the bind address counts.
    let s = server_with(
        ServerConfig {
            addr: "127.0.0.2:8420".into(),
            ..ServerConfig::default()
        },
        None,
    );
    send(
        &s.app,
        with_host("GET", "/v1/memories?user_id=u", "evil.example", None),
    )
    .await
    .assert_error(403, "forbidden_host");
    let a = send(
        &s.app,
        with_host("GET", "/v1/memories?user_id=u", "127.0.0.2:8420", None),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn malformed_ids_are_400_with_a_short_escaped_echo() {
    let s = server();
    let long = "x".repeat(5000);
    for id in ["%00", "a%0Ab", long.as_str()] {
        for (method, uri, body) in [
            ("GET", format!("/v1/memories/{id}"), None),
            ("GET", format!("/v1/memories/{id}/history"), None),
            ("DELETE", format!("/v1/memories/{id}"), None),
            (
                "PUT",
                format!("/v1/memories/{id}"),
                Some(json!({"text": "x"})),
            ),
        ] {
            let a = call(&s.app, method, &uri, Some(KEY_A), body).await;
            a.assert_error(400, "invalid_input");
            let message = a.body["error"]["message"].as_str().unwrap();
            assert!(message.contains("UUID"), "{message}");
            assert!(message.len() < 400, "{method} {}: {message}", id.len());
            assert!(!message.contains('\0') && !message.contains('\n'));
        }
    }
    // A well-formed id that does not exist is still 404, echoed short.
    let a = call(
        &s.app,
        "GET",
        &format!("/v1/memories/{}", "y".repeat(200)),
        Some(KEY_A),
        None,
    )
    .await;
    a.assert_error(404, "not_found");
    assert!(a.body["error"]["message"].as_str().unwrap().len() < 120);
}

#[tokio::test]
async fn pages_are_bounded_and_links_make_sense() {
    let s = server();
    add_raw(&s.app, KEY_A, "alice", &["one", "two", "three"]).await;
    let app = &s.app;
    let list = |q: &str| {
        let uri = format!("/v3/memories?{q}");
        async move {
            call(
                app,
                "POST",
                &uri,
                Some(KEY_A),
                Some(json!({"filters": {"user_id": "alice"}})),
            )
            .await
        }
    };
    list("page=18446744073709551615")
        .await
        .assert_error(400, "invalid_input");
    list("page=1000001&page_size=1")
        .await
        .assert_error(400, "invalid_input");
    list("page=0").await.assert_error(400, "invalid_input");
    list("page=1&page_size=0")
        .await
        .assert_error(400, "invalid_input");
    list("page=18446744073709551616")
        .await
        .assert_error(400, "invalid_query");

    let a = list("page=1000000&page_size=1000").await;
    let body = a.ok();
    assert_eq!(body["count"], 3);
    assert_eq!(body["results"], json!([]));
    assert_eq!(body["next"], json!(null));
    // Past the end, previous is the last page with memories.
    assert_eq!(body["previous"], "/v3/memories?page=1&page_size=1000");
    let a = list("page=2&page_size=2").await;
    assert_eq!(a.ok()["previous"], "/v3/memories?page=1&page_size=2");
    assert_eq!(a.body["next"], json!(null));
    assert_eq!(a.body["results"].as_array().unwrap().len(), 1);

    call(
        &s.app,
        "GET",
        "/v1/memories?user_id=alice&offset=18446744073709551615",
        Some(KEY_A),
        None,
    )
    .await
    .assert_error(400, "invalid_input");
}

/// A loopback port where nothing listens (bound, then released).
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_starts_without_redis_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let port = dead_port();
    let mut config = memloop::Config::default().with_data_dir(dir.path());
    config.short_term.url = Some(format!("redis://:hunter2-secret@127.0.0.1:{port}/0"));
    let state = memloop_server::AppState::open(
        &config,
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
    )
    .expect("the server starts while Redis is down");
    let app = memloop_server::router(state);
    let shown = format!("redis://127.0.0.1:{port}/0");

    let r = call(&app, "GET", "/readyz", None, None).await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.body["status"], "not_ready");
    assert_eq!(r.body["error"]["code"], "not_ready");
    assert_eq!(r.body["details"]["store"], "ok");
    assert!(r.body["details"]["embedder"]
        .as_str()
        .unwrap()
        .contains("MiniLM"));
    let short_term = r.body["details"]["short_term"].as_str().unwrap();
    assert!(short_term.starts_with("down:"), "{short_term}");
    assert!(
        short_term.contains(&format!("Redis at {shown}")),
        "{short_term}"
    );
    assert!(!r.text.contains("hunter2"), "{}", r.text);

    // The routes that need Redis say so; the long-term store works.
    for (method, uri, body) in [
        ("GET", "/v1/sessions/s1", None),
        (
            "POST",
            "/v1/sessions/s1/messages",
            Some(json!({"messages": "hello"})),
        ),
        (
            "POST",
            "/v1/context",
            Some(json!({"input": "hi", "user_id": "alice", "run_id": "s1"})),
        ),
    ] {
        let a = call(&app, method, uri, Some(KEY_A), body).await;
        a.assert_error(503, "remote_unavailable");
        let message = a.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("Redis at {shown}")), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
    add_raw(&app, KEY_A, "alice", &["Alice likes green tea"]).await;
}

#[tokio::test]
async fn readiness_reports_every_dependency() {
    let s = server();
    let r = call(&s.app, "GET", "/readyz", None, None).await;
    let details = &r.ok()["details"];
    assert_eq!(details["store"], "ok");
    assert_eq!(details["short_term"], "ok");
    assert!(details["embedder"].as_str().unwrap().contains("MiniLM"));
}

/// Everything logged by this test binary, from the moment it is installed.
fn captured() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        buf
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_carry_no_memory_texts_or_queries() {
    let log = captured();
    let run = live(ServerConfig {
        api_keys: keys_ab(),
        ..ServerConfig::default()
    })
    .await;
    let addr = run.addr;
    let secret = "Quokkaberry-7731 hides the spare key under the blue flowerpot";
    let query = "where does quokkaberry-7731 hide things";
    let input = "remind me about the flamingo-4402 appointment";
    let post = |path: &str, body: serde_json::Value| {
        let body = body.to_string();
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY_A}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    for (path, body) in [
        (
            "/v1/memories",
            json!({"messages": secret, "user_id": "alice", "infer": false}),
        ),
        (
            "/v1/memories",
            json!({"messages": [{"role": "user", "content": secret}], "user_id": "alice", "run_id": "s9"}),
        ),
        (
            "/v1/memories/search",
            json!({"query": query, "user_id": "alice"}),
        ),
        (
            "/v1/context",
            json!({"input": input, "user_id": "alice", "run_id": "s9"}),
        ),
        ("/v1/sessions/s9/messages", json!({"messages": input})),
    ] {
        let answer = raw(addr, &post(path, body)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
    }
    run.stop().await;

    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    // The capture works: the request lines and the loop's events are there.
    assert!(text.contains("request answered"), "{text}");
    assert!(text.contains("memory_retrieval"), "{text}");
    for needle in ["quokkaberry", "Quokkaberry", "flowerpot", "flamingo-4402"] {
        assert!(!text.contains(needle), "{needle} was logged:\n{text}");
    }
}

/// The requests that aborted the whole process (a stack overflow in the
/// filter parser) answer 400 over a real socket, and the server goes on
/// serving the same and other clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_filters_answer_400_and_the_server_keeps_serving() {
    let run = live(ServerConfig {
        api_keys: keys_ab(),
        ..ServerConfig::default()
    })
    .await;
    let addr = run.addr;
    let post = |path: &str, body: String| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY_A}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let parens = |n: usize| format!("{}topic = food{}", "(".repeat(n), ")".repeat(n));
    let search = |filters: serde_json::Value| {
        post(
            "/v1/memories/search",
            json!({"query": "food", "user_id": "alice", "filters": filters}).to_string(),
        )
    };
    let mut requests = vec![
        search(json!(parens(1_600))),
        search(json!(format!("{}topic = food", "NOT ".repeat(4_000)))),
        get(
            &format!("/v1/memories?user_id=alice&filter={}", "(".repeat(3_000)),
            KEY_A,
        ),
        // Over the text form's 16 KiB: refused before it is lexed.
        search(json!("NOT ".repeat(20_000))),
    ];
    // The JSON form: 100 levels of NOT (serde_json itself stops at 128).
    let mut nested = json!({"topic": "food"});
    for _ in 0..100 {
        nested = json!({ "NOT": nested });
    }
    requests.push(search(nested));
    for request in &requests {
        let answer = raw(addr, request).await;
        assert!(
            answer.starts_with("HTTP/1.1 400"),
            "{}",
            &answer[..answer.len().min(300)]
        );
        assert!(answer.contains("bad filter"), "{answer}");
        // Still serving, key A and key B alike.
        for key in [KEY_A, KEY_B] {
            let ok = raw(addr, &get("/v1/memories?user_id=alice", key)).await;
            assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        }
    }
    run.stop().await;
}
