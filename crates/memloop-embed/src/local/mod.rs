//! A local sentence encoder in process: the model's own WordPiece
//! tokenizer, then the BERT forward pass of `bert.rs`, mean pooling and L2
//! normalisation — what sentence-transformers computes, to within float
//! rounding. all-MiniLM-L6-v2 by default (safetensors); nomic-embed-text-v1.5
//! (GGUF, `nomic.rs`) when the model folder holds its `model.gguf`.

mod bert;
mod gemm;
mod gguf;
mod math;
mod models;
mod nomic;

use std::path::{Path, PathBuf};

use memloop_core::{Embedder, EmbedderInfo, Error, Result, MAX_PIECES};
use tokenizers::{Tokenizer, TruncationParams};

use bert::Bert;
pub use gemm::{Calibration, GemmPath, Timing as KernelTiming, GEMM_ENV};
pub use models::LocalModel;
pub use nomic::MODEL_ID as NOMIC_MODEL_ID;

pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The model's output width; checked against config.json at load.
pub const DIMENSIONS: usize = 384;
/// The folder name the model is fetched into.
pub const MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2";
/// sentence-transformers' max_seq_length for all-MiniLM-L6-v2; longer input
/// is read in pieces.
pub const MAX_TOKENS: usize = 256;
/// Tokens per forward pass: bounds the scratch memory of one pass (~8 MB)
/// and keeps a pass's activations close to the cores. With AMX, batches of
/// 256 texts embedded 17% faster in passes of 1,024 tokens than of 4,096,
/// and 3–7% faster again in passes of 512 than of 1,024 (256: no better);
/// AVX-512 and AVX512-BF16 gained 4–6% from 1,024 to 512, and a 100,000-text
/// import 7–10% (docs/benchmarks.md). Batches of 32 short texts fit one pass.
const TOKENS_PER_PASS: usize = 512;

const REQUIRED_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// Whether `dir` holds nomic-embed-text-v1.5, which is loaded before the
/// files of all-MiniLM-L6-v2 are looked for.
fn holds_nomic(dir: &Path) -> bool {
    LocalModel::held_by(dir) == Some(LocalModel::Nomic)
}

/// Finds the model folder (see [`locate_model`]): the model the given folder
/// holds, else all-MiniLM-L6-v2.
pub fn locate_model_dir(configured: Option<&Path>) -> Result<PathBuf> {
    locate_model(configured, None)
}

/// Finds the folder of `model` (None: whichever model an explicit folder
/// holds, else all-MiniLM-L6-v2): the given folder (config), then
/// `MEMLOOP_MODEL_DIR`, then `models/<its folder>` in the current folder or
/// any folder above it (a checkout of the repository) or beside the binary,
/// then the user cache (`~/.cache/memloop/models/<its folder>`). A
/// configured folder that holds another model than `model` is refused,
/// saying so; `MEMLOOP_MODEL_DIR`, a setting of the whole process, is
/// passed over when it holds another model than the one named.
pub fn locate_model(configured: Option<&Path>, model: Option<LocalModel>) -> Result<PathBuf> {
    // (folder, whether the configuration gave it)
    let explicit: Vec<(PathBuf, bool)> = configured
        .map(|p| (p.to_path_buf(), true))
        .into_iter()
        .chain(std::env::var_os("MEMLOOP_MODEL_DIR").map(|p| (PathBuf::from(p), false)))
        .collect();
    for (dir, from_config) in &explicit {
        match (LocalModel::held_by(dir), model) {
            (Some(held), Some(wanted)) if held != wanted && !from_config => {}
            (Some(held), Some(wanted)) if held != wanted => {
                return Err(Error::invalid(format!(
                    "the model folder {} holds {}, but [embedder] model asks for {}: \
                     point model_dir at a folder holding {}, or drop one of the two",
                    dir.display(),
                    held.id(),
                    wanted.id(),
                    wanted.id()
                )))
            }
            (Some(_), _) => return Ok(dir.clone()),
            (None, _) => {}
        }
    }
    let wanted = model.unwrap_or(LocalModel::Small);
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
    let mut candidates: Vec<PathBuf> = explicit.into_iter().map(|(dir, _)| dir).collect();
    candidates.extend(
        roots
            .into_iter()
            .map(|r| r.join("models").join(wanted.folder())),
    );
    if let Some(cache) = dirs::cache_dir() {
        candidates.push(cache.join("memloop").join("models").join(wanted.folder()));
    }
    if let Some(found) = candidates
        .iter()
        .find(|dir| LocalModel::held_by(dir) == Some(wanted))
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
        model: wanted.id().to_string(),
        searched: shown.join(", "),
        fetch: wanted.fetch_script().to_string(),
    })
}

