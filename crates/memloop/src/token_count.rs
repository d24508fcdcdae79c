//! Token counting with a real BPE tokenizer, so budgets match what a
//! provider bills. The tables load once per process, on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use memloop_core::{Error, Result};
use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// Which BPE encoding counts tokens. `o200k` is GPT-4o's and the default;
/// for Claude models it is a close estimate (their tokenizer is not public).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    #[default]
    O200k,
    Cl100k,
}

impl Encoding {
    pub fn parse(s: &str) -> Result<Encoding> {
        match s {
            "o200k" | "o200k_base" => Ok(Encoding::O200k),
            "cl100k" | "cl100k_base" => Ok(Encoding::Cl100k),
            _ => Err(Error::invalid(format!(
                "unknown token encoding {s:?}: use o200k or cl100k"
            ))),
        }
    }
}

/// Counts tokens. Clones share the loaded tables and a cache of counts: the
/// loop counts the same turns, memories and system prompt turn after turn,
/// and BPE with its pre-tokenizing regex costs ~50 µs a sentence.
#[derive(Clone)]
pub struct TokenCounter {
    bpe: Arc<CoreBPE>,
    encoding: Encoding,
    cache: Arc<Mutex<HashMap<String, usize>>>,
}

/// Cached counts kept at most; past it the cache starts over (cheap, and
/// the working set of one conversation is far smaller).
const CACHE_ENTRIES: usize = 50_000;

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenCounter({:?})", self.encoding)
    }
}

type Loaded = std::result::Result<Arc<CoreBPE>, String>;

fn load(encoding: Encoding) -> Loaded {
    let built = match encoding {
        Encoding::O200k => tiktoken_rs::o200k_base(),
        Encoding::Cl100k => tiktoken_rs::cl100k_base(),
    };
    built.map(Arc::new).map_err(|e| e.to_string())
}

impl TokenCounter {
    pub fn new(encoding: Encoding) -> Result<TokenCounter> {
        static O200K: OnceLock<Loaded> = OnceLock::new();
        static CL100K: OnceLock<Loaded> = OnceLock::new();
        let cell = match encoding {
            Encoding::O200k => &O200K,
            Encoding::Cl100k => &CL100K,
        };
        let bpe = cell.get_or_init(|| load(encoding)).clone().map_err(|e| {
            Error::Internal(format!("token tables for {encoding:?} failed to load: {e}"))
        })?;
        Ok(TokenCounter {
            bpe,
            encoding,
            cache: Arc::default(),
        })
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens of `text` as plain text (special-token markers count as text).
    pub fn count(&self, text: &str) -> usize {
        if let Some(&n) = self.lock().get(text) {
            return n;
        }
        let n = self.bpe.encode_ordinary(text).len();
        let mut cache = self.lock();
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(text.to_string(), n);
        n
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_published_encodings() {
        let o = TokenCounter::new(Encoding::O200k).unwrap();
        let c = TokenCounter::new(Encoding::Cl100k).unwrap();
        assert_eq!(o.count(""), 0);
        assert_eq!(c.count("hello world"), 2);
        assert_eq!(o.count("hello world"), 2);
        // A long word splits into several tokens; the count is not words.
        assert!(o.count("antidisestablishmentarianism") > 1);
        assert!(Encoding::parse("gpt2").is_err());
        // A cached count is the same count.
        assert_eq!(o.count("hello world"), 2);
    }
}
