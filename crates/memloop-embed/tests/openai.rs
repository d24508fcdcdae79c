#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `OpenAiEmbedder` against a real HTTP server on loopback speaking the
//! OpenAI `/v1/embeddings` wire format.

use std::time::{Duration, Instant};

use memloop_core::{Embedder, Error, ErrorClass};
use memloop_embed::{OpenAiEmbedder, OpenAiEmbedderConfig};
use memloop_teststub::{closed_port, Request, Response, StubServer};
use serde_json::{json, Value};

const KEY: &str = "sk-test-key";

/// The texts a request asked to embed.
trait Inputs {
    fn inputs(&self) -> Vec<String>;
}

impl Inputs for Request {
    fn inputs(&self) -> Vec<String> {
        self.body["input"]
            .as_array()
            .unwrap_or_else(|| panic!("input is not an array: {}", self.body))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }
}

type Handler = Box<dyn FnMut(usize, &Value) -> (u16, String) + Send>;

/// A loopback server answering each request with `handler(n, body)`, where
/// `n` counts requests from 0.
fn start(mut handler: Handler) -> StubServer {
    StubServer::start(move |n, req| {
        let (status, text) = handler(n, &req.body);
        Response::new(status, text)
    })
}

/// The base URL of `server` as an embedder is configured with it.
fn base_url(server: &StubServer) -> String {
    format!("{}/v1", server.base_url())
}

fn config(base_url: String, dimensions: usize) -> OpenAiEmbedderConfig {
    OpenAiEmbedderConfig {
        base_url,
        model: "text-embedding-3-small".to_string(),
        dimensions,
        api_key: Some(KEY.to_string()),
        timeout_secs: 5,
        max_retries: 3,
        batch_size: 128,
    }
}

/// A deterministic, un-normalised vector for a text: its length, then its
/// first byte, then ones.
fn raw_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![1.0; dims];
    v[0] = text.len() as f32;
    if dims > 1 {
        v[1] = f32::from(text.as_bytes().first().copied().unwrap_or(0));
    }
    v
}

fn unit(v: &[f32]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "dimensions");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-5, "component {i}: got {g}, want {w}");
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// A well-formed answer for the texts of `body`, items in the given order of indices.
fn answer(body: &Value, dims: usize, order: &[usize]) -> String {
    let inputs: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let data: Vec<Value> = order
        .iter()
        .map(|&i| {
            json!({
                "object": "embedding",
                "index": i,
                "embedding": raw_vector(inputs[i], dims),
            })
        })
        .collect();
    json!({
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": 3, "total_tokens": 3},
    })
    .to_string()
}

/// Answers every request correctly, items in request order.
fn echo(dims: usize) -> Handler {
    Box::new(move |_, body| {
        let n = body["input"].as_array().unwrap().len();
        (200, answer(body, dims, &(0..n).collect::<Vec<_>>()))
    })
}

#[test]
fn success_honours_index_and_normalises() {
    let dims = 4;
    // Items come back in the order 2, 0, 1.
    let server = start(Box::new(move |_, body| {
        (200, answer(body, dims, &[2, 0, 1]))
    }));
    let e = OpenAiEmbedder::new(config(base_url(&server), dims)).unwrap();
    let texts = ["alpha", "be", "gamma ray burst"];
    let got = e.embed_batch(&texts).unwrap();

    assert_eq!(got.len(), 3);
    for (text, v) in texts.iter().zip(&got) {
        assert!((norm(v) - 1.0).abs() < 1e-5, "{text}: norm {}", norm(v));
        assert_close(v, &unit(&raw_vector(text, dims)));
    }

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/embeddings");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test-key"));
    assert!(
        req.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "content type {:?}",
        req.header("content-type")
    );
    assert_eq!(req.body["model"], "text-embedding-3-small");
    assert_eq!(req.inputs(), texts);
}

#[test]
fn single_embed_and_info() {
    let server = start(echo(3));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let info = e.info();
    assert_eq!(info.dimensions, 3);
    assert!(info.model_id.contains("text-embedding-3-small"), "{info}");
    let v = e.embed("hello").unwrap();
    assert_close(&v, &unit(&raw_vector("hello", 3)));
    assert_eq!(server.requests()[0].inputs(), ["hello"]);
}

#[test]
fn trailing_slash_in_base_url() {
    let server = start(echo(2));
    let e = OpenAiEmbedder::new(config(format!("{}/", base_url(&server)), 2)).unwrap();
    e.embed("x").unwrap();
    assert_eq!(server.requests()[0].path, "/v1/embeddings");
}

