//! What a backend checks before it writes or searches, the same for every
//! backend: bad input is refused with the same message whatever the store.

use memloop_core::text::validate_text;
use memloop_core::{check_time, EmbedderInfo, Error, NewMemory, Result};
use serde_json::Value;

use crate::{MemoryUpdate, SearchQuery, MAX_LIMIT};

/// A vector of the store's embedder: the same number of dimensions.
pub fn check_vector(embedder: &EmbedderInfo, v: &[f32]) -> Result<()> {
    if v.len() != embedder.dimensions {
        return Err(Error::invalid(format!(
            "vector has {} dimensions, the store holds {}",
            v.len(),
            embedder.dimensions
        )));
    }
    Ok(())
}

/// The pieces of a long text: each a vector of the store's width.
pub fn check_pieces(embedder: &EmbedderInfo, pieces: &[Vec<f32>]) -> Result<()> {
    use memloop_core::MAX_PIECES;
    if pieces.len() > MAX_PIECES {
        return Err(Error::invalid(format!(
            "a memory has {} piece vectors, at most {MAX_PIECES} are kept: embed fewer pieces of it",
            pieces.len()
        )));
    }
    pieces.iter().try_for_each(|v| check_vector(embedder, v))
}

fn check_metadata(v: &Value) -> Result<()> {
    if !v.is_object() {
        return Err(Error::invalid(
            "metadata must be a JSON object, e.g. {\"topic\": \"food\"}",
        ));
    }
    Ok(())
}

/// A memory to store with its vector: text, metadata, times, importance.
pub fn check_new(embedder: &EmbedderInfo, m: &NewMemory, v: &[f32]) -> Result<()> {
    validate_text(&m.text)?;
    check_metadata(&m.metadata)?;
    m.validate_times()?;
    check_vector(embedder, v)?;
    check_pieces(embedder, &m.pieces)?;
    if let Some(i) = m.importance {
        if !(0.0..=1.0).contains(&i) {
            return Err(Error::invalid("importance must be between 0 and 1"));
        }
    }
    Ok(())
}

impl MemoryUpdate {
    /// The parts of the change that are given: text and vector, metadata, expiry.
    pub fn check(&self, embedder: &EmbedderInfo) -> Result<()> {
        if let Some((text, v)) = &self.text {
            validate_text(text)?;
            check_vector(embedder, v)?;
            check_pieces(embedder, &self.pieces)?;
        }
        if let Some(m) = &self.metadata {
            check_metadata(m)?;
        }
        if let Some(Some(t)) = self.expires_at {
            check_time("expires_at", t)?;
        }
        Ok(())
    }
}

/// `n` when it is a count of results one call may ask for (1..=MAX_LIMIT);
/// otherwise an error naming the argument (`name`) and what it got. REST,
/// MCP and the Python package check their `top_k`s and limits with it.
pub fn check_limit(name: &str, n: usize) -> Result<usize> {
    if n == 0 || n > MAX_LIMIT {
        return Err(Error::invalid(format!(
            "{name} must be between 1 and {MAX_LIMIT} (got {n})"
        )));
    }
    Ok(n)
}

impl SearchQuery {
    /// Weights non-negative and not both zero, `top_k` in 1..=MAX_LIMIT.
    pub fn check(&self) -> Result<()> {
        if !(self.vector_weight >= 0.0
            && self.keyword_weight >= 0.0
            && self.vector_weight + self.keyword_weight > 0.0)
        {
            return Err(Error::invalid(
                "search weights must be non-negative and not both zero",
            ));
        }
        check_limit("top_k", self.top_k)?;
        if let Some(t) = &self.time {
            t.check()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_count_is_checked_and_a_refusal_names_the_argument_and_value() {
        assert_eq!(check_limit("top_k", 1).unwrap(), 1);
        assert_eq!(check_limit("top_k", MAX_LIMIT).unwrap(), MAX_LIMIT);
        assert!(check_limit("top_k", 1001).is_err());
        assert!(check_limit("top_k", 0).is_err());
        let e = check_limit("page_size", 5000).unwrap_err().to_string();
        assert!(
            e.contains("page_size must be between 1 and 1000 (got 5000)"),
            "{e}"
        );
    }
}
