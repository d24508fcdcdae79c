#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Both providers against a real HTTP server on loopback speaking each wire
//! format, checking what the client sends as well as what it makes of replies.

use std::time::{Duration, Instant};

use memloop_core::{ChatMessage, ChatRequest, Error, ErrorClass, Llm};
use memloop_llm::{LlmConfig, Provider};
use memloop_teststub::{closed_port, Response, StubServer};
use serde_json::json;

const KEY: &str = "sk-test-key";

fn answer(status: u16, body: impl ToString) -> Response {
    Response::new(status, body)
}

/// The two wire formats, so the shared behaviour is tested once for both.
#[derive(Clone, Copy)]
enum Wire {
    Anthropic,
    OpenAi,
}

impl Wire {
    fn model(self) -> &'static str {
        match self {
            Wire::Anthropic => "claude-test-20250101",
            Wire::OpenAi => "gpt-test-2024-07-18",
        }
    }

    fn base_url(self, port: u16) -> String {
        match self {
            Wire::Anthropic => format!("http://127.0.0.1:{port}"),
            Wire::OpenAi => format!("http://127.0.0.1:{port}/v1"),
        }
    }

    fn path(self) -> &'static str {
        match self {
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAi => "/v1/chat/completions",
        }
    }

    /// A fast-retrying config for `port`, with a key.
    fn config(self, port: u16) -> LlmConfig {
        let provider = match self {
            Wire::Anthropic => Provider::Anthropic,
            Wire::OpenAi => Provider::OpenAi,
        };
        let mut cfg = LlmConfig::new(provider, self.model());
        cfg.base_url = Some(self.base_url(port));
        cfg.api_key = Some(KEY.into());
        cfg.timeout_secs = 5;
        cfg.retry_base_ms = 5;
        cfg
    }

    fn llm(self, server: &StubServer) -> Box<dyn Llm> {
        self.config(server.port()).build().unwrap()
    }

    /// A successful reply, the text split in two parts where the format allows.
    fn ok(self, input_tokens: u32, output_tokens: u32) -> Response {
        let body = match self {
            Wire::Anthropic => json!({
                "id": "msg_01", "type": "message", "role": "assistant",
                "model": "claude-test-20250101-served",
                "content": [
                    {"type": "text", "text": "Hello"},
                    {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
                    {"type": "text", "text": ", Alice"},
                ],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }),
            Wire::OpenAi => json!({
                "id": "chatcmpl-1", "object": "chat.completion",
                "model": "gpt-test-2024-07-18-served",
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Hello, Alice"}}],
                "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                    "total_tokens": input_tokens + output_tokens},
            }),
        };
        answer(200, body)
    }

    /// An error reply in the provider's own shape.
    fn error(self, status: u16, message: &str) -> Response {
        let body = match self {
            Wire::Anthropic => json!({"type": "error",
                "error": {"type": "invalid_request_error", "message": message}}),
            Wire::OpenAi => json!({"error": {"message": message,
                "type": "invalid_request_error", "code": null}}),
        };
        answer(status, body)
    }

    fn key_env(self) -> &'static str {
        match self {
            Wire::Anthropic => "ANTHROPIC_API_KEY",
            Wire::OpenAi => "OPENAI_API_KEY",
        }
    }
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "You extract facts.",
        vec![
            ChatMessage::new("user", "I'm vegetarian."),
            ChatMessage::new("assistant", "Noted."),
            ChatMessage::new("user", "And allergic to peanuts."),
        ],
    )
    .max_tokens(300)
}

/// Runs a shared test once per wire format, as `name::anthropic` and `name::openai`.
macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn anthropic() {
                super::$name(super::Wire::Anthropic)
            }
            #[test]
            fn openai() {
                super::$name(super::Wire::OpenAi)
            }
        }
    )*};
}

both!(
    success_parses_text_and_usage,
    retries_after_429,
    honours_retry_after,
    retries_after_500_and_503,
    exhausted_retries_are_transient,
    bad_request_is_rejected_without_retry,
    unauthorized_names_the_key,
    malformed_json_is_a_clear_error,
    wrong_shape_is_a_clear_error,
    timeout_is_remote,
    connection_refused_is_remote_after_retries,
    trailing_slash_in_base_url,
    empty_model_is_invalid,
);