#[test]
fn no_key_sends_no_authorization() {
    // OPENAI_API_KEY is never sent to a host other than api.openai.com, so
    // this holds whatever the environment has.
    let server = start(echo(2));
    let mut cfg = config(base_url(&server), 2);
    cfg.api_key = None;
    let e = OpenAiEmbedder::new(cfg).unwrap();
    e.embed("x").unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[test]
fn empty_batch_makes_no_request() {
    let server = start(echo(2));
    let e = OpenAiEmbedder::new(config(base_url(&server), 2)).unwrap();
    assert!(e.embed_batch(&[]).unwrap().is_empty());
    assert!(server.requests().is_empty());
}

#[test]
fn batches_split_in_order() {
    let dims = 4;
    let server = start(echo(dims));
    let mut cfg = config(base_url(&server), dims);
    cfg.batch_size = 2;
    let e = OpenAiEmbedder::new(cfg).unwrap();
    let texts = ["one", "two", "three", "four", "five"];
    let got = e.embed_batch(&texts).unwrap();
    assert_eq!(got.len(), 5);
    for (text, v) in texts.iter().zip(&got) {
        assert_close(v, &unit(&raw_vector(text, dims)));
    }
    let seen = server.requests();
    let batches: Vec<Vec<String>> = seen.iter().map(Inputs::inputs).collect();
    assert_eq!(
        batches,
        vec![
            vec!["one".to_string(), "two".to_string()],
            vec!["three".to_string(), "four".to_string()],
            vec!["five".to_string()],
        ]
    );
    for req in &seen {
        assert_eq!(req.path, "/v1/embeddings");
        assert_eq!(req.body["model"], "text-embedding-3-small");
        assert_eq!(req.header("authorization"), Some("Bearer sk-test-key"));
    }
}

/// Fails the first `failures` requests with `status`, then answers correctly.
fn failing_then_ok(status: u16, failures: usize, dims: usize) -> Handler {
    Box::new(move |n, body| {
        if n < failures {
            (
                status,
                json!({"error": {"message": "try later", "type": "server_error"}}).to_string(),
            )
        } else {
            let len = body["input"].as_array().unwrap().len();
            (200, answer(body, dims, &(0..len).collect::<Vec<_>>()))
        }
    })
}

#[test]
fn retries_after_500() {
    let server = start(failing_then_ok(500, 1, 3));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let got = e.embed_batch(&["a", "bb"]).unwrap();
    assert_close(&got[1], &unit(&raw_vector("bb", 3)));
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "one failure, one retry");
    // The retry sends the same request.
    assert_eq!(seen[0].body, seen[1].body);
    assert_eq!(seen[1].header("authorization"), Some("Bearer sk-test-key"));
}

