//! Over a real socket (127.0.0.1, an ephemeral port): tenant isolation with
//! two keys, the error bodies, trailing slashes, graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memloop::Llm;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::*;

pub struct Running {
    pub addr: SocketAddr,
    pub stop: Option<oneshot::Sender<()>>,
    pub handle: JoinHandle<std::io::Result<()>>,
    pub server: TestServer,
}

/// A server whose two keys, `KEY_A` and `KEY_B`, are two tenants, without an LLM.
pub async fn start_keyed() -> Running {
    start(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        None,
    )
    .await
}

pub async fn start(config: ServerConfig, llm: Option<Arc<dyn Llm>>) -> Running {
    let server = server_with(config, llm);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let handle = tokio::spawn(memloop_server::serve(listener, server.app.clone(), async {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop: Some(stop),
        handle,
        server,
    }
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub request_id: Option<String>,
}

/// One HTTP request with a blocking client (off the async threads).
pub async fn http(
    addr: SocketAddr,
    method: &'static str,
    path: &str,
    auth: Option<String>,
    body: Option<Value>,
) -> Result<Reply, String> {
    let url = format!("http://{addr}{path}");
    tokio::task::spawn_blocking(move || {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .build();
        let mut req = agent.request(method, &url);
        if let Some(a) = auth {
            req = req.set("Authorization", &a);
        }
        let res = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        let resp = match res {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = resp.status();
        let request_id = resp.header("x-request-id").map(str::to_string);
        let text = resp.into_string().map_err(|e| e.to_string())?;
        Ok(Reply {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
            request_id,
        })
    })
    .await
    .unwrap()
}

pub fn bearer(key: &str) -> Option<String> {
    Some(format!("Bearer {key}"))
}

fn assert_error_body(r: &Reply, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.body["error"]["code"], code, "{}", r.body);
    assert!(r.body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    assert!(r.request_id.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_keys_two_tenants_over_a_socket() {
    let run = start_keyed().await;
    let addr = run.addr;

    let added = http(
        addr,
        "POST",
        "/v1/memories",
        bearer(KEY_A),
        Some(json!({
            "messages": [
                {"role": "user", "content": "Alice keeps her passport in the blue drawer"},
                {"role": "user", "content": "Alice's bank PIN hint is her first cat"}
            ],
            "user_id": "alice", "infer": false
        })),
    )
    .await
    .unwrap();
    assert_eq!(added.status, 200, "{}", added.body);
    let a_ids: Vec<String> = added.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    // Mem0 clients send `Token KEY` and trailing slashes.
    let b_added = http(
        addr,
        "POST",
        "/v1/memories/",
        Some(format!("Token {KEY_B}")),
        Some(json!({"messages": "Bravo's alice likes green tea", "user_id": "alice", "infer": false})),
    )
    .await
    .unwrap();
    assert_eq!(b_added.status, 200, "{}", b_added.body);

    // B asks for each of A's ids: 404, as for an id that never existed.
    for id in &a_ids {
        for (method, path) in [
            ("GET", format!("/v1/memories/{id}")),
            ("GET", format!("/v1/memories/{id}/history")),
            ("DELETE", format!("/v1/memories/{id}")),
        ] {
            let r = http(addr, method, &path, bearer(KEY_B), None)
                .await
                .unwrap();
            assert_error_body(&r, 404, "not_found");
        }
        let r = http(
            addr,
            "PUT",
            &format!("/v1/memories/{id}/"),
            bearer(KEY_B),
            Some(json!({"text": "hijacked"})),
        )
        .await
        .unwrap();
        assert_error_body(&r, 404, "not_found");
    }

    // B's search and list for "alice" see none of A's memories.
    let r = http(
        addr,
        "POST",
        "/v1/memories/search/",
        bearer(KEY_B),
        Some(json!({"query": "where is the passport? bank PIN", "user_id": "alice", "top_k": 50})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let hits = r.body["results"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{}", r.body);
    assert_eq!(hits[0]["memory"], "Bravo's alice likes green tea");
    let r = http(
        addr,
        "GET",
        "/v1/memories?user_id=alice",
        bearer(KEY_B),
        None,
    )
    .await
    .unwrap();
    let listed = r.body["results"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed
        .iter()
        .all(|m| !a_ids.contains(&m["id"].as_str().unwrap().to_string())));

    // A still has both, unchanged.
    let r = http(
        addr,
        "GET",
        "/v1/memories?user_id=alice",
        bearer(KEY_A),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    let r = http(
        addr,
        "POST",
        "/v1/memories/search",
        bearer(KEY_A),
        Some(json!({"query": "passport", "user_id": "alice"})),
    )
    .await
    .unwrap();
    assert_eq!(r.body["results"][0]["id"], a_ids[0].as_str());

    // The error bodies over the wire.
    let r = http(addr, "GET", "/v1/memories?user_id=alice", None, None)
        .await
        .unwrap();
    assert_error_body(&r, 401, "unauthorized");
    let r = http(
        addr,
        "GET",
        "/v1/memories?user_id=alice",
        bearer("key-nobody-000000"),
        None,
    )
    .await
    .unwrap();
    assert_error_body(&r, 401, "unauthorized");
    let r = http(
        addr,
        "POST",
        "/v1/memories/search",
        bearer(KEY_A),
        Some(json!({"query": "x", "user_id": "alice", "top_k": 5000})),
    )
    .await
    .unwrap();
    assert_error_body(&r, 400, "invalid_input");
    let r = http(
        addr,
        "POST",
        "/v1/memories/search",
        bearer(KEY_A),
        Some(json!({"query": ["x"], "user_id": "alice"})),
    )
    .await
    .unwrap();
    assert_error_body(&r, 422, "invalid_body");
    let r = http(
        addr,
        "POST",
        "/v1/memories",
        bearer(KEY_A),
        Some(json!({"messages": "a".repeat(1024 * 1024 + 10), "user_id": "alice"})),
    )
    .await;
    // The server may answer 413 before reading the whole body, or the
    // client may see the connection end while still sending it.
    if let Ok(r) = r {
        assert_error_body(&r, 413, "body_too_large");
    }
    let r = http(
        addr,
        "POST",
        "/v1/turn",
        bearer(KEY_A),
        Some(json!({"input": "hi", "user_id": "alice", "run_id": "s"})),
    )
    .await
    .unwrap();
    assert_error_body(&r, 503, "llm_not_configured");

    let mut run = run;
    run.stop.take().unwrap().send(()).unwrap();
    run.handle.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_the_request_in_flight_finish() {
    let (stub, hold) = StubLlm::holding("finished after the signal");
    let mut run = start(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        Some(Arc::new(stub)),
    )
    .await;
    let addr = run.addr;
    let turn = tokio::spawn(http(
        addr,
        "POST",
        "/v1/turn",
        bearer(KEY_A),
        Some(json!({"input": "My sister Emma lives in Porto", "user_id": "alice", "run_id": "s1"})),
    ));
    let entered = hold.entered;
    tokio::task::spawn_blocking(move || entered.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the turn reached the LLM");

    // The signal, with the turn still inside the LLM call.
    run.stop.take().unwrap().send(()).unwrap();
    // New connections are refused once the listener is closed.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let refused = tokio::net::TcpStream::connect(addr).await.is_err();
        if refused {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the listener stayed open after the signal"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !run.handle.is_finished(),
        "the server stopped with a request in flight"
    );

    hold.release.send(()).unwrap();
    let r = turn.await.unwrap().unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["reply"], "finished after the signal");
    tokio::time::timeout(Duration::from_secs(10), run.handle)
        .await
        .expect("the server stopped once the request finished")
        .unwrap()
        .unwrap();
    // The turn's writes landed: the session has the user turn and the reply.
    let turns = run
        .server
        .state
        .memory_loop()
        .short_term()
        .read("alpha", "s1")
        .unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].content, "finished after the signal");
}
