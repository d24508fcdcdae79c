//! Anthropic's Messages API: `POST {base_url}/v1/messages`.

use memloop_core::{ChatMessage, ChatRequest, ChatResponse, Error, Llm, Result};
use memloop_http::{is_host, JsonClient};
use serde::{Deserialize, Serialize};

use crate::LlmConfig;

pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

pub struct AnthropicLlm {
    model: String,
    url: String,
    api_key: Option<String>,
    client: JsonClient,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    // The API refuses an empty system text; leaving it out means "none".
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Deserialize)]
struct Reply {
    content: Vec<Block>,
    model: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
}

impl AnthropicLlm {
    /// The key is `api_key`, else ANTHROPIC_API_KEY; it may be absent only for
    /// a base URL other than Anthropic's own (a local gateway or stub).
    pub fn new(cfg: &LlmConfig) -> Result<AnthropicLlm> {
        let client = cfg.client()?;
        let base = cfg.base_url.as_deref().unwrap_or(ANTHROPIC_BASE_URL);
        let api_key = cfg
            .api_key
            .clone()
            .or_else(|| std::env::var("ANTHROPIC_API_KEY").ok())
            .filter(|k| !k.trim().is_empty());
        if api_key.is_none() && is_host(base, "api.anthropic.com") {
            return Err(Error::invalid(
                "no Anthropic API key: set ANTHROPIC_API_KEY (or api_key in [llm])",
            ));
        }
        Ok(AnthropicLlm {
            model: cfg.model.trim().to_string(),
            url: format!("{}/v1/messages", base.trim_end_matches('/')),
            api_key,
            client,
        })
    }
}

fn advice(status: u16) -> &'static str {
    match status {
        401 => "check ANTHROPIC_API_KEY (or api_key in [llm])",
        403 => "the key is not allowed this model or feature: check its permissions",
        404 => "check the model id and base_url (without /v1: it is added)",
        413 => "the request is too large: send fewer or shorter messages",
        _ => "check the model id, max_tokens and the messages",
    }
}

impl Llm for AnthropicLlm {
    fn model_id(&self) -> String {
        format!("anthropic:{}", self.model)
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let body = Body {
            model: &self.model,
            max_tokens: request.max_tokens,
            system: &request.system,
            messages: &request.messages,
            temperature: request.temperature,
        };
        let mut headers = vec![("anthropic-version", API_VERSION)];
        if let Some(key) = &self.api_key {
            headers.push(("x-api-key", key));
        }
        let reply = self.client.post_json(&self.url, &headers, &body, advice)?;
        let parsed: Reply = serde_json::from_value(reply.body).map_err(|e| {
            Error::Remote(format!(
                "{} sent a malformed Messages reply ({e}): expected content[] and usage",
                self.url
            ))
        })?;
        let text: String = parsed
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .map(|b| b.text.as_str())
            .collect();
        let mut out = ChatResponse::new(text, parsed.model.unwrap_or_else(|| self.model.clone()));
        out.input_tokens = parsed.usage.as_ref().and_then(|u| u.input_tokens);
        out.output_tokens = parsed.usage.as_ref().and_then(|u| u.output_tokens);
        out.attempts = reply.attempts;
        Ok(out)
    }
}