fn success_parses_text_and_usage(w: Wire) {
    let server = StubServer::script(vec![w.ok(42, 7)]);
    let llm = w.llm(&server);
    let reply = llm.chat(&request()).unwrap();
    assert_eq!(reply.text, "Hello, Alice");
    assert_eq!(reply.model, format!("{}-served", w.model()));
    assert_eq!(
        (reply.input_tokens, reply.output_tokens),
        (Some(42), Some(7))
    );
    assert_eq!(reply.attempts, 1);
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, w.path());
    assert!(
        seen[0]
            .header("content-type")
            .unwrap()
            .starts_with("application/json"),
        "{:?}",
        seen[0].headers
    );
    assert_eq!(seen[0].body["model"], w.model());
    assert_eq!(seen[0].body["max_tokens"], 300);
}

fn retries_after_429(w: Wire) {
    let server = StubServer::script(vec![w.error(429, "rate limited"), w.ok(1, 1)]);
    let reply = w.llm(&server).chat(&request()).unwrap();
    assert_eq!(reply.attempts, 2);
    assert_eq!(reply.text, "Hello, Alice");
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].body, seen[1].body,
        "the retry sends the same request"
    );
}

fn honours_retry_after(w: Wire) {
    let limited = w.error(429, "slow down").header("retry-after", "1");
    let server = StubServer::script(vec![limited, w.ok(1, 1)]);
    let started = Instant::now();
    let reply = w.llm(&server).chat(&request()).unwrap();
    assert_eq!(reply.attempts, 2);
    // The backoff alone would be 5 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

fn retries_after_500_and_503(w: Wire) {
    let server = StubServer::script(vec![
        w.error(500, "internal"),
        answer(503, "<html>upstream unavailable</html>"),
        w.ok(3, 4),
    ]);
    let reply = w.llm(&server).chat(&request()).unwrap();
    assert_eq!(reply.attempts, 3);
    assert_eq!(reply.output_tokens, Some(4));
    assert_eq!(server.requests().len(), 3);
}

fn exhausted_retries_are_transient(w: Wire) {
    let server = StubServer::script(vec![w.error(503, "overloaded")]);
    let mut cfg = w.config(server.port());
    cfg.max_retries = 2;
    let err = cfg.build().unwrap().chat(&request()).unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert_eq!(err.class(), ErrorClass::Transient);
    let msg = err.to_string();
    assert!(msg.contains("503") && msg.contains("overloaded"), "{msg}");
    assert!(msg.contains("3 attempts"), "{msg}");
    assert_eq!(server.requests().len(), 3, "the first try and two retries");
}

fn bad_request_is_rejected_without_retry(w: Wire) {
    let server = StubServer::script(vec![w.error(400, "max_tokens: must be positive")]);
    let err = w.llm(&server).chat(&request()).unwrap_err();
    match &err {
        Error::RemoteRejected(msg) => {
            assert!(msg.contains("400"), "{msg}");
            assert!(msg.contains("max_tokens: must be positive"), "{msg}");
            assert!(msg.contains("check the model id"), "{msg}");
        }
        other => panic!("expected RemoteRejected, got {other:?}"),
    }
    assert_eq!(err.class(), ErrorClass::InvalidInput);
    assert_eq!(server.requests().len(), 1, "a 400 must not be retried");
}

fn unauthorized_names_the_key(w: Wire) {
    let server = StubServer::script(vec![w.error(401, "invalid api key")]);
    let err = w.llm(&server).chat(&request()).unwrap_err();
    assert!(
        matches!(&err, Error::RemoteRejected(m) if m.contains("401") && m.contains(w.key_env())),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

fn malformed_json_is_a_clear_error(w: Wire) {
    let server = StubServer::script(vec![answer(200, "{\"content\": [")]);
    let err = w.llm(&server).chat(&request()).unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(err.to_string().contains("not JSON"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

fn wrong_shape_is_a_clear_error(w: Wire) {
    let server = StubServer::script(vec![answer(200, json!({"result": "Hello"}))]);
    let err = w.llm(&server).chat(&request()).unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(err.to_string().contains("malformed"), "{err}");
}

fn timeout_is_remote(w: Wire) {
    let mut slow = w.ok(1, 1);
    slow.delay = Duration::from_millis(1500);
    let server = StubServer::script(vec![slow]);
    let mut cfg = w.config(server.port());
    cfg.timeout_secs = 1;
    cfg.max_retries = 0;
    let started = Instant::now();
    let err = cfg.build().unwrap().chat(&request()).unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1450),
        "{:?}",
        started.elapsed()
    );
}

fn connection_refused_is_remote_after_retries(w: Wire) {
    let mut cfg = w.config(closed_port());
    cfg.max_retries = 2;
    let err = cfg.build().unwrap().chat(&request()).unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("127.0.0.1") && msg.contains("3 attempts"),
        "{msg}"
    );
}

fn trailing_slash_in_base_url(w: Wire) {
    let server = StubServer::script(vec![w.ok(1, 1)]);
    let mut cfg = w.config(server.port());
    cfg.base_url = Some(format!("{}/", w.base_url(server.port())));
    cfg.build().unwrap().chat(&request()).unwrap();
    assert_eq!(server.requests()[0].path, w.path());
}

fn empty_model_is_invalid(w: Wire) {
    let mut cfg = w.config(closed_port());
    cfg.model = "  ".into();
    let err = cfg.build().err().unwrap();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err}");
    assert!(err.to_string().contains("model"), "{err}");
}

#[test]
fn anthropic_request_shape() {
    let w = Wire::Anthropic;
    let server = StubServer::script(vec![w.ok(1, 1)]);
    let llm = w.llm(&server);
    assert_eq!(llm.model_id(), "anthropic:claude-test-20250101");
    // `json` has no switch in this API: nothing extra may be sent.
    llm.chat(&request().temperature(0.2).json()).unwrap();
    let req = &server.requests()[0];
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(
        req.body,
        json!({
            "model": "claude-test-20250101",
            "max_tokens": 300,
            "system": "You extract facts.",
            "messages": [
                {"role": "user", "content": "I'm vegetarian."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "And allergic to peanuts."},
            ],
            "temperature": 0.2,
        })
    );
}

#[test]
fn anthropic_omits_empty_system_and_temperature() {
    let w = Wire::Anthropic;
    let server = StubServer::script(vec![w.ok(1, 1)]);
    let req = ChatRequest::new("", vec![ChatMessage::new("user", "hi")]);
    w.llm(&server).chat(&req).unwrap();
    let body = &server.requests()[0].body;
    assert!(body.get("system").is_none(), "{body}");
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(body["max_tokens"], 1024);
}

#[test]
fn openai_request_shape() {
    let w = Wire::OpenAi;
    let server = StubServer::script(vec![w.ok(1, 1)]);
    let llm = w.llm(&server);
    assert_eq!(llm.model_id(), "openai:gpt-test-2024-07-18");
    llm.chat(&request().temperature(0.2).json()).unwrap();
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(req.header("x-api-key"), None);
    assert_eq!(
        req.body,
        json!({
            "model": "gpt-test-2024-07-18",
            "messages": [
                {"role": "system", "content": "You extract facts."},
                {"role": "user", "content": "I'm vegetarian."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "And allergic to peanuts."},
            ],
            "max_tokens": 300,
            "temperature": 0.2,
            "response_format": {"type": "json_object"},
        })
    );
}

#[test]
fn openai_plain_request_has_no_extras() {
    let w = Wire::OpenAi;
    let server = StubServer::script(vec![w.ok(1, 1)]);
    let req = ChatRequest::new("", vec![ChatMessage::new("user", "hi")]);
    w.llm(&server).chat(&req).unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    assert!(body.get("response_format").is_none(), "{body}");
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn openai_local_server_needs_no_key() {
    // OPENAI_API_KEY is never sent to a host other than api.openai.com, so
    // this holds whatever the environment has.
    let w = Wire::OpenAi;
    let server = StubServer::script(vec![w.ok(1, 1)]);
    let mut cfg = w.config(server.port());
    cfg.api_key = None;
    cfg.build().unwrap().chat(&request()).unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[test]
fn openai_null_content_is_a_clear_error() {
    let server = StubServer::script(vec![answer(
        200,
        json!({"model": "m", "choices": [{"message": {"role": "assistant", "content": null}}]}),
    )]);
    let err = Wire::OpenAi.llm(&server).chat(&request()).unwrap_err();
    assert!(matches!(err, Error::Remote(_)), "{err:?}");
    assert!(
        err.to_string().contains("choices[0].message.content"),
        "{err}"
    );
}

#[test]
fn missing_usage_is_none() {
    let server = StubServer::script(vec![answer(
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}),
    )]);
    let reply = Wire::OpenAi.llm(&server).chat(&request()).unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(
        reply.model, "gpt-test-2024-07-18",
        "falls back to the pinned model"
    );
    assert_eq!((reply.input_tokens, reply.output_tokens), (None, None));
}

#[test]
fn hosted_urls_need_a_key() {
    for (provider, env) in [
        (Provider::Anthropic, "ANTHROPIC_API_KEY"),
        (Provider::OpenAi, "OPENAI_API_KEY"),
    ] {
        // Only meaningful when the environment has no key to fall back on.
        if std::env::var_os(env).is_some() {
            continue;
        }
        let err = LlmConfig::new(provider, "some-model")
            .build()
            .err()
            .unwrap();
        assert_eq!(err.class(), ErrorClass::InvalidInput, "{err}");
        assert!(err.to_string().contains(env), "{err}");
    }
}

#[test]
fn bad_base_url_is_invalid_not_retried() {
    let mut cfg = Wire::OpenAi.config(closed_port());
    cfg.base_url = Some("localhost:11434/v1".into()); // no scheme
    cfg.retry_base_ms = 1000;
    let started = Instant::now();
    let err = cfg.build().unwrap().chat(&request()).unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err:?}");
    assert!(err.to_string().contains("base_url"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[derive(serde::Deserialize)]
struct ConfigFile {
    llm: LlmConfig,
}

#[test]
fn toml_llm_table() {
    let file: ConfigFile = toml::from_str(
        r#"
        [llm]
        provider = "openai"
        model = "llama3.1:8b"
        base_url = "http://localhost:11434/v1"
        api_key = "sk-from-file"
        max_retries = 5
        "#,
    )
    .unwrap();
    let llm = file.llm;
    assert_eq!(llm.provider, Provider::OpenAi);
    assert_eq!(llm.model, "llama3.1:8b");
    assert_eq!(llm.api_key.as_deref(), Some("sk-from-file"));
    assert_eq!(
        (llm.timeout_secs, llm.max_retries, llm.retry_base_ms),
        (60, 5, 200)
    );
    // The key is never written back out.
    let out = serde_json::to_value(&llm).unwrap();
    assert!(out.get("api_key").is_none(), "{out}");
    assert_eq!(out["provider"], "openai");

    let minimal: ConfigFile =
        toml::from_str("[llm]\nprovider = \"anthropic\"\nmodel = \"claude-x\"").unwrap();
    assert_eq!(minimal.llm.provider, Provider::Anthropic);
    assert_eq!(minimal.llm.base_url, None);
}

#[test]
fn toml_rejects_unknown_provider_and_fields() {
    let bad_provider = toml::from_str::<ConfigFile>("[llm]\nprovider = \"gemini\"\nmodel = \"m\"");
    assert!(bad_provider.is_err());
    let typo = toml::from_str::<ConfigFile>("[llm]\nprovider = \"openai\"\nmodle = \"m\"");
    assert!(typo.is_err());
    let typo = toml::from_str::<ConfigFile>(
        "[llm]\nprovider = \"openai\"\nmodel = \"m\"\napi-key = \"k\"",
    );
    assert!(typo.err().unwrap().to_string().contains("api-key"));
}
