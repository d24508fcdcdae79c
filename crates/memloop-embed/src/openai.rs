//! A client for OpenAI-compatible embedding endpoints (`POST {base}/embeddings`):
//! OpenAI, Ollama, vLLM, Text Embeddings Inference.

use std::time::Duration;

use memloop_core::{Embedder, EmbedderInfo, Error, Result};
use memloop_http::JsonClient;
use serde::Deserialize;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct OpenAiEmbedderConfig {
    /// Base URL including the version path, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    pub model: String,
    pub dimensions: usize,
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// Texts per request; larger batches are split.
    #[serde(default = "default_batch")]
    pub batch_size: usize,
}

fn default_timeout() -> u64 {
    30
}
fn default_retries() -> u32 {
    3
}
fn default_batch() -> usize {
    128
}

pub struct OpenAiEmbedder {
    cfg: OpenAiEmbedderConfig,
    client: JsonClient,
}

/// The first backoff, doubled on each retry. Fixed: `[embedder]` has no
/// setting for it, and a server that wants longer says so in `retry-after`.
const RETRY_BASE: Duration = Duration::from_millis(200);

/// What to fix when the endpoint refuses a request (a 4xx other than 429).
fn advice(status: u16) -> &'static str {
    match status {
        401 => "check api_key in [embedder] (or OPENAI_API_KEY for api.openai.com)",
        403 => "the key is not allowed this model: check its permissions",
        404 => "check the model name and base_url (it should end in /v1)",
        413 => "the batch is too large: lower batch_size in [embedder]",
        _ => "check the model name in [embedder] and the texts (one may exceed the model's input limit)",
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    pub fn new(mut cfg: OpenAiEmbedderConfig) -> Result<Self> {
        if cfg.model.trim().is_empty() || cfg.dimensions == 0 {
            return Err(Error::invalid(
                "the remote embedder needs a model name and its dimensions",
            ));
        }
        if cfg.timeout_secs == 0 {
            // Zero would time every request out at once, then retry.
            return Err(Error::invalid("[embedder] timeout_secs must be at least 1"));
        }
        // OPENAI_API_KEY is OpenAI's secret: read it only for OpenAI's own
        // host, never to send it to whatever server `base_url` names
        // (Ollama, vLLM, a proxy), as the chat providers do.
        if cfg.api_key.is_none() && memloop_http::is_host(&cfg.base_url, "api.openai.com") {
            cfg.api_key = std::env::var("OPENAI_API_KEY").ok();
        }
        let client = JsonClient::new(
            Duration::from_secs(cfg.timeout_secs),
            cfg.max_retries,
            RETRY_BASE,
        );
        Ok(OpenAiEmbedder { cfg, client })
    }

    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let url = format!("{}/embeddings", self.cfg.base_url.trim_end_matches('/'));
        let body = serde_json::json!({"model": self.cfg.model, "input": texts});
        let auth = self.cfg.api_key.as_ref().map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let reply = self.client.post_json(&url, &headers, &body, advice)?;
        self.parse(reply.body, texts.len())
    }

    fn parse(&self, body: serde_json::Value, expected: usize) -> Result<Vec<Vec<f32>>> {
        let parsed: Response = serde_json::from_value(body).map_err(|e| {
            Error::Remote(format!("embedding response is not the expected JSON: {e}"))
        })?;
        let mut out = vec![Vec::new(); expected];
        for item in parsed.data {
            if item.embedding.len() != self.cfg.dimensions {
                // A configuration mistake, not a passing fault: say what to set.
                return Err(Error::invalid(format!(
                    "the endpoint returns {}-dimensional embeddings for model {}, but dimensions = {} is configured: set dimensions = {}",
                    item.embedding.len(),
                    self.cfg.model,
                    self.cfg.dimensions,
                    item.embedding.len()
                )));
            }
            if item.index >= expected || !out[item.index].is_empty() {
                return Err(Error::Embedding(format!(
                    "embedding response has a bad or repeated index {} for {expected} inputs",
                    item.index
                )));
            }
            out[item.index] = normalized(item.embedding);
        }
        if out.iter().any(Vec::is_empty) {
            return Err(Error::Embedding(
                "embedding response is missing items".into(),
            ));
        }
        Ok(out)
    }
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

impl Embedder for OpenAiEmbedder {
    fn info(&self) -> EmbedderInfo {
        EmbedderInfo {
            model_id: format!("openai-compatible:{}", self.cfg.model),
            dimensions: self.cfg.dimensions,
        }
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.cfg.batch_size.max(1)) {
            out.extend(self.request(chunk)?);
        }
        Ok(out)
    }
}