/// What the model [`locate_model`] finds is, read off its folder without
/// loading it; `model` (all-MiniLM-L6-v2 when None) where none is found
/// (the error comes when it is first used).
pub fn model_info(configured: Option<&Path>, model: Option<LocalModel>) -> EmbedderInfo {
    let found = locate_model(configured, model)
        .ok()
        .and_then(|dir| LocalModel::held_by(&dir));
    let m = found.or(model).unwrap_or(LocalModel::Small);
    EmbedderInfo {
        model_id: m.id().to_string(),
        dimensions: m.dimensions(),
    }
}

/// The kernels timed for the model in `dir` on this machine and the one
/// chosen (measured once per process; see `gemm/calibrate.rs`). Only
/// nomic-embed-text-v1.5 may take the int8 path: it keeps that model within
/// a cosine of 0.9995 of f32, all-MiniLM-L6-v2 only within 0.9968.
pub fn kernel_calibration(dir: &Path) -> Calibration {
    let nomic = holds_nomic(dir);
    let hidden = if nomic { nomic::DIMENSIONS } else { DIMENSIONS };
    gemm::calibrate(nomic, hidden)
}

pub struct LocalEmbedder {
    model_id: &'static str,
    tokenizer: Tokenizer,
    /// The same without truncation, for the windows of long texts.
    untruncated: Tokenizer,
    /// [CLS] and [SEP], which frame each window.
    specials: (u32, u32),
    /// The most tokens one window holds, [CLS], prefix and [SEP] included.
    max_tokens: usize,
    /// Tokens put after [CLS] of what is embedded as a memory, and as a
    /// search query (none for all-MiniLM-L6-v2).
    prefixes: Prefixes,
    model: Bert,
    threads: usize,
    gemm: GemmPath,
}

struct Prefixes {
    document: Vec<u32>,
    query: Vec<u32>,
}

/// What a text is embedded as.
#[derive(Clone, Copy)]
enum Role {
    Document,
    Query,
}

