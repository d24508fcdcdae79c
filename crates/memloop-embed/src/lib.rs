//! Embedding providers: the local all-MiniLM-L6-v2 model, run in process by a
//! pure-Rust BERT forward pass, and a client for OpenAI-compatible `/v1/embeddings`.

pub mod coalesce;
pub mod local;
pub mod openai;

pub use coalesce::Coalescing;
pub use local::{
    kernel_calibration, locate_model, locate_model_dir, Calibration, GemmPath, KernelTiming,
    LocalEmbedder, LocalModel, GEMM_ENV, MODEL_ID, NOMIC_MODEL_ID,
};
pub use openai::{OpenAiEmbedder, OpenAiEmbedderConfig};
