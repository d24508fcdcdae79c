//! A loopback LLM speaking OpenAI's Chat Completions wire format, answering
//! from a script and recording every request body.

use std::sync::Arc;
use std::time::Duration;

use memloop_teststub::{Response, StubServer};

pub struct LlmStub {
    server: StubServer,
}

/// Each answer is (status, reply text); the last one repeats. Status 599
/// answers too late (after the client's timeout).
pub fn start(answers: Vec<(u16, String)>) -> LlmStub {
    start_with(move |n, _| answers[n.min(answers.len() - 1)].clone())
}

/// Answers computed from the call number (0-based) and the request body.
pub fn start_with(
    answer: impl Fn(usize, &serde_json::Value) -> (u16, String) + Send + 'static,
) -> LlmStub {
    let server = StubServer::start(move |n, req| {
        let (status, text) = answer(n, &req.body);
        // 599: answer 200, but only after the client's 1 s timeout.
        let (status, delay) = match status {
            599 => (200, Duration::from_millis(1500)),
            s => (s, Duration::ZERO),
        };
        let json = if status == 200 {
            serde_json::json!({
                "model": "stub-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7},
            })
        } else {
            serde_json::json!({"error": {"message": text}})
        };
        Response::new(status, json).after(delay)
    });
    LlmStub { server }
}

impl LlmStub {
    pub fn llm(&self) -> Arc<dyn memloop::llm::Llm> {
        Arc::from(self.config().build().unwrap())
    }

    /// The `[llm]` table that points at this stub.
    pub fn config(&self) -> memloop::LlmConfig {
        let mut cfg = memloop::LlmConfig::new(memloop::Provider::OpenAi, "stub-model");
        cfg.base_url = Some(format!("{}/v1", self.server.base_url()));
        cfg.retry_base_ms = 5;
        cfg.timeout_secs = 1;
        cfg.max_retries = 1;
        cfg
    }

    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.server.requests().into_iter().map(|r| r.body).collect()
    }
}
