//! Configuration: defaults, then a TOML file, then environment variables.

use std::path::{Path, PathBuf};

use memloop_core::{Error, Result};
use memloop_embed::OpenAiEmbedderConfig;
use memloop_llm::LlmConfig;
use memloop_store::StoreOptions;

use crate::forgetting::ForgettingConfig;
use crate::rerank::RerankConfig;
use crate::token_count::Encoding;
use memloop_core::context::ContextBudget;
use memloop_longterm::graph::Expansion;
use memloop_rules::gate::GateConfig;
use serde::{Deserialize, Serialize};

/// Which embedder turns text into vectors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "kebab-case", deny_unknown_fields)]
#[non_exhaustive]
pub enum EmbedderConfig {
    /// A local model in process (all-MiniLM-L6-v2 by default): no network,
    /// no key.
    Local {
        /// Which local model: "small" (all-MiniLM-L6-v2, the default) or
        /// "nomic" (nomic-embed-text-v1.5), by these names or the models'
        /// own; found in its usual folders unless `model_dir` says where.
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        model_dir: Option<PathBuf>,
        #[serde(default)]
        threads: Option<usize>,
    },
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Openai(OpenAiEmbedderConfig),
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig::Local {
            model: None,
            model_dir: None,
            threads: None,
        }
    }
}

/// Unknown keys are refused with their name (a misspelt `[store]` key would
/// otherwise silently leave the default in force); the `[server]` table is
/// `memloop serve`'s and is read there.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub data_dir: PathBuf,
    pub embedder: EmbedderConfig,
    pub store: StoreOptions,
    /// The chat model the loop calls; none: the loop runs offline.
    pub llm: Option<LlmConfig>,
    pub short_term: ShortTermConfig,
    /// The loop: system prompt, budgets, gate.
    #[serde(rename = "loop")]
    pub turn: LoopConfig,
    /// Default TTLs per kind, gc while serving, decay (docs/forgetting.md).
    pub forgetting: ForgettingConfig,
    /// What every search does unless it says otherwise: entity expansion.
    pub search: SearchConfig,
    /// A reranking stage after fusion (docs/retrieval.md, "Reranking").
    pub rerank: RerankConfig,
}

/// The `[search]` table: entity expansion for searches that name none
/// (REST, MCP, the loop and the CLI alike; each search can override it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Follow entity links from the top hits (docs/retrieval.md, "Entity
    /// links"). Off by default: it did not pay on the dev sets.
    pub expand: bool,
    /// Links followed from a hit when expanding (1..=3).
    pub hops: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            expand: false,
            hops: Expansion::ON.hops,
        }
    }
}

impl SearchConfig {
    pub fn validate(&self) -> Result<()> {
        check_hops(self.hops, "[search] hops")
    }

    /// The expansion searches that name none get. Off, it still holds the
    /// configured hops (with no seeds), for a search that turns it on.
    pub fn expansion(&self) -> Expansion {
        Expansion {
            hops: self.hops,
            seeds: if self.expand { Expansion::ON.seeds } else { 0 },
            ..Expansion::ON
        }
    }
}

/// The most links an expansion follows from a hit: each hop multiplies
/// what is read, and a third hop reaches almost anything.
pub const MAX_HOPS: usize = 3;

/// Refuses hops outside `1..=MAX_HOPS`.
pub fn check_hops(hops: usize, what: &str) -> Result<()> {
    if (1..=MAX_HOPS).contains(&hops) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what} {hops} is outside 1..={MAX_HOPS}"
        )))
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: default_data_dir(),
            embedder: EmbedderConfig::default(),
            store: StoreOptions::default(),
            llm: None,
            short_term: ShortTermConfig::default(),
            turn: LoopConfig::default(),
            forgetting: ForgettingConfig::default(),
            search: SearchConfig::default(),
            rerank: RerankConfig::default(),
        }
    }
}

/// Where short-term buffers live: in this process (default) or in Redis,
/// and their bounds (docs/loop.md, "What the short-term buffer holds").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShortTermConfig {
    /// `redis://host:port/db`; none keeps sessions in process.
    pub url: Option<String>,
    /// A session not appended to for this long expires, in process as in
    /// Redis (0: never). Default one day.
    pub ttl_secs: u64,
    /// Turns a session keeps; past it the oldest are dropped, the summary
    /// having folded them. At least `[loop.budget] max_turns` + 2. Default 200.
    pub max_turns_stored: usize,
    /// The in-process buffer's total in bytes; past it the least recently
    /// used idle sessions are dropped (0: no budget; Redis ignores it).
    /// Default 64 MiB.
    pub max_bytes: usize,
}

