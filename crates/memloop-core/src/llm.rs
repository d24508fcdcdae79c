//! The LLM seam: a request struct in, a response struct out, so options can
//! grow without breaking implementors. Providers live in memloop-llm.

use serde::{Deserialize, Serialize};

use crate::Result;

/// One message of a chat: `user` or `assistant` (the system prompt is apart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The system prompt (Anthropic's `system`, OpenAI's first `system` message).
    pub system: String,
    pub messages: Vec<ChatMessage>,
    /// Upper bound on the reply's tokens.
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// Ask for a JSON object as the reply (OpenAI's `response_format`;
    /// Anthropic has no switch, the prompt must say so).
    pub json: bool,
}

impl ChatRequest {
    pub fn new(system: impl Into<String>, messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            system: system.into(),
            messages,
            max_tokens: 1024,
            temperature: None,
            json: false,
        }
    }

    pub fn max_tokens(mut self, max_tokens: u32) -> ChatRequest {
        self.max_tokens = max_tokens;
        self
    }

    pub fn temperature(mut self, temperature: f32) -> ChatRequest {
        self.temperature = Some(temperature);
        self
    }

    pub fn json(mut self) -> ChatRequest {
        self.json = true;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    pub text: String,
    /// The model that answered, as the provider names it.
    pub model: String,
    /// Token counts as the provider reports them (absent if it does not).
    pub input_tokens: Option<u32>,
    pub output_tokens: Option<u32>,
    /// Attempts it took (1 when the first one succeeded).
    pub attempts: u32,
}

impl ChatResponse {
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            model: model.into(),
            input_tokens: None,
            output_tokens: None,
            attempts: 1,
        }
    }
}

/// A chat model. Errors are classed: `Error::Remote` (transient: 429, 5xx,
/// network, timeout, after retries), `Error::RemoteRejected` (4xx: fix the
/// request or the key), `Error::InvalidInput` (bad configuration).
pub trait Llm: Send + Sync {
    /// `provider:model`, as pinned in the configuration.
    fn model_id(&self) -> String;
    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse>;
}
