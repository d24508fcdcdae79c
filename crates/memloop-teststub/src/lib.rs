//! A loopback HTTP server for tests of the clients that call remote
//! endpoints (embedders, chat providers). It answers each request with a
//! closure, records what it saw (method, path, headers, JSON body), and stops
//! when dropped.
//!
//! ```no_run
//! use memloop_teststub::{Response, StubServer};
//!
//! let server = StubServer::start(|n, _req| {
//!     if n == 0 {
//!         Response::new(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "1")
//!     } else {
//!         Response::new(200, r#"{"ok":true}"#)
//!     }
//! });
//! let url = format!("{}/v1/things", server.base_url());
//! // ... call `url` with the client under test ...
//! assert_eq!(server.requests()[0].method, "POST");
//! ```

// Used only as a dev-dependency: a failure here is a failed test, and a
// panic is how a test helper reports it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path and query, e.g. `/v1/embeddings`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty.
    pub body: Value,
}

impl Request {
    /// The first header called `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One answer: a status, a body sent as `application/json`, extra headers,
/// and how long to wait before answering (to outlast a client's timeout).
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
    pub delay: Duration,
}

impl Response {
    pub fn new(status: u16, body: impl ToString) -> Response {
        Response {
            status,
            body: body.to_string(),
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Response {
        self.delay = delay;
        self
    }
}

/// The server. Requests are answered one at a time, in arrival order, by
/// `handler(n, request)` where `n` counts requests from 0.
pub struct StubServer {
    server: Arc<tiny_http::Server>,
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    /// Requests whose body was not JSON: the clients under test only send
    /// JSON, so each is a failure, reported when the server is dropped.
    not_json: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl StubServer {
    pub fn start(
        mut handler: impl FnMut(usize, &Request) -> Response + Send + 'static,
    ) -> StubServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let not_json = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (server, requests, not_json) = (
                Arc::clone(&server),
                Arc::clone(&requests),
                Arc::clone(&not_json),
            );
            std::thread::spawn(move || {
                let mut n = 0;
                while let Ok(mut req) = server.recv() {
                    let mut raw = String::new();
                    if let Err(e) = req.as_reader().read_to_string(&mut raw) {
                        not_json
                            .lock()
                            .unwrap()
                            .push(format!("unreadable body: {e}"));
                    }
                    let body = if raw.is_empty() {
                        Value::Null
                    } else {
                        serde_json::from_str(&raw).unwrap_or_else(|e| {
                            not_json
                                .lock()
                                .unwrap()
                                .push(format!("request body is not JSON ({e}): {raw}"));
                            Value::Null
                        })
                    };
                    let seen = Request {
                        method: req.method().to_string(),
                        path: req.url().to_string(),
                        headers: req
                            .headers()
                            .iter()
                            .map(|h| (h.field.to_string(), h.value.to_string()))
                            .collect(),
                        body,
                    };
                    requests.lock().unwrap().push(seen.clone());
                    let answer = handler(n, &seen);
                    n += 1;
                    std::thread::sleep(answer.delay);
                    let mut response = tiny_http::Response::from_string(answer.body)
                        .with_status_code(answer.status)
                        .with_header(header("Content-Type", "application/json"));
                    for (name, value) in &answer.headers {
                        response.add_header(header(name, value));
                    }
                    // The client may have given up (a timeout test): ignore
                    // write errors.
                    let _ = req.respond(response);
                }
            })
        };
        StubServer {
            server,
            port,
            requests,
            not_json,
            thread: Some(thread),
        }
    }

    /// Answers with `script` in turn; the last answer repeats.
    pub fn script(script: Vec<Response>) -> StubServer {
        assert!(!script.is_empty(), "a script needs at least one answer");
        StubServer::start(move |n, _| script[n.min(script.len() - 1)].clone())
    }

    /// `http://127.0.0.1:{port}`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.server.unblock();
        let joined = self.thread.take().map(JoinHandle::join);
        // Surface a failure of the server side (a handler's failed check, a
        // request that was not JSON) unless the test is already failing.
        if std::thread::panicking() {
            return;
        }
        if matches!(joined, Some(Err(_))) {
            panic!("the stub server's handler panicked");
        }
        let not_json = self.not_json.lock().unwrap();
        if let Some(first) = not_json.first() {
            panic!("{first}");
        }
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap()
}

/// A loopback port nothing listens on, for connection-refused tests.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}