impl Default for ShortTermConfig {
    fn default() -> Self {
        ShortTermConfig {
            url: None,
            ttl_secs: memloop_shortterm::DEFAULT_TTL_SECS,
            max_turns_stored: memloop_shortterm::DEFAULT_MAX_TURNS_STORED,
            max_bytes: memloop_shortterm::DEFAULT_MAX_BYTES,
        }
    }
}

/// The smallest byte budget taken: below it a few sessions would evict
/// each other on every append.
pub const MIN_SHORT_TERM_BYTES: usize = 1 << 20;

impl ShortTermConfig {
    /// The bounds on their own: a buffer keeps at least one turn, a
    /// budget (when set) is at least 1 MiB, a TTL fits in Redis's.
    pub fn validate(&self) -> Result<()> {
        if self.max_turns_stored == 0 {
            return Err(Error::invalid(format!(
                "[short_term] max_turns_stored = 0 would keep no turn: use at least the prompt window ([loop.budget] max_turns + 2), e.g. the default {}",
                memloop_shortterm::DEFAULT_MAX_TURNS_STORED
            )));
        }
        if self.max_bytes != 0 && self.max_bytes < MIN_SHORT_TERM_BYTES {
            return Err(Error::invalid(format!(
                "[short_term] max_bytes = {} is too small to hold sessions: use at least {MIN_SHORT_TERM_BYTES} (1 MiB), e.g. the default {} (64 MiB), or 0 for no budget",
                self.max_bytes,
                memloop_shortterm::DEFAULT_MAX_BYTES
            )));
        }
        // Redis refuses an EXPIRE whose milliseconds overflow.
        if self.ttl_secs > MAX_TTL_SECS {
            return Err(Error::invalid(format!(
                "[short_term] ttl_secs = {} is too large: use at most {MAX_TTL_SECS} (100 years), or 0 for never",
                self.ttl_secs
            )));
        }
        Ok(())
    }

    /// The bounds against the loop's: a session must keep at least the
    /// prompt window and the exchange being appended, so every turn that
    /// leaves the buffer has left the window first and the summary can
    /// fold it.
    pub fn validate_for(&self, turn: &LoopConfig) -> Result<()> {
        self.validate()?;
        let least = turn.budget.max_turns.saturating_add(2);
        if self.max_turns_stored < least {
            return Err(Error::invalid(format!(
                "[short_term] max_turns_stored = {} is smaller than the prompt window: use at least {least} ([loop.budget] max_turns = {} plus the 2 turns of an exchange)",
                self.max_turns_stored, turn.budget.max_turns
            )));
        }
        Ok(())
    }
}

/// 100 years.
const MAX_TTL_SECS: u64 = 100 * 365 * 24 * 3600;

/// A number set from an environment variable, its name in the error.
trait SetFromEnv {
    fn set(&mut self, var: &str, value: &str) -> Result<()>;
}

impl<T: std::str::FromStr> SetFromEnv for T {
    fn set(&mut self, var: &str, value: &str) -> Result<()> {
        *self = value.trim().parse().map_err(|_| {
            Error::invalid(format!(
                "{var} = {} is not a whole number: give one, e.g. {var}=3600",
                memloop_core::shown_value(value)
            ))
        })?;
        Ok(())
    }
}

/// The platform data directory (`~/.local/share/memloop` on Linux), or
/// `./memloop-data` where the platform has none.
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir().map_or_else(|| PathBuf::from("memloop-data"), |d| d.join("memloop"))
}