impl LocalEmbedder {
    /// Loads the model from a folder holding model.safetensors, tokenizer.json
    /// and config.json (all-MiniLM-L6-v2) or model.gguf
    /// (nomic-embed-text-v1.5), its products on the kernel that timed fastest
    /// on this machine for that model ([`kernel_calibration`]) or the one
    /// `MEMLOOP_GEMM` names (`amx`, `avx512vnni`, `portable`, …).
    pub fn load(dir: &Path) -> Result<Self> {
        let gemm = match GemmPath::from_env().map_err(Error::InvalidInput)? {
            Some(named) => named,
            None => kernel_calibration(dir).chosen,
        };
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
        if holds_nomic(dir) {
            return Self::load_nomic(dir, gemm);
        }
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&tok_path).map_err(|e| Error::ModelInvalid {
            path: tok_path.clone(),
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
        let setup = Setup {
            model_id: MODEL_ID,
            max_tokens: MAX_TOKENS,
            prefixes: ("", ""),
        };
        Self::assemble(tokenizer, &tok_path, model, setup, gemm)
    }

    /// nomic-embed-text-v1.5 from the folder's `model.gguf`.
    fn load_nomic(dir: &Path, gemm: GemmPath) -> Result<Self> {
        let path = dir.join(nomic::FILE);
        let file = gguf::Gguf::open(&path)?;
        let tokenizer = nomic::tokenizer(&file, &path)?;
        let model = Bert::load_gguf(&file, nomic::MAX_TOKENS, gemm)?;
        let setup = Setup {
            model_id: nomic::MODEL_ID,
            max_tokens: nomic::MAX_TOKENS,
            prefixes: (nomic::DOCUMENT_PREFIX, nomic::QUERY_PREFIX),
        };
        Self::assemble(tokenizer, &path, model, setup, gemm)
    }

    /// The embedder around a loaded model and its tokenizer.
    fn assemble(
        mut tokenizer: Tokenizer,
        tok_path: &Path,
        model: Bert,
        setup: Setup,
        gemm: GemmPath,
    ) -> Result<Self> {
        let invalid = |reason: String| Error::ModelInvalid {
            path: tok_path.to_path_buf(),
            reason,
        };
        // A shipped tokenizer.json may pad every input and truncate it (all-
        // MiniLM-L6-v2's: to 128 tokens); we pack without padding and
        // truncate where the model's window ends.
        tokenizer.with_padding(None);
        let mut untruncated = tokenizer.clone();
        untruncated
            .with_truncation(None)
            .map_err(|e| invalid(e.to_string()))?;
        let special = |t: &str| {
            tokenizer
                .token_to_id(t)
                .ok_or_else(|| invalid(format!("the tokenizer has no {t} token")))
        };
        let specials = (special("[CLS]")?, special("[SEP]")?);
        let prefix = |text: &str| -> Result<Vec<u32>> {
            Ok(untruncated
                .encode(text, false)
                .map_err(|e| invalid(e.to_string()))?
                .get_ids()
                .to_vec())
        };
        let prefixes = Prefixes {
            document: prefix(setup.prefixes.0)?,
            query: prefix(setup.prefixes.1)?,
        };
        let longest = prefixes.document.len().max(prefixes.query.len());
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: setup.max_tokens - longest,
                ..Default::default()
            }))
            .map_err(|e| invalid(e.to_string()))?;
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Ok(LocalEmbedder {
            model_id: setup.model_id,
            tokenizer,
            untruncated,
            specials,
            max_tokens: setup.max_tokens,
            prefixes,
            model,
            threads,
            gemm,
        })
    }

    /// Finds the model (see [`locate_model_dir`]) and loads it.
    pub fn locate_and_load(configured: Option<&Path>) -> Result<Self> {
        Self::load(&locate_model_dir(configured)?)
    }

    /// Finds `model` (see [`locate_model`]) and loads it.
    pub fn locate_and_load_model(
        configured: Option<&Path>,
        model: Option<LocalModel>,
    ) -> Result<Self> {
        Self::load(&locate_model(configured, model)?)
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

    /// Model tokens of a text (WordPiece, with [CLS] and [SEP]; at most
    /// one window's worth, 256 for all-MiniLM-L6-v2).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer
            .encode(text, true)
            .map_or(0, |e| e.get_ids().len())
    }

    /// The model inputs of `texts` as `role`: [CLS], the role's prefix, the
    /// text's first tokens, [SEP].
    fn tokenize(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<u32>>> {
        let prefix = self.prefix(role);
        texts
            .iter()
            .map(|t| {
                let encoding = self
                    .tokenizer
                    .encode(*t, true)
                    .map_err(|e| Error::Embedding(format!("tokenizer failed: {e}")))?;
                let ids = encoding.get_ids();
                let mut out = Vec::with_capacity(ids.len() + prefix.len());
                // [CLS] first, then the prefix (a template adds [CLS] and
                // [SEP] around any text, so the first id is [CLS]).
                out.extend(ids.first());
                out.extend_from_slice(prefix);
                out.extend(ids.iter().skip(1));
                Ok(out)
            })
            .collect()
    }

    fn prefix(&self, role: Role) -> &[u32] {
        match role {
            Role::Document => &self.prefixes.document,
            Role::Query => &self.prefixes.query,
        }
    }

    /// Embeds `texts` as `role`, each thread tokenising its own texts
    /// (tokenising a batch on the calling thread first left the other
    /// cores idle meanwhile); their lengths in bytes stand in for their
    /// token counts.
    fn embed_as(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<f32>>> {
        let threads = self.threads.min(texts.len());
        if threads <= 1 {
            return self.embed_sequences(&self.tokenize(texts, role)?, self.threads);
        }
        let bounds = balanced_bounds(texts.iter().map(|t| t.len()), threads);
        self.in_groups(texts, &bounds, |part| {
            self.embed_sequences(&self.tokenize(part, role)?, 1)
        })
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

impl Embedder for LocalEmbedder {
    fn info(&self) -> EmbedderInfo {
        EmbedderInfo {
            model_id: self.model_id.to_string(),
            dimensions: self.model.hidden_size(),
        }
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_as(texts, Role::Document)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_as(texts, Role::Query)
    }

    fn embed_pieces(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        let frame = Frame {
            specials: self.specials,
            prefix: &self.prefixes.document,
            max_tokens: self.max_tokens,
        };
        let mut windows = Vec::new();
        let mut owners = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            // Every token takes at least a byte: a shorter text fits the
            // first window, and is not tokenised again for nothing.
            if text.len() <= frame.width() {
                continue;
            }
            let ids = self
                .untruncated
                .encode(*text, false)
                .map_err(|e| Error::Embedding(format!("tokenizer failed: {e}")))?;
            for w in later_windows(ids.get_ids(), &frame) {
                windows.push(w);
                owners.push(i);
            }
        }
        let mut out = vec![Vec::new(); texts.len()];
        for (owner, v) in owners.into_iter().zip(self.embed_parallel(&windows)?) {
            out[owner].push(v);
        }
        Ok(out)
    }
}

/// Tokens two consecutive windows of a long text share, so that a
/// sentence cut by one window's end is whole in the next.
pub const PIECE_OVERLAP: usize = 64;

/// What frames each window of a text: [CLS] and [SEP], the document
/// prefix after [CLS], and the window's size with them.
struct Frame<'a> {
    specials: (u32, u32),
    prefix: &'a [u32],
    max_tokens: usize,
}

impl Frame<'_> {
    /// The text's tokens one window holds, beside [CLS], the prefix and [SEP].
    fn width(&self) -> usize {
        self.max_tokens.saturating_sub(2 + self.prefix.len())
    }
}