#[test]
fn retries_after_429() {
    let server = start(failing_then_ok(429, 1, 3));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let got = e.embed("rate limited").unwrap();
    assert_close(&got, &unit(&raw_vector("rate limited", 3)));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn honours_retry_after_on_429_and_503() {
    for status in [429, 503] {
        let server = StubServer::start(move |n, req| {
            if n == 0 {
                Response::new(status, json!({"error": {"message": "slow down"}}))
                    .header("retry-after", "1")
            } else {
                Response::new(200, answer(&req.body, 3, &[0]))
            }
        });
        let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
        let started = Instant::now();
        let got = e.embed("patience").unwrap();
        assert_close(&got, &unit(&raw_vector("patience", 3)));
        assert_eq!(server.requests().len(), 2, "{status}: one retry");
        // The backoff alone would be 200 ms.
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{status}: retried after {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn gives_up_after_max_retries() {
    let server = start(failing_then_ok(503, usize::MAX, 3));
    let mut cfg = config(base_url(&server), 3);
    cfg.max_retries = 1;
    let e = OpenAiEmbedder::new(cfg).unwrap();
    let err = e.embed("x").unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(err.to_string().contains("503"), "{err}");
    assert_eq!(server.requests().len(), 2, "the first try and one retry");
}

#[test]
fn bad_request_is_not_retried() {
    let server = start(Box::new(|_, _| {
        (
            400,
            json!({"error": {"message": "model not found: nope", "type": "invalid_request_error"}})
                .to_string(),
        )
    }));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let started = Instant::now();
    let err = e.embed_batch(&["x", "y"]).unwrap_err();
    match &err {
        Error::RemoteRejected(msg) => {
            assert!(msg.contains("400"), "{msg}");
            assert!(msg.contains("model not found"), "{msg}");
        }
        other => panic!("expected RemoteRejected, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1, "a 400 must not be retried");
    assert!(started.elapsed() < Duration::from_millis(150), "no backoff");
}

#[test]
fn unauthorized_is_not_retried() {
    let server = start(Box::new(|_, _| (401, "{}".to_string())));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let err = e.embed("x").unwrap_err();
    assert!(
        matches!(&err, Error::RemoteRejected(m) if m.contains("401")),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn refusal_gives_the_provider_message_and_the_fix() {
    let server = StubServer::script(vec![Response::new(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
    )]);
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let err = e.embed("x").unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("Incorrect API key provided"), "{msg}");
    assert!(
        !msg.contains("invalid_request_error"),
        "the raw body: {msg}"
    );
    assert!(msg.contains("api_key in [embedder]"), "{msg}");
}

#[test]
fn bad_base_url_is_invalid_not_retried() {
    // No scheme: configuration to fix, not a network fault to wait out.
    let e = OpenAiEmbedder::new(config("localhost:11434/v1".into(), 3)).unwrap();
    let started = Instant::now();
    let err = e.embed("x").unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err:?}");
    assert!(err.to_string().contains("base_url"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(150), "no backoff");
}

#[test]
fn a_zero_timeout_is_refused_at_construction() {
    let mut cfg = config("http://127.0.0.1:9/v1".into(), 3);
    cfg.timeout_secs = 0;
    let err = OpenAiEmbedder::new(cfg).err().unwrap();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err:?}");
    assert!(err.to_string().contains("timeout_secs"), "{err}");
}

#[test]
fn wrong_dimensions_is_an_error() {
    // Configured for 4, the server answers 3.
    let server = start(echo(3));
    let e = OpenAiEmbedder::new(config(base_url(&server), 4)).unwrap();
    let err = e.embed_batch(&["x", "y"]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("dimensions"), "{msg}");
    assert!(msg.contains('3') && msg.contains('4'), "{msg}");
}

#[test]
fn malformed_json_is_an_error() {
    let server = start(Box::new(|_, _| (200, "{\"data\": [".to_string())));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    let err = e.embed("x").unwrap_err();
    assert!(err.to_string().contains("JSON"), "{err}");
}

#[test]
fn wrong_shape_json_is_an_error() {
    let server = start(Box::new(|_, _| {
        (200, json!({"embeddings": [[1.0, 2.0, 3.0]]}).to_string())
    }));
    let e = OpenAiEmbedder::new(config(base_url(&server), 3)).unwrap();
    assert!(e.embed("x").is_err());
}

#[test]
fn missing_item_is_an_error() {
    let dims = 3;
    // Two texts, only item 1 answered.
    let server = start(Box::new(move |_, body| (200, answer(body, dims, &[1]))));
    let e = OpenAiEmbedder::new(config(base_url(&server), dims)).unwrap();
    let err = e.embed_batch(&["x", "y"]).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn out_of_range_index_is_an_error() {
    let server = start(Box::new(|_, _| {
        let data = json!([
            {"index": 0, "embedding": [1.0, 0.0]},
            {"index": 5, "embedding": [0.0, 1.0]},
        ]);
        (200, json!({"data": data}).to_string())
    }));
    let e = OpenAiEmbedder::new(config(base_url(&server), 2)).unwrap();
    assert!(e.embed("x").is_err());
}

#[test]
fn connection_refused_is_remote_after_retries() {
    let mut cfg = config(format!("http://127.0.0.1:{}/v1", closed_port()), 3);
    cfg.max_retries = 1;
    let e = OpenAiEmbedder::new(cfg).unwrap();
    let started = Instant::now();
    let err = e.embed("x").unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    // One retry means one backoff pause (200 ms) happened.
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn timeout_is_remote() {
    let server = start(Box::new(|_, body| {
        std::thread::sleep(Duration::from_millis(1500));
        (200, answer(body, 2, &[0]))
    }));
    let mut cfg = config(base_url(&server), 2);
    cfg.timeout_secs = 1;
    cfg.max_retries = 0;
    let e = OpenAiEmbedder::new(cfg).unwrap();
    let started = Instant::now();
    let err = e.embed("x").unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(1450));
}

#[test]
fn config_needs_model_and_dimensions() {
    let mut cfg = config("http://127.0.0.1:1/v1".into(), 0);
    assert!(OpenAiEmbedder::new(cfg.clone()).is_err());
    cfg.dimensions = 3;
    cfg.model = "  ".into();
    assert!(OpenAiEmbedder::new(cfg).is_err());
}
