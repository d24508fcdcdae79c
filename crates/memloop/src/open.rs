//! The one place the parts are put together: a [`MemoryLoop`] from its
//! parts (`new`, the offline rules writer by default) or from a [`Config`]
//! (`open`: the store, the short-term backend, the LLM and the write
//! pipeline it names). The CLI, the MCP server and the REST server all open
//! through here, so they run the same loop with the same gate and writer.
//! The loop itself (`turn/`) names neither the config nor the pipeline:
//! it is handed its writer.

use std::sync::Arc;

use memloop_core::short_term::ShortTermStore;
use memloop_core::{Llm, Result};

use crate::config::{Config, LoopConfig};
use crate::pipeline::WritePipeline;
use crate::token_count::TokenCounter;
use crate::{Memory, MemoryLoop};

impl MemoryLoop {
    /// A loop over `memory` and `short_term`, offline (no LLM), kept turns
    /// written by the rule-based [`WritePipeline`].
    pub fn new(
        memory: Arc<Memory>,
        short_term: Arc<dyn ShortTermStore>,
        cfg: LoopConfig,
    ) -> Result<MemoryLoop> {
        cfg.shares.validate()?;
        Ok(MemoryLoop {
            memory,
            short_term,
            llm: None,
            writer: Arc::new(WritePipeline::new(None)),
            custom_writer: false,
            tokens: TokenCounter::new(cfg.encoding)?,
            cfg,
        })
    }

    /// The loop as configured: the store in `cfg.data_dir`, the configured
    /// short-term backend and LLM (none: offline), and the write pipeline.
    /// An unreachable Redis does not stop it opening: turns fail naming
    /// Redis until it is back (`ShortTermConfig::open`).
    pub fn open(cfg: &Config) -> Result<MemoryLoop> {
        cfg.short_term.validate_for(&cfg.turn)?;
        let memory = Arc::new(Memory::open_with(cfg)?);
        let mut lp = MemoryLoop::new(memory, cfg.short_term.open()?, cfg.turn.clone())?;
        if let Some(llm) = &cfg.llm {
            lp = lp.with_llm(Arc::from(llm.build()?));
        }
        Ok(lp)
    }

    /// Replies come from `llm`; so do extraction and reconciliation, unless
    /// a writer of your own was set.
    pub fn with_llm(mut self, llm: Arc<dyn Llm>) -> Self {
        if !self.custom_writer {
            self.writer = Arc::new(WritePipeline::new(Some(llm.clone())));
        }
        self.llm = Some(llm);
        self
    }
}