/// The windows of a text past the first, as model inputs ([CLS] prefix …
/// [SEP]): `content` is the text's tokens without special ones. The first
/// window is what `embed` reads (all-MiniLM-L6-v2: the first 254 tokens);
/// each next one starts `PIECE_OVERLAP` tokens before the previous one
/// ended, while there are tokens no window has read.
fn later_windows(content: &[u32], frame: &Frame<'_>) -> Vec<Vec<u32>> {
    let (cls, sep) = frame.specials;
    let width = frame.width();
    let step = width.saturating_sub(PIECE_OVERLAP).max(1);
    let mut out = Vec::new();
    let mut start = step;
    while start + PIECE_OVERLAP < content.len() && out.len() < MAX_PIECES {
        let end = (start + width).min(content.len());
        let mut w = Vec::with_capacity(end - start + 2 + frame.prefix.len());
        w.push(cls);
        w.extend_from_slice(frame.prefix);
        w.extend_from_slice(&content[start..end]);
        w.push(sep);
        out.push(w);
        start += step;
    }
    out
}

impl LocalEmbedder {
    /// Embeds model inputs on every core: contiguous groups of about equal
    /// token counts, one per thread (one input shares each product's
    /// columns among the cores instead).
    fn embed_parallel(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let threads = self.threads.min(seqs.len());
        if threads <= 1 {
            return self.embed_sequences(seqs, self.threads);
        }
        let bounds = balanced_bounds(seqs.iter().map(Vec::len), threads);
        self.in_groups(seqs, &bounds, |part| self.embed_sequences(part, 1))
    }

    /// Runs `embed` on each group `items[bounds[i]..bounds[i + 1]]` on the
    /// thread pool, and joins the results in order. The pool's threads
    /// persist, so each keeps its forward pass's buffers (`bert.rs`) from
    /// one batch to the next: a thread started per group allocated and
    /// faulted them in again for every coalesced batch of queries.
    fn in_groups<T: Sync>(
        &self,
        items: &[T],
        bounds: &[usize],
        embed: impl Fn(&[T]) -> Result<Vec<Vec<f32>>> + Sync,
    ) -> Result<Vec<Vec<f32>>> {
        use rayon::prelude::*;
        let results: Vec<Result<Vec<Vec<f32>>>> = bounds
            .par_windows(2)
            .map(|w| {
                let part = &items[w[0]..w[1]];
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| embed(part)))
                    .unwrap_or_else(|_| Err(Error::Internal("an embedding thread panicked".into())))
            })
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

