use crate::Result;

/// The identity of an embedding model as recorded in a store: vectors of two
/// different models are not comparable, so a store refuses a mismatch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmbedderInfo {
    pub model_id: String,
    pub dimensions: usize,
}

impl std::fmt::Display for EmbedderInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} dimensions)", self.model_id, self.dimensions)
    }
}

/// Turns texts into L2-normalised vectors. The batch method is the required
/// one: every implementation is faster per text in batches.
pub trait Embedder: Send + Sync {
    fn info(&self) -> EmbedderInfo;

    /// One vector per input text, in order, each of `info().dimensions` floats, unit length.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// For each text, vectors of what `embed_batch` does not read of it: a
    /// model that reads a bounded window (all-MiniLM-L6-v2: 256 tokens)
    /// embeds the rest of a longer text in overlapping windows, so a
    /// memory is found by what its end says too. Empty for a text read
    /// whole, and by default (an embedder that reads any length).
    fn embed_pieces(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        Ok(vec![Vec::new(); texts.len()])
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        self.embed_batch(&[text])?
            .pop()
            .ok_or_else(|| crate::Error::Embedding("the embedder returned no vector".into()))
    }

    /// Vectors of search queries. A model trained with task prefixes
    /// (nomic-embed-text: `search_query: ` against `search_document: `)
    /// embeds what is searched for differently from what is stored; by
    /// default the same as `embed_batch`.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_batch(texts)
    }

    /// The vector of one search query (see `embed_queries`).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.embed_queries(&[text])?
            .pop()
            .ok_or_else(|| crate::Error::Embedding("the embedder returned no vector".into()))
    }
}
