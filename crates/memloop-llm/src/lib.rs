//! Chat providers for memloop, behind [`memloop_core::Llm`]: Anthropic's
//! Messages API and OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM,
//! llama.cpp). Blocking HTTP with timeouts; 429, 5xx and network failures are
//! retried with exponential backoff (honouring `retry-after`), other 4xx are
//! returned at once as [`memloop_core::Error::RemoteRejected`] saying what to fix.
//!
//! ```no_run
//! use memloop_core::{ChatMessage, ChatRequest};
//! use memloop_llm::{LlmConfig, Provider};
//!
//! let mut cfg = LlmConfig::new(Provider::OpenAi, "llama3.1:8b");
//! cfg.base_url = Some("http://localhost:11434/v1".into()); // Ollama: no key needed
//! let llm = cfg.build()?;
//! let request = ChatRequest::new(
//!     "Extract the user's facts as a JSON object.",
//!     vec![ChatMessage::new("user", "I'm vegetarian and allergic to peanuts")],
//! )
//! .json();
//! let reply = llm.chat(&request)?;
//! println!("{} ({:?} tokens out)", reply.text, reply.output_tokens);
//! # Ok::<(), memloop_core::Error>(())
//! ```

mod anthropic;
mod config;
mod openai;

pub use anthropic::{AnthropicLlm, ANTHROPIC_BASE_URL};
pub use config::{LlmConfig, Provider};
pub use openai::{OpenAiLlm, OPENAI_BASE_URL};

impl LlmConfig {
    /// The configured provider's client. Here, beside the modules it
    /// chooses between, so that the providers read the config and the
    /// config names no provider.
    pub fn build(&self) -> memloop_core::Result<Box<dyn memloop_core::Llm>> {
        Ok(match self.provider {
            Provider::Anthropic => Box::new(AnthropicLlm::new(self)?),
            Provider::OpenAi => Box::new(OpenAiLlm::new(self)?),
        })
    }
}
