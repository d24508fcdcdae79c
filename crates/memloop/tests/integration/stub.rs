//! A loopback LLM speaking OpenAI's Chat Completions wire format, answering
//! from a script and recording every request body.

use std::sync::{Arc, Mutex};

pub struct LlmStub {
    pub url: String,
    pub requests: Arc<Mutex<Vec<serde_json::Value>>>,
    _server: Arc<tiny_http::Server>,
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
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
    let url = format!("http://{}/v1", server.server_addr().to_ip().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (srv, reqs) = (server.clone(), requests.clone());
    std::thread::spawn(move || {
        for (n, mut rq) in srv.incoming_requests().enumerate() {
            let mut body = String::new();
            rq.as_reader().read_to_string(&mut body).unwrap();
            let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let (mut status, text) = answer(n, &body);
            reqs.lock().unwrap().push(body);
            // 599: answer 200, but only after the client's 1 s timeout.
            if status == 599 {
                std::thread::sleep(std::time::Duration::from_millis(1500));
                status = 200;
            }
            let json = if status == 200 {
                serde_json::json!({
                    "model": "stub-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 7},
                })
            } else {
                serde_json::json!({"error": {"message": text}})
            };
            let resp = tiny_http::Response::from_string(json.to_string())
                .with_status_code(status)
                .with_header(
                    "Content-Type: application/json"
                        .parse::<tiny_http::Header>()
                        .unwrap(),
                );
            let _ = rq.respond(resp);
        }
    });
    LlmStub {
        url,
        requests,
        _server: server,
    }
}

impl LlmStub {
    pub fn llm(&self) -> Arc<dyn memloop::llm::Llm> {
        let mut cfg = memloop::LlmConfig::new(memloop::Provider::OpenAi, "stub-model");
        cfg.base_url = Some(self.url.clone());
        cfg.retry_base_ms = 5;
        cfg.timeout_secs = 1;
        cfg.max_retries = 1;
        Arc::from(cfg.build().unwrap())
    }

    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.requests.lock().unwrap().clone()
    }
}
