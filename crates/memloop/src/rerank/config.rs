//! The `[rerank]` table: which reranker, where, how deep and how long a
//! search waits for it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use memloop_core::{Error, Result};
use memloop_llm::LlmConfig;
use serde::{Deserialize, Serialize};

use super::{check_top_n, HttpReranker, LlmReranker, RerankStage};

/// Which reranker reorders the fused top N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankKind {
    /// No reranking (the default): the fused order is the answer.
    #[default]
    None,
    /// A cross-encoder the user runs, over HTTP (`url`, `format`).
    Http,
    /// The configured `[llm]`, asked once per search for a listwise order.
    Llm,
}

/// The wire format of an HTTP reranker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankFormat {
    /// Hugging Face text-embeddings-inference: `POST /rerank` with
    /// `{"query", "texts"}`, answered `[{"index", "score"}]`.
    #[default]
    Tei,
    /// Cohere's `POST /v1/rerank` with `{"query", "documents", "top_n"}`,
    /// answered `{"results": [{"index", "relevance_score"}]}`; Jina, vLLM
    /// and llama.cpp's server speak it too.
    Cohere,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankConfig {
    pub kind: RerankKind,
    /// The reranker's address: a base URL (the format's path is added) or
    /// the full endpoint (a path ending in `rerank` is used as given).
    pub url: Option<String>,
    pub format: RerankFormat,
    /// Sent as `model` (Cohere format), for servers that host several.
    pub model: Option<String>,
    /// Sent as a bearer token. Never written back out.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// Fused hits reordered (a search asking for more hits than this
    /// reranks only its first `top_n`).
    pub top_n: usize,
    /// How long a search waits; then the fused order stands. Default 500
    /// ms for `http`, 5000 for `llm` (a chat model's call takes seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl Default for RerankConfig {
    fn default() -> Self {
        RerankConfig {
            kind: RerankKind::None,
            url: None,
            format: RerankFormat::Tei,
            model: None,
            api_key: None,
            top_n: 20,
            timeout_ms: None,
        }
    }
}

// By hand, so the key never reaches a log line.
impl fmt::Debug for RerankConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RerankConfig")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("format", &self.format)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("top_n", &self.top_n)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl RerankConfig {
    /// The timeout in force: the configured one, else the kind's default.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(match self.kind {
            RerankKind::Llm => 5000,
            _ => 500,
        }))
    }

    /// Refuses what could not work, naming the key to fix.
    pub fn validate(&self, llm: Option<&LlmConfig>) -> Result<()> {
        check_top_n(self.top_n, "[rerank] top_n")?;
        if self.timeout_ms == Some(0) {
            return Err(Error::invalid("[rerank] timeout_ms must be at least 1"));
        }
        match self.kind {
            RerankKind::Http if self.url.as_deref().is_none_or(|u| u.trim().is_empty()) => {
                Err(Error::invalid(
                    "[rerank] kind = \"http\" needs url: the address of your reranker \
                     (e.g. http://127.0.0.1:8080 for text-embeddings-inference)",
                ))
            }
            RerankKind::Llm if llm.is_none() => Err(Error::invalid(
                "[rerank] kind = \"llm\" needs an [llm] table (the model that reranks); \
                 set one, or use kind = \"http\" or \"none\"",
            )),
            _ => Ok(()),
        }
    }

    /// The stage this table describes (None for `kind = "none"`); `llm` is
    /// the `[llm]` table, which `kind = "llm"` asks once per search.
    pub fn build(&self, llm: Option<&LlmConfig>) -> Result<Option<RerankStage>> {
        self.validate(llm)?;
        let timeout = self.timeout();
        let reranker: Arc<dyn super::Reranker> = match (self.kind, llm) {
            (RerankKind::None, _) => return Ok(None),
            (RerankKind::Http, _) => Arc::new(HttpReranker::new(self, timeout)?),
            (RerankKind::Llm, Some(llm)) => {
                // One attempt, bounded by the stage's timeout (rounded up to
                // the client's whole seconds): a retry could not finish in time.
                let mut llm = llm.clone();
                llm.max_retries = 0;
                llm.timeout_secs = (timeout.as_millis() as u64).div_ceil(1000).max(1);
                Arc::new(LlmReranker::new(Arc::from(llm.build()?)))
            }
            (RerankKind::Llm, None) => return Ok(None),
        };
        RerankStage::new(reranker, self.top_n, timeout).map(Some)
    }
}
