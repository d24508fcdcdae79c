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

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        self.embed_batch(&[text])?
            .pop()
            .ok_or_else(|| crate::Error::Embedding("the embedder returned no vector".into()))
    }
}
