//! OpenAI Chat Completions, `POST {base_url}/chat/completions`, as spoken by
//! OpenAI, Ollama, vLLM and llama.cpp's server.

use memloop_core::{ChatRequest, ChatResponse, Error, Llm, Result};
use memloop_http::{is_host, JsonClient};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::LlmConfig;

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

pub struct OpenAiLlm {
    model: String,
    url: String,
    api_key: Option<String>,
    client: JsonClient,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
}

#[derive(Deserialize)]
struct Reply {
    choices: Vec<Choice>,
    model: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
}

#[derive(Deserialize)]
struct ReplyMessage {
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
}

impl OpenAiLlm {
    /// The key is `api_key`; OPENAI_API_KEY is read only when the base URL is
    /// OpenAI's own, so that key is never sent to another server. Servers
    /// such as Ollama need no key, and then no `Authorization` is sent.
    pub fn new(cfg: &LlmConfig) -> Result<OpenAiLlm> {
        let client = cfg.client()?;
        let base = cfg.base_url.as_deref().unwrap_or(OPENAI_BASE_URL);
        let hosted = is_host(base, "api.openai.com");
        let api_key = cfg
            .api_key
            .clone()
            .or_else(|| {
                hosted
                    .then(|| std::env::var("OPENAI_API_KEY").ok())
                    .flatten()
            })
            .filter(|k| !k.trim().is_empty());
        if api_key.is_none() && hosted {
            return Err(Error::invalid(
                "no OpenAI API key: set OPENAI_API_KEY (or api_key in [llm])",
            ));
        }
        Ok(OpenAiLlm {
            model: cfg.model.trim().to_string(),
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            api_key,
            client,
        })
    }
}

fn advice(status: u16) -> &'static str {
    match status {
        401 => "check OPENAI_API_KEY (or api_key in [llm])",
        403 => "the key is not allowed this model or feature: check its permissions",
        404 => "check the model id and base_url (it should end in /v1)",
        413 => "the request is too large: send fewer or shorter messages",
        _ => "check the model id, max_tokens and the messages",
    }
}

impl Llm for OpenAiLlm {
    fn model_id(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let system = (!request.system.is_empty()).then_some(Message {
            role: "system",
            content: &request.system,
        });
        let turns = request.messages.iter().map(|m| Message {
            role: &m.role,
            content: &m.content,
        });
        let body = Body {
            model: &self.model,
            messages: system.into_iter().chain(turns).collect(),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            response_format: request.json.then(|| json!({"type": "json_object"})),
        };
        let auth = self.api_key.as_ref().map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let reply = self.client.post_json(&self.url, &headers, &body, advice)?;
        let malformed = |why: String| {
            Error::Remote(format!(
                "{} sent a malformed chat completion: {why}",
                self.url
            ))
        };
        let parsed: Reply = serde_json::from_value(reply.body)
            .map_err(|e| malformed(format!("{e}; expected choices[] and usage")))?;
        let text = parsed
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| malformed("choices[0].message.content is missing or null".into()))?;
        let mut out = ChatResponse::new(text, parsed.model.unwrap_or_else(|| self.model.clone()));
        out.input_tokens = parsed.usage.as_ref().and_then(|u| u.prompt_tokens);
        out.output_tokens = parsed.usage.as_ref().and_then(|u| u.completion_tokens);
        out.attempts = reply.attempts;
        Ok(out)
    }
}
