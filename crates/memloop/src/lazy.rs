//! An embedder loaded on first use: reading, listing and deleting memories
//! never pay for (or fail on) loading model weights.

use std::sync::{Arc, Mutex, OnceLock};

use memloop_core::{Embedder, EmbedderInfo, Result};

pub struct LazyEmbedder {
    info: EmbedderInfo,
    load: Box<dyn Fn() -> Result<Arc<dyn Embedder>> + Send + Sync>,
    loaded: OnceLock<Arc<dyn Embedder>>,
    loading: Mutex<()>,
}

impl LazyEmbedder {
    pub fn new(
        info: EmbedderInfo,
        load: Box<dyn Fn() -> Result<Arc<dyn Embedder>> + Send + Sync>,
    ) -> Self {
        LazyEmbedder {
            info,
            load,
            loaded: OnceLock::new(),
            loading: Mutex::new(()),
        }
    }

    fn get(&self) -> Result<&Arc<dyn Embedder>> {
        if let Some(e) = self.loaded.get() {
            return Ok(e);
        }
        let _guard = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = self.loaded.get() {
            return Ok(e);
        }
        let e = (self.load)()?;
        if e.info() != self.info {
            return Err(memloop_core::Error::Embedding(format!(
                "the loaded model is {}, expected {}",
                e.info(),
                self.info
            )));
        }
        Ok(self.loaded.get_or_init(|| e))
    }
}

impl Embedder for LazyEmbedder {
    fn info(&self) -> EmbedderInfo {
        self.info.clone()
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.get()?.embed_batch(texts)
    }

    fn embed_pieces(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.get()?.embed_pieces(texts)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.get()?.embed_queries(texts)
    }
}