/// How a model is set up around its encoder.
struct Setup {
    model_id: &'static str,
    max_tokens: usize,
    /// The document and query prefixes, as text.
    prefixes: (&'static str, &'static str),
}

/// Boundaries (0, …, n) of at most `threads` contiguous groups of about
/// equal total weight, for n items of the given weights.
fn balanced_bounds(weights: impl ExactSizeIterator<Item = usize>, threads: usize) -> Vec<usize> {
    let n = weights.len();
    let weights: Vec<usize> = weights.collect();
    let total: usize = weights.iter().sum();
    let mut bounds = vec![0];
    let mut acc = 0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if acc * threads >= total * bounds.len() && bounds.len() < threads && i + 1 < n {
            bounds.push(i + 1);
        }
    }
    bounds.push(n);
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(specials: (u32, u32)) -> Frame<'static> {
        Frame {
            specials,
            prefix: &[],
            max_tokens: MAX_TOKENS,
        }
    }

    #[test]
    fn a_prefix_takes_its_room_in_every_window() {
        let content: Vec<u32> = (1000..1700).collect();
        let prefix = [7, 8, 9];
        let f = Frame {
            specials: (101, 102),
            prefix: &prefix,
            max_tokens: 128,
        };
        let windows = later_windows(&content, &f);
        assert!(!windows.is_empty());
        for w in &windows {
            assert!(w.len() <= 128);
            assert_eq!(&w[..4], &[101, 7, 8, 9]);
            assert_eq!(w[w.len() - 1], 102);
        }
        // 128 - 2 - 3 = 123 tokens of the text a window, the first later
        // one starting 64 before the first window's end.
        assert_eq!(windows[0].len(), 128);
        assert_eq!(windows[0][4], 1000 + 123 - PIECE_OVERLAP as u32);
    }

    #[test]
    fn groups_balance_weight_and_cover_every_item() {
        assert_eq!(balanced_bounds([1, 1, 1, 1].into_iter(), 2), vec![0, 2, 4]);
        assert_eq!(
            balanced_bounds([10, 1, 1, 1, 1, 1, 1].into_iter(), 2),
            vec![0, 1, 7]
        );
        assert_eq!(balanced_bounds([5].into_iter(), 4), vec![0, 1]);
        let bounds = balanced_bounds((0..100).map(|i| i % 7 + 1), 3);
        assert_eq!(
            (bounds[0], *bounds.last().unwrap(), bounds.len()),
            (0, 100, 4)
        );
        assert!(bounds.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_text_that_fits_the_first_window_has_no_later_ones() {
        let specials = (101, 102);
        assert!(later_windows(&[], &frame(specials)).is_empty());
        assert!(later_windows(&[7; 254], &frame(specials)).is_empty());
        // The next window would start 64 tokens before the first one's
        // end: with nothing new past it, there is none.
        assert!(later_windows(&[7; 190 + PIECE_OVERLAP], &frame(specials)).is_empty());
    }

    #[test]
    fn windows_overlap_and_cover_every_token() {
        let content: Vec<u32> = (1000..1700).collect();
        let windows = later_windows(&content, &frame((101, 102)));
        // 700 tokens: the first window reads 0..254, then 190..444,
        // 380..634 and 570..700.
        assert_eq!(windows.len(), 3);
        for w in &windows {
            assert!(w.len() <= MAX_TOKENS);
            assert_eq!((w[0], w[w.len() - 1]), (101, 102));
        }
        assert_eq!(windows[0][1], 1190);
        assert_eq!(windows[1][1], 1380);
        assert_eq!(*windows[2].iter().rev().nth(1).unwrap(), 1699);
        // Each starts 64 tokens before the previous one ended.
        assert_eq!(windows[0][1] + 254 - PIECE_OVERLAP as u32, windows[1][1]);
    }

    #[test]
    fn a_text_has_at_most_max_pieces() {
        let content = vec![7u32; 100_000];
        assert_eq!(
            later_windows(&content, &frame((101, 102))).len(),
            MAX_PIECES
        );
    }
}