impl Config {
    /// Defaults, overridden by `file` (TOML) when given, then by the
    /// environment: `MEMLOOP_DATA_DIR`, `MEMLOOP_STORE` (a PostgreSQL URL
    /// for the long-term store), `MEMLOOP_SHORT_TERM` (a Redis URL),
    /// `MEMLOOP_LLM_PROVIDER` / `MEMLOOP_LLM_MODEL` / `MEMLOOP_LLM_BASE_URL`.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        let mut cfg = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
                    path: path.to_path_buf(),
                    source: e,
                })?;
                Config::from_toml(&text, path)?
            }
            None => Config::default(),
        };
        if let Some(dir) = std::env::var_os("MEMLOOP_DATA_DIR") {
            cfg.data_dir = PathBuf::from(dir);
        }
        if let Ok(url) = std::env::var("MEMLOOP_STORE") {
            cfg.store.url = Some(url).filter(|u| !u.is_empty());
        }
        if let Ok(url) = std::env::var("MEMLOOP_SHORT_TERM") {
            cfg.short_term.url = Some(url).filter(|u| !u.is_empty());
        }
        let st = &mut cfg.short_term;
        for (var, slot) in [
            (
                "MEMLOOP_SHORT_TERM_TTL_SECS",
                &mut st.ttl_secs as &mut dyn SetFromEnv,
            ),
            (
                "MEMLOOP_SHORT_TERM_MAX_TURNS_STORED",
                &mut st.max_turns_stored,
            ),
            ("MEMLOOP_SHORT_TERM_MAX_BYTES", &mut st.max_bytes),
        ] {
            if let Ok(value) = std::env::var(var) {
                slot.set(var, &value)?;
            }
        }
        cfg.short_term.validate_for(&cfg.turn)?;
        if let Some(llm) = LlmConfig::from_env()? {
            cfg.llm = Some(llm);
        }
        Ok(cfg)
    }

    /// Parses the text of a configuration file; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &Path) -> Result<Config> {
        let origin = format!("config file {}", origin.display());
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| Error::invalid(format!("{origin} is not valid: {e}")))?;
        Config::from_table(table, &origin)
    }

    /// The same sections and keys as the file, given as a JSON object (the
    /// Python package's `config=` dict); `origin` names it in errors.
    pub fn from_json(value: &serde_json::Value, origin: &str) -> Result<Config> {
        let table: toml::Table = serde_json::from_value(value.clone()).map_err(|e| {
            Error::invalid(format!(
                "{origin} is not valid: {e} (give an object of sections, as in the TOML file; null is not a value)"
            ))
        })?;
        Config::from_table(table, origin)
    }

    fn from_table(mut table: toml::Table, origin: &str) -> Result<Config> {
        let invalid =
            |e: &dyn std::fmt::Display| Error::invalid(format!("{origin} is not valid: {e}"));
        // `memloop serve` reads its own table (memloop-server's config).
        table.remove("server");
        let cfg: Config = table.try_into().map_err(|e| invalid(&e))?;
        cfg.turn
            .shares
            .validate()
            .and_then(|()| cfg.forgetting.validate())
            .and_then(|()| cfg.short_term.validate_for(&cfg.turn))
            .and_then(|()| cfg.search.validate())
            .and_then(|()| cfg.rerank.validate(cfg.llm.as_ref()))
            .map_err(|e| invalid(&e))?;
        Ok(cfg)
    }

    pub fn with_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = dir.into();
        self
    }
}

#[cfg(test)]
mod readme_tests {
    use super::*;

    /// The configuration example in the README parses, with every section.
    #[test]
    fn the_readme_example_is_a_valid_config() {
        let readme = include_str!("../../../README.md");
        let start = readme.find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + readme[start..].find("```").unwrap();
        let cfg: Config = toml::from_str(&readme[start..end]).unwrap();
        assert!(cfg.llm.is_some());
        assert_eq!(
            cfg.short_term.url.as_deref(),
            Some("redis://127.0.0.1:6379")
        );
        assert_eq!(cfg.turn.budget.input_tokens, 4000);
        assert!((cfg.turn.min_similarity - 0.3).abs() < 1e-6);
        assert_eq!(cfg.forgetting, crate::ForgettingConfig::default());
    }

    /// `[store] busy_timeout_ms` sets how long writers wait for another
    /// process's lock; left out, the default of a few seconds holds.
    #[test]
    fn unknown_keys_are_refused_by_name_in_every_table() {
        for (text, key) in [
            ("data_dri = \"/tmp/x\"\n", "data_dri"),
            ("[store]\nbusy_timeout = 10\n", "busy_timeout"),
            ("[embedder]\nprovider = \"local\"\nthread = 2\n", "thread"),
            ("[short_term]\nttl = 5\n", "ttl"),
            ("[loop]\ntopk = 3\n", "topk"),
            ("[loop.budget]\ninput = 3\n", "input"),
            ("[loop.gate]\nmin_word = 3\n", "min_word"),
            (
                "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nkey = \"k\"\n",
                "key",
            ),
            ("[sotre]\nann_threshold = 3\n", "sotre"),
            ("[forgetting]\nhalflife = \"1d\"\n", "halflife"),
        ] {
            let err = Config::from_toml(text, Path::new("m.toml"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key) && err.contains("m.toml"), "{text}: {err}");
        }
        // The server's table is memloop-server's to read, not an unknown key.
        let cfg = Config::from_toml(
            "[server]\naddr = \"127.0.0.1:1\"\n[store]\nann_threshold = 7\n",
            Path::new("m.toml"),
        )
        .unwrap();
        assert_eq!(cfg.store.ann_threshold, 7);
    }

