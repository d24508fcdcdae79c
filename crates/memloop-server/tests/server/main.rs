//! Server tests: the router in process (every route, every error status,
//! tenants, the OpenAPI document, malformed bodies) and over a real socket
//! (tenant isolation, error bodies, graceful shutdown). One binary, so the
//! embedding model loads once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounds;
mod deleted;
mod errors;
mod forgetting;
mod fuzz;
mod graph;
mod hardening;
mod mem0;
mod mem0_client;
mod openapi;
mod procedures;
mod record;
mod routes;
mod scope;
mod socket;
mod tenants;
mod timeline;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use memloop::{
    ChatRequest, ChatResponse, Embedder, InProcessBuffer, Llm, LocalEmbedder, LoopConfig, Memory,
    MemoryLoop, StoreOptions,
};
use memloop_server::{ApiKeys, AppState, ServerConfig};
use serde_json::Value;
use tower::ServiceExt;

pub const KEY_A: &str = "key-alpha-0123456789";
pub const KEY_B: &str = "key-bravo-0123456789";

/// The real local model, loaded once per test binary.
pub fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<LocalEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(LocalEmbedder::locate_and_load(None).expect("run scripts/fetch-model.sh"))
    })
    .clone()
}

/// A chat model that answers at once, or, once told to, holds its first
/// call until released (to keep a request in flight), or fails.
pub struct StubLlm {
    pub reply: Result<String, fn() -> memloop::Error>,
    hold_first: AtomicBool,
    entered: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<Option<mpsc::Receiver<()>>>,
}

/// Handles to a held call: `entered` fires when it starts, sending on
/// `release` lets it answer.
pub struct Hold {
    pub entered: mpsc::Receiver<()>,
    pub release: mpsc::Sender<()>,
}

impl StubLlm {
    pub fn replying(text: &str) -> StubLlm {
        StubLlm {
            reply: Ok(text.to_string()),
            hold_first: AtomicBool::new(false),
            entered: Mutex::new(None),
            release: Mutex::new(None),
        }
    }

    pub fn failing(e: fn() -> memloop::Error) -> StubLlm {
        StubLlm {
            reply: Err(e),
            ..StubLlm::replying("")
        }
    }

    pub fn holding(text: &str) -> (StubLlm, Hold) {
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let stub = StubLlm {
            hold_first: AtomicBool::new(true),
            entered: Mutex::new(Some(entered_tx)),
            release: Mutex::new(Some(release_rx)),
            ..StubLlm::replying(text)
        };
        (stub, Hold { entered, release })
    }
}

impl Llm for StubLlm {
    fn model_id(&self) -> String {
        "stub:test".into()
    }

    fn chat(&self, _request: &ChatRequest) -> memloop::Result<ChatResponse> {
        if self.hold_first.swap(false, Ordering::SeqCst) {
            if let Some(tx) = self.entered.lock().unwrap().take() {
                let _ = tx.send(());
            }
            if let Some(rx) = self.release.lock().unwrap().take() {
                let _ = rx.recv_timeout(Duration::from_secs(20));
            }
        }
        match &self.reply {
            Ok(text) => Ok(ChatResponse::new(text.clone(), "stub")),
            Err(make) => Err(make()),
        }
    }
}

pub struct TestServer {
    pub state: AppState,
    pub app: Router,
    _dir: tempfile::TempDir,
}

pub fn keys_ab() -> ApiKeys {
    ApiKeys::parse(&format!("{KEY_A}=alpha,{KEY_B}=bravo")).unwrap()
}

pub fn server_with(config: ServerConfig, llm: Option<Arc<dyn Llm>>) -> TestServer {
    server_from(config, llm, |m| m)
}

/// `server_with` over a memory `shape` sets up (a reranker, an expansion).
pub fn server_from(
    config: ServerConfig,
    llm: Option<Arc<dyn Llm>>,
    shape: impl FnOnce(Memory) -> Memory,
) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::with_embedder(dir.path(), embedder(), StoreOptions::default()).unwrap();
    let memory = Arc::new(shape(memory));
    let mut memory_loop = MemoryLoop::new(
        memory,
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    if let Some(llm) = llm {
        memory_loop = memory_loop.with_llm(llm);
    }
    let state = AppState::new(memory_loop, config);
    TestServer {
        app: memloop_server::router(state.clone()),
        state,
        _dir: dir,
    }
}

/// Keys for tenants alpha and bravo, no LLM.
pub fn server() -> TestServer {
    server_with(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        None,
    )
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Answer {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// An error answer has exactly `{"error":{"code","message"},"detail"}`.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        assert_eq!(self.code(), code, "{}", self.text);
        assert!(
            !self.body["error"]["message"]
                .as_str()
                .unwrap_or("")
                .is_empty(),
            "{}",
            self.text
        );
        // Besides the error, only `detail`: the message again, for Mem0's clients.
        assert_eq!(self.body.as_object().unwrap().len(), 2, "{}", self.text);
        assert_eq!(
            self.body["detail"], self.body["error"]["message"],
            "{}",
            self.text
        );
        assert_eq!(
            self.body["error"].as_object().unwrap().len(),
            2,
            "{}",
            self.text
        );
    }

    pub fn ok(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.text);
        &self.body
    }
}

pub async fn send(app: &Router, req: Request<Body>) -> Answer {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&bytes).to_string();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
        text,
    }
}

pub fn request(method: &str, uri: &str, key: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(k) = key {
        b = b.header("authorization", format!("Bearer {k}"));
    }
    match body {
        Some(v) => b
            .header("content-type", "application/json")
            .body(Body::from(v.to_string()))
            .unwrap(),
        None => b.body(Body::empty()).unwrap(),
    }
}

pub async fn call(
    app: &Router,
    method: &str,
    uri: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Answer {
    send(app, request(method, uri, key, body.as_ref())).await
}

/// Adds raw memories for a user of the key's tenant; returns their ids.
pub async fn add_raw(app: &Router, key: &str, user: &str, texts: &[&str]) -> Vec<String> {
    let body = serde_json::json!({
        "messages": texts.iter().map(|t| serde_json::json!({"role": "user", "content": t})).collect::<Vec<_>>(),
        "user_id": user,
        "infer": false,
    });
    let a = call(app, "POST", "/v1/memories", Some(key), Some(body)).await;
    a.ok()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}
