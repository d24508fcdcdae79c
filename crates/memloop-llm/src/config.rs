//! `[llm]` in the TOML configuration: which provider, which pinned model,
//! where, and how patiently.

use std::fmt;
use std::time::Duration;

use memloop_core::{Error, Result};
use memloop_http::JsonClient;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI Chat Completions, or any server speaking it (Ollama, vLLM, llama.cpp).
    OpenAi,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }
}

/// ```toml
/// [llm]
/// provider = "anthropic"          # or "openai"
/// model = "claude-sonnet-4-5-20250929"
/// # base_url = "http://localhost:11434/v1"   # openai-compatible servers
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LlmConfig {
    pub provider: Provider,
    /// Pinned model id, e.g. `claude-sonnet-4-5-20250929`, `gpt-4o-mini-2024-07-18`, `llama3.1:8b`.
    pub model: String,
    /// Anthropic: without `/v1` (default `https://api.anthropic.com`).
    /// OpenAI-compatible: with it (default `https://api.openai.com/v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Falls back to ANTHROPIC_API_KEY, or OPENAI_API_KEY for api.openai.com.
    /// Never written back out, so a saved config carries no secret.
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Retries after the first attempt, for 429, 5xx and network failures.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First backoff; each retry doubles it (`retry-after` wins when sent).
    #[serde(default = "default_retry_base")]
    pub retry_base_ms: u64,
}

fn default_timeout() -> u64 {
    60
}
fn default_retries() -> u32 {
    3
}
fn default_retry_base() -> u64 {
    200
}

impl LlmConfig {
    pub fn new(provider: Provider, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            provider,
            model: model.into(),
            base_url: None,
            api_key: None,
            timeout_secs: default_timeout(),
            max_retries: default_retries(),
            retry_base_ms: default_retry_base(),
        }
    }

    /// Reads MEMLOOP_LLM_PROVIDER, MEMLOOP_LLM_MODEL and MEMLOOP_LLM_BASE_URL.
    /// `Ok(None)` when no provider is set; an error (not `None`) for a
    /// misspelt provider or a missing model, so a typo is not silently ignored.
    pub fn from_env() -> Result<Option<LlmConfig>> {
        from_lookup(|name| std::env::var(name).ok())
    }

    /// The checks every provider shares, then its HTTP client.
    pub(crate) fn client(&self) -> Result<JsonClient> {
        if self.model.trim().is_empty() {
            return Err(Error::invalid(format!(
                "[llm] model is empty: set a pinned {} model id (or MEMLOOP_LLM_MODEL)",
                self.provider.name()
            )));
        }
        if self.timeout_secs == 0 {
            return Err(Error::invalid("[llm] timeout_secs must be at least 1"));
        }
        Ok(JsonClient::new(
            Duration::from_secs(self.timeout_secs),
            self.max_retries,
            Duration::from_millis(self.retry_base_ms),
        ))
    }
}

fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Option<LlmConfig>> {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let Some(provider) = set("MEMLOOP_LLM_PROVIDER") else {
        return Ok(None);
    };
    let provider = match provider.trim().to_ascii_lowercase().as_str() {
        "anthropic" => Provider::Anthropic,
        "openai" => Provider::OpenAi,
        other => {
            return Err(Error::invalid(format!(
                "MEMLOOP_LLM_PROVIDER={other} is not a provider: use anthropic or openai"
            )))
        }
    };
    let model = set("MEMLOOP_LLM_MODEL").ok_or_else(|| {
        Error::invalid(
            "MEMLOOP_LLM_PROVIDER is set but MEMLOOP_LLM_MODEL is not: set a pinned model id",
        )
    })?;
    let mut cfg = LlmConfig::new(provider, model.trim());
    cfg.base_url = set("MEMLOOP_LLM_BASE_URL");
    Ok(Some(cfg))
}

// By hand, so the key never reaches a log line.
impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .field("retry_base_ms", &self.retry_base_ms)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn from_env_unset_is_none() {
        assert!(from_lookup(env(&[])).unwrap().is_none());
        assert!(from_lookup(env(&[("MEMLOOP_LLM_MODEL", "m")]))
            .unwrap()
            .is_none());
    }

    #[test]
    fn from_env_reads_all_three() {
        let cfg = from_lookup(env(&[
            ("MEMLOOP_LLM_PROVIDER", "OpenAI"),
            ("MEMLOOP_LLM_MODEL", "llama3.1:8b"),
            ("MEMLOOP_LLM_BASE_URL", "http://localhost:11434/v1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(cfg.provider, Provider::OpenAi);
        assert_eq!(cfg.model, "llama3.1:8b");
        assert_eq!(cfg.base_url.as_deref(), Some("http://localhost:11434/v1"));
        assert_eq!(
            (cfg.timeout_secs, cfg.max_retries, cfg.retry_base_ms),
            (60, 3, 200)
        );
    }

    #[test]
    fn from_env_rejects_typos_and_missing_model() {
        let err = from_lookup(env(&[
            ("MEMLOOP_LLM_PROVIDER", "antropic"),
            ("MEMLOOP_LLM_MODEL", "m"),
        ]));
        assert!(err.unwrap_err().to_string().contains("antropic"));
        let err = from_lookup(env(&[("MEMLOOP_LLM_PROVIDER", "anthropic")]));
        assert!(err.unwrap_err().to_string().contains("MEMLOOP_LLM_MODEL"));
    }

    #[test]
    fn debug_hides_the_key() {
        let mut cfg = LlmConfig::new(Provider::Anthropic, "m");
        cfg.api_key = Some("sk-secret".into());
        assert!(!format!("{cfg:?}").contains("sk-secret"));
    }
}