    /// The short-term bounds: defaults when left out, and a bad value is
    /// refused naming its key and what to use.
    #[test]
    fn short_term_bounds_are_checked_by_name() {
        let cfg = Config::from_toml("[short_term]\nttl_secs = 2\n", Path::new("m.toml")).unwrap();
        assert_eq!(cfg.short_term.ttl_secs, 2);
        assert_eq!(cfg.short_term.max_turns_stored, 200);
        assert_eq!(cfg.short_term.max_bytes, 64 << 20);
        let cfg = Config::from_toml(
            "[short_term]\nmax_turns_stored = 14\nmax_bytes = 0\n",
            Path::new("m.toml"),
        )
        .unwrap();
        assert_eq!(cfg.short_term.limits().max_turns_stored, 14);
        for (text, says) in [
            ("[short_term]\nmax_turns_stored = 0\n", "use at least"),
            ("[short_term]\nmax_turns_stored = 13\n", "use at least 14"),
            (
                "[loop.budget]\nmax_turns = 300\n[short_term]\nmax_turns_stored = 250\n",
                "use at least 302",
            ),
            ("[short_term]\nmax_bytes = 1000\n", "use at least 1048576"),
            ("[short_term]\nttl_secs = 9000000000000000000\n", "at most"),
            ("[short_term]\nmax_bytes = -1\n", "max_bytes"),
        ] {
            let err = Config::from_toml(text, Path::new("m.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("m.toml") && err.contains(says),
                "{text}: {err}"
            );
            let key = text.lines().rev().find(|l| l.contains('=')).unwrap();
            let key = key.split(' ').next().unwrap();
            assert!(err.contains(key), "{text}: {err}");
        }
        let mut n = 0usize;
        let err = SetFromEnv::set(&mut n, "MEMLOOP_SHORT_TERM_MAX_BYTES", "64MB")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("MEMLOOP_SHORT_TERM_MAX_BYTES") && err.contains("64MB"),
            "{err}"
        );
        SetFromEnv::set(&mut n, "X", " 42 ").unwrap();
        assert_eq!(n, 42);
    }

    #[test]
    fn busy_timeout_is_configured_under_store() {
        let cfg: Config = toml::from_str("[store]\nbusy_timeout_ms = 1234\n").unwrap();
        assert_eq!(cfg.store.busy_timeout_ms, 1234);
        let cfg: Config = toml::from_str("[store]\nann_threshold = 10\n").unwrap();
        assert_eq!(
            cfg.store.busy_timeout_ms,
            memloop_store::DEFAULT_BUSY_TIMEOUT_MS
        );
        assert!(cfg.store.busy_timeout_ms >= 2_000);
    }
}

#[cfg(test)]
mod fuzz_tests {
    use super::*;

    /// Pieces of TOML, with the nesting an attacker would stack.
    const PIECES: &[&str] = &[
        "[",
        "]",
        "{",
        "}",
        "[[",
        "]]",
        "=",
        ",",
        "\n",
        "\"",
        "'",
        "#",
        ".",
        " ",
        "store",
        "loop",
        "llm",
        "short_term",
        "server",
        "data_dir",
        "busy_timeout_ms",
        "ann_threshold",
        "provider",
        "model",
        "url",
        "1",
        "-1",
        "1e999",
        "18446744073709551616",
        "true",
        "\"x\"",
        "'''",
        "\"\"\"",
        "[store]",
        "[loop.gate]",
        "a.b.c",
        "\u{0}",
    ];

