//! all-MiniLM-L6-v2 in process: the model's own WordPiece tokenizer, then the
//! BERT forward pass of `bert.rs`, mean pooling and L2 normalisation — what
//! sentence-transformers computes, to within float rounding.

mod bert;
mod gemm;

use std::path::{Path, PathBuf};

use memloop_core::{Embedder, EmbedderInfo, Error, Result};
use tokenizers::{Tokenizer, TruncationParams};

use bert::Bert;
pub use gemm::{GemmPath, GEMM_ENV};

pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The model's output width; checked against config.json at load.
pub const DIMENSIONS: usize = 384;
/// The folder name the model is fetched into.
pub const MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2";
/// sentence-transformers' max_seq_length for this model; longer input is truncated.
pub const MAX_TOKENS: usize = 256;
/// Tokens per forward pass: bounds the scratch memory of one batch (~40 MB).
const TOKENS_PER_PASS: usize = 4096;

const REQUIRED_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// Finds the model folder: the given one (config), then `MEMLOOP_MODEL_DIR`,
/// then `models/all-MiniLM-L6-v2` in the current folder or any folder above it
/// (a checkout of the repository), then the user cache (`~/.cache/memloop/models`).
pub fn locate_model_dir(configured: Option<&Path>) -> Result<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = configured {
        candidates.push(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("MEMLOOP_MODEL_DIR") {
        candidates.push(PathBuf::from(p));
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        roots.extend(exe_dir.ancestors().map(Path::to_path_buf));
    }
    candidates.extend(
        roots
            .into_iter()
            .map(|r| r.join("models").join(MODEL_DIR_NAME)),
    );
    if let Some(cache) = dirs::cache_dir() {
        candidates.push(cache.join("memloop").join("models").join(MODEL_DIR_NAME));
    }
    if let Some(found) = candidates
        .iter()
        .find(|dir| REQUIRED_FILES.iter().all(|f| dir.join(f).is_file()))
    {
        return Ok(found.clone());
    }
    // Report the explicit choices and the usual places, not every ancestor.
    let mut shown: Vec<String> = candidates
        .iter()
        .take(3)
        .map(|p| p.display().to_string())
        .collect();
    if let Some(last) = candidates.last() {
        shown.push(last.display().to_string());
    }
    shown.dedup();
    Err(Error::ModelMissing {
        searched: shown.join(", "),
    })
}

pub struct MiniLmEmbedder {
    tokenizer: Tokenizer,
    model: Bert,
    threads: usize,
    gemm: GemmPath,
}

impl MiniLmEmbedder {
    /// Loads the model from a folder holding model.safetensors, tokenizer.json
    /// and config.json, its products on the fastest kernel this machine runs
    /// or the one `MEMLOOP_GEMM` names (`amx`, `avx512`, `portable`).
    pub fn load(dir: &Path) -> Result<Self> {
        let gemm = GemmPath::from_env().map_err(Error::InvalidInput)?;
        Self::load_with_gemm(dir, gemm)
    }

    /// Loads the model with its products on `gemm` (see [`GemmPath::all_available`]).
    pub fn load_with_gemm(dir: &Path, gemm: GemmPath) -> Result<Self> {
        if !gemm.available() {
            return Err(Error::InvalidInput(format!(
                "the {} matrix kernel does not run on this machine",
                gemm.name()
            )));
        }
        let tok_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tok_path).map_err(|e| Error::ModelInvalid {
            path: tok_path.clone(),
            reason: e.to_string(),
        })?;
        // The shipped tokenizer.json pads every input to 128 tokens and truncates
        // at 128; we pack without padding and truncate where sentence-transformers does.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| Error::ModelInvalid {
                path: tok_path,
                reason: e.to_string(),
            })?;
        let model = Bert::load(dir, gemm)?;
        if model.hidden_size() != DIMENSIONS {
            return Err(Error::ModelInvalid {
                path: dir.to_path_buf(),
                reason: format!(
                    "hidden size {} is not {DIMENSIONS}: not all-MiniLM-L6-v2",
                    model.hidden_size()
                ),
            });
        }
        if model.max_positions() < MAX_TOKENS {
            return Err(Error::ModelInvalid {
                path: dir.to_path_buf(),
                reason: "the model has fewer positions than 256 tokens".into(),
            });
        }
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Ok(MiniLmEmbedder {
            tokenizer,
            model,
            threads,
            gemm,
        })
    }

    /// Finds the model (see [`locate_model_dir`]) and loads it.
    pub fn locate_and_load(configured: Option<&Path>) -> Result<Self> {
        Self::load(&locate_model_dir(configured)?)
    }

    /// The kernel running this model's matrix products.
    pub fn gemm(&self) -> GemmPath {
        self.gemm
    }

    /// Caps the threads one batch uses (default: all cores). A single text always uses one.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Model tokens of a text (WordPiece, with [CLS] and [SEP]; at most 256).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer
            .encode(text, true)
            .map_or(0, |e| e.get_ids().len())
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        texts
            .iter()
            .map(|t| {
                self.tokenizer
                    .encode(*t, true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| Error::Embedding(format!("tokenizer failed: {e}")))
            })
            .collect()
    }

    /// Embeds sequences in passes of at most TOKENS_PER_PASS tokens, each
    /// matrix product on `threads` threads.
    fn embed_sequences(&self, seqs: &[Vec<u32>], threads: usize) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        while start < seqs.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < seqs.len() && (end == start || tokens + seqs[end].len() <= TOKENS_PER_PASS)
            {
                tokens += seqs[end].len();
                end += 1;
            }
            out.extend(self.model.embed(&seqs[start..end], threads)?);
            start = end;
        }
        Ok(out)
    }
}

impl Embedder for MiniLmEmbedder {
    fn info(&self) -> EmbedderInfo {
        EmbedderInfo {
            model_id: MODEL_ID.to_string(),
            dimensions: self.model.hidden_size(),
        }
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let seqs = self.tokenize(texts)?;
        let threads = self.threads.min(seqs.len());
        if threads <= 1 {
            // One input: share each matrix product's columns among the cores instead.
            return self.embed_sequences(&seqs, self.threads);
        }
        // Split into contiguous groups of about equal token counts, one per thread.
        let total: usize = seqs.iter().map(Vec::len).sum();
        let mut bounds = vec![0];
        let mut acc = 0;
        for (i, s) in seqs.iter().enumerate() {
            acc += s.len();
            if acc * threads >= total * bounds.len() && bounds.len() < threads && i + 1 < seqs.len()
            {
                bounds.push(i + 1);
            }
        }
        bounds.push(seqs.len());
        let results: Vec<Result<Vec<Vec<f32>>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = bounds
                .windows(2)
                .map(|w| {
                    let part = &seqs[w[0]..w[1]];
                    scope.spawn(move || self.embed_sequences(part, 1))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("an embedding thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut out = Vec::with_capacity(texts.len());
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}