    proptest::proptest! {
        #[test]
        fn any_text_is_a_config_or_an_error(text in "\\PC{0,200}") {
            let _ = Config::from_toml(&text, Path::new("fuzz.toml"));
        }

        #[test]
        fn toml_shaped_text_is_a_config_or_an_error(
            parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..400)
        ) {
            let _ = Config::from_toml(&parts.concat(), Path::new("fuzz.toml"));
        }
    }

    /// Arrays and inline tables nested thousands deep are refused by the
    /// TOML parser's own depth limit, not by a stack overflow.
    #[test]
    fn deep_nesting_is_an_error() {
        for text in [
            format!("a = {}1{}", "[".repeat(5_000), "]".repeat(5_000)),
            format!("a = {}", "{b = ".repeat(5_000)),
            format!("[{}]", "a.".repeat(5_000)),
        ] {
            assert!(Config::from_toml(&text, Path::new("deep.toml")).is_err());
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopConfig {
    pub system_prompt: String,
    pub budget: ContextBudget,
    /// Tokens reserved for the reply (the LLM's `max_tokens`).
    pub reply_tokens: u32,
    /// Long-term memories retrieved per turn.
    pub top_k: usize,
    /// Memories scoring below this (0..1) are not offered to the prompt.
    pub min_score: f32,
    /// A memory found by meaning alone (no keyword in common) needs at least
    /// this cosine similarity: all-MiniLM-L6-v2 puts unrelated sentences
    /// below ~0.25 and paraphrases above ~0.4, and an unrelated line in the
    /// prompt costs tokens and invites the model to use it.
    pub min_similarity: f32,
    pub encoding: Encoding,
    pub gate: GateConfig,
    /// Ask the LLM YES/NO when the heuristic gate says skip (one more call
    /// on skipped turns only: a missed fact is worse than a stored chit-chat line).
    pub llm_gate: bool,
    /// Fold turns leaving the window into a rolling summary of at most this
    /// many tokens (0: no summary).
    pub summary_tokens: usize,
    /// What the prompt does with a retrieved memory whose claim was
    /// superseded (an episode that said "I live in Paris" after the move to
    /// Berlin was recorded): `annotate` (the default) shows it with its date
    /// and what replaced it, `omit` leaves it out.
    pub stale: StaleMemories,
    /// What a time the input names ("last week", "the last session") does
    /// to the search: `boost` (the default), `filter` or `off`, as in
    /// `memloop search --time-mode` (docs/retrieval.md).
    pub time_mode: crate::QueryTimeMode,
    /// `two` (the default): one block of memories, all kinds searched
    /// together. `three`: a section per layer (facts, procedures, recent
    /// episodes), each searched apart and within its share (docs/layers.md).
    pub layers: Layers,
    /// In three-layer mode, each section's share of `budget.memory_tokens`.
    pub shares: LayerShares,
    /// In three-layer mode, procedures retrieved per turn.
    pub procedure_top_k: usize,
}

/// See [`LoopConfig::layers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Layers {
    #[default]
    Two,
    Three,
}

/// Shares of the memory budget in three-layer mode (each 0..1, summing to
/// at most 1). A section that uses less than its share leaves the rest to
/// the others, in the order facts, procedures, episodes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LayerShares {
    pub facts: f32,
    pub procedures: f32,
    pub episodes: f32,
}

impl Default for LayerShares {
    fn default() -> Self {
        LayerShares {
            facts: 0.4,
            procedures: 0.3,
            episodes: 0.3,
        }
    }
}

impl LayerShares {
    /// Each share in 0..1 and their sum at most 1, else an error naming them.
    pub fn validate(&self) -> Result<()> {
        let all = [self.facts, self.procedures, self.episodes];
        if all.iter().any(|s| !s.is_finite() || *s < 0.0 || *s > 1.0)
            || all.iter().sum::<f32>() > 1.0 + 1e-4
        {
            return Err(Error::invalid(format!(
                "[loop.shares] facts = {}, procedures = {}, episodes = {}: each share is a fraction of memory_tokens in 0..1 and together at most 1",
                self.facts, self.procedures, self.episodes
            )));
        }
        Ok(())
    }
}

/// See [`LoopConfig::stale`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StaleMemories {
    /// Annotated: an episode often holds other claims that are still true.
    #[default]
    Annotate,
    Omit,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            system_prompt: "You are a helpful assistant with long-term memory. Use what you remember about the user when it helps; do not invent memories.".into(),
            budget: ContextBudget::default(),
            reply_tokens: 512,
            top_k: 8,
            min_score: 0.05,
            min_similarity: 0.3,
            encoding: Encoding::default(),
            gate: GateConfig::default(),
            llm_gate: false,
            summary_tokens: 200,
            stale: StaleMemories::default(),
            time_mode: crate::QueryTimeMode::default(),
            layers: Layers::default(),
            shares: LayerShares::default(),
            procedure_top_k: 3,
        }
    }
}
