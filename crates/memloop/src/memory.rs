//! The facade: an embedder and a long-term store behind one handle.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memloop_core::time::Clock;
use memloop_core::{
    validate_memory_id, Embedder, Error, Event, HistoryEntry, Kind, MemoryRecord, NewMemory,
    Result, Scope, WriteResult,
};
use memloop_embed::{Coalescing, LocalEmbedder, LocalModel, OpenAiEmbedder};
use memloop_longterm::graph::{EntityLinks, Expansion, GraphEntity};
use memloop_longterm::{
    Embedded, Entity, ForgetReport, ListQuery, LongTermStore, Lookup, MemoryUpdate, RecordStatus,
    SessionInfo, Stats,
};
use memloop_store::StoreOptions;

use crate::config::{Config, EmbedderConfig};
use crate::events::{log_writes, WriteLog};
use crate::forgetting::{ForgettingConfig, GcReport};
use crate::lazy::LazyEmbedder;
use crate::rerank::RerankStage;
use crate::sweeper::{Replay, SweepStats, Sweeper};

mod search;
pub use search::Searched;

/// The entity expansion of searches that name none (see
/// `Memory::with_expansion` and docs/retrieval.md for the measurements).
pub const DEFAULT_EXPANSION: Expansion = Expansion::OFF;

/// A memory read by id as every front end answers it: the record, its
/// `status` at the time given (current, deleted, superseded, expired), and
/// `superseded_by` (the successor's id; null when deleted or never
/// replaced; on a current episode, the fact that replaced a claim it holds).
#[derive(Debug, serde::Serialize)]
pub struct MemoryById<'a> {
    #[serde(flatten)]
    pub record: &'a MemoryRecord,
    pub status: RecordStatus,
    pub superseded_by: Option<&'a str>,
}

impl<'a> MemoryById<'a> {
    /// Its status judged at `now` (`Memory::clock`), as expiry is.
    pub fn new(record: &'a MemoryRecord, now: i64) -> MemoryById<'a> {
        MemoryById {
            record,
            status: RecordStatus::at(record, now),
            superseded_by: record.superseded_by.as_deref(),
        }
    }
}

/// A memory store opened on a data directory. Cheap to share across threads
/// (`&Memory` is `Sync`). Operations by id act in the default tenant;
/// their `_in` variants (`get_in`, `update_in`, …) take the tenant.
///
/// A handle opened by [`Memory::open`] or [`Memory::open_with`] sweeps in
/// the background every `[forgetting] gc_interval` (one hour by default;
/// "off": never): due queued writes replayed, then [`Memory::gc`]. The
/// sweeper stops when the handle is dropped (see [`Memory::with_sweeper`]).
pub struct Memory {
    /// First, so it is dropped (stopped and joined) before the store.
    sweeper: Option<Sweeper>,
    store: Arc<dyn LongTermStore>,
    embedder: Arc<dyn Embedder>,
    forgetting: ForgettingConfig,
    expansion: Expansion,
    rerank: Option<RerankStage>,
}

/// The configured embedder, loaded on first use (see `LazyEmbedder`), with
/// concurrent single texts (the queries of concurrent searches) embedded
/// together (see `Coalescing`).
fn build_embedder(cfg: &EmbedderConfig) -> Result<Arc<dyn Embedder>> {
    let embedder: Arc<dyn Embedder> = match cfg {
        EmbedderConfig::Local {
            model,
            model_dir,
            threads,
        } => {
            let model = model.as_deref().map(LocalModel::parse).transpose()?;
            let (model_dir, threads) = (model_dir.clone(), *threads);
            let info = memloop_embed::local::model_info(model_dir.as_deref(), model);
            Arc::new(LazyEmbedder::new(
                info,
                Box::new(move || {
                    let mut e = LocalEmbedder::locate_and_load_model(model_dir.as_deref(), model)?;
                    if let Some(t) = threads {
                        e = e.with_threads(t);
                    }
                    Ok(Arc::new(e) as Arc<dyn Embedder>)
                }),
            ))
        }
        EmbedderConfig::Openai(c) => Arc::new(OpenAiEmbedder::new(c.clone())?),
    };
    Ok(Arc::new(Coalescing::new(embedder)))
}

impl Memory {
    /// Opens (or creates) a store in `dir` with the local embedding model.
    pub fn open(dir: impl AsRef<Path>) -> Result<Memory> {
        Memory::open_with(&Config::default().with_data_dir(dir.as_ref()))
    }

    /// Opens the store, embedder and forgetting policy `cfg` names, with
    /// the background sweeper every `[forgetting] gc_interval` (none when
    /// "off"); queued writes are replayed with `cfg`'s LLM, as `memloop gc`
    /// does.
    pub fn open_with(cfg: &Config) -> Result<Memory> {
        cfg.forgetting.validate()?;
        cfg.search.validate()?;
        let memory = Memory::with_embedder(
            &cfg.data_dir,
            build_embedder(&cfg.embedder)?,
            cfg.store.clone(),
        )?
        .with_forgetting(cfg.forgetting.clone())
        .with_expansion(cfg.search.expansion())
        .with_reranker(cfg.rerank.build(cfg.llm.as_ref())?);
        match cfg.forgetting.gc_interval {
            Some(ms) => memory.start_sweeper(
                Duration::from_millis(ms.max(1) as u64),
                crate::sweeper::replay_with(cfg.llm.clone()),
            ),
            None => Ok(memory),
        }
    }

    /// This handle with a background sweeper: every `every` (the first
    /// time one interval from now) it replays the queued writes that are
    /// due (rules extraction: a handle built from parts knows no LLM) and
    /// runs [`Memory::gc`]; failures are logged and tried again at the next
    /// interval. Dropping the handle stops it at once (waiting only for a
    /// sweep in progress). Set the forgetting policy and expansion first:
    /// the sweeper's writes use the handle's as they are now. Replaces a
    /// sweeper already running.
    pub fn with_sweeper(self, every: Duration) -> Result<Memory> {
        self.start_sweeper(every, crate::sweeper::replay_with(None))
    }

    fn start_sweeper(mut self, every: Duration, replay: Replay) -> Result<Memory> {
        self.sweeper = None;
        let view = Memory {
            sweeper: None,
            store: self.store.clone(),
            embedder: self.embedder.clone(),
            forgetting: self.forgetting.clone(),
            expansion: self.expansion,
            rerank: self.rerank.clone(),
        };
        self.sweeper = Some(Sweeper::start(view, every, replay)?);
        Ok(self)
    }

    /// What the background sweeper has done (None: this handle has none).
    pub fn sweeps(&self) -> Option<SweepStats> {
        self.sweeper.as_ref().map(Sweeper::stats)
    }

    /// Opens a store with an embedder of your own.
    pub fn with_embedder(
        dir: &Path,
        embedder: Arc<dyn Embedder>,
        options: StoreOptions,
    ) -> Result<Memory> {
        let store = crate::store_open::open_store(dir, embedder.info(), options)?;
        Ok(Memory::with_store(store, embedder))
    }

    /// Re-embeds every memory of the store in `cfg.data_dir` with the
    /// configured embedder (after changing models). Returns the count.
    pub fn reindex(cfg: &Config, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        Memory::reindex_with(
            &cfg.data_dir,
            build_embedder(&cfg.embedder)?,
            cfg.store.clone(),
            progress,
        )
    }

    /// `reindex` with an embedder of your own.
    pub fn reindex_with(
        dir: &Path,
        embedder: Arc<dyn Embedder>,
        options: StoreOptions,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        let store = crate::store_open::open_store_for_reindex(dir, embedder.info(), options)?;
        store.reindex(&|texts| embed_all(embedder.as_ref(), texts), progress)
    }

    /// Gives the memories without entity links (written before the store
    /// kept a graph) the links a write would derive from their text and
    /// metadata (`Upkeep::relink`). Returns how many gained links.
    pub fn relink(&self, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        let derive = |text: &str, metadata: &serde_json::Value| {
            let mut links = memloop_core::links::Links::default();
            crate::expand::fill_links(&mut links, text, metadata);
            links
        };
        self.store.relink(&derive, progress)
    }

    /// A memory over a long-term store opened elsewhere (another backend,
    /// or a store shared with other handles).
    /// The forgetting policy is the default one (see `with_forgetting`).
    pub fn with_store(store: Arc<dyn LongTermStore>, embedder: Arc<dyn Embedder>) -> Memory {
        Memory {
            sweeper: None,
            store,
            embedder,
            forgetting: ForgettingConfig::default(),
            expansion: DEFAULT_EXPANSION,
            rerank: None,
        }
    }

    /// This memory with another entity expansion for searches that name
    /// none (`SearchQuery::expand`); `Expansion::OFF` turns it off.
    pub fn with_expansion(mut self, expansion: Expansion) -> Memory {
        self.expansion = expansion;
        self
    }

    /// This memory with a reranking stage after fusion (None: none, the
    /// default); a search can turn it off or change its depth
    /// (`SearchQuery::rerank`).
    pub fn with_reranker(mut self, stage: Option<RerankStage>) -> Memory {
        self.rerank = stage;
        self
    }

    /// The reranking stage searches use, if any.
    pub fn reranker(&self) -> Option<&RerankStage> {
        self.rerank.as_ref()
    }

    /// The entities named in current memories of `scope`, most mentioned
    /// first (people, places, organisations, pets, things); with `as_of`
    /// (Unix ms), in the memories that were true then.
    pub fn graph_entities(&self, scope: &Scope, as_of: Option<i64>) -> Result<Vec<GraphEntity>> {
        scope.validate()?;
        self.store.graph_entities(scope, as_of)
    }

    /// The sessions of `scope`'s user (or agent), newest first: each with
    /// its ordinal (1 = the first), start, end and current memories, from
    /// the times its turns were said (`TurnToWrite::at`, `--at`,
    /// `timestamp`). Narrowed to the scope's agent when it names one.
    pub fn sessions(&self, scope: &Scope) -> Result<Vec<SessionInfo>> {
        scope.partition()?;
        self.store.sessions(scope)
    }

    /// One entity of `scope` with its relations that hold, the entities
    /// named with it and the memories naming it; None if no current memory
    /// names it. With `as_of` (Unix ms): the graph as it was then, the
    /// relations that held then (a later `works_at` ends an earlier one).
    pub fn entity_links(
        &self,
        scope: &Scope,
        name: &str,
        as_of: Option<i64>,
    ) -> Result<Option<EntityLinks>> {
        scope.validate()?;
        self.store.entity_links(scope, name, as_of)
    }

    /// This memory with another forgetting policy: default TTLs per kind
    /// and decay (`[forgetting]`, docs/forgetting.md).
    pub fn with_forgetting(mut self, forgetting: ForgettingConfig) -> Memory {
        self.forgetting = forgetting;
        self
    }

    pub fn forgetting(&self) -> &ForgettingConfig {
        &self.forgetting
    }

    /// The clock of the store: what TTLs count from and expiry is judged by.
    pub fn clock(&self) -> Clock {
        self.store.clock()
    }

    /// When a memory written now with a TTL such as "30d" expires. The
    /// message of a bad TTL says what to write; front ends prefix the
    /// name of their field.
    pub fn expiry_after(&self, ttl: &str) -> Result<i64> {
        memloop_core::expires_after(self.clock().now(), memloop_core::parse_ttl(ttl)?)
    }

    /// Gives a memory whose write named no expiry its kind's default TTL.
    fn default_ttl(&self, m: &mut NewMemory, now: i64) -> Result<()> {
        if m.expires_at.is_none() {
            if let Some(ttl) = self.forgetting.ttl_for(m.kind) {
                m.expires_at = Some(memloop_core::expires_after(now, ttl)?);
            }
        }
        Ok(())
    }

    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// Stores one memory as given (no extraction). An identical current
    /// memory in the same scope makes this a NOOP returning the existing id.
    pub fn add(&self, scope: &Scope, memory: NewMemory) -> Result<WriteResult> {
        let mut out = self.add_batch(scope, vec![memory])?;
        out.pop()
            .ok_or_else(|| memloop_core::Error::Internal("a write returned no result".into()))
    }

    /// Stores several memories with one batched embedding and one transaction.
    pub fn add_batch(&self, scope: &Scope, memories: Vec<NewMemory>) -> Result<Vec<WriteResult>> {
        scope.validate()?;
        for m in &memories {
            memloop_core::text::validate_text(&m.text)?;
        }
        let texts: Vec<&str> = memories.iter().map(|m| m.text.as_str()).collect();
        let vectors = self.embedder.embed_batch(&texts)?;
        let kinds: Vec<Kind> = memories.iter().map(|m| m.kind).collect();
        let written = self.add_embedded(scope, memories.into_iter().zip(vectors).collect())?;
        let logged: Vec<WriteLog> = written
            .iter()
            .zip(kinds)
            .map(|(w, kind)| WriteLog {
                id: &w.id,
                event: w.event,
                kind,
                bytes: w.memory.len(),
            })
            .collect();
        log_writes(scope, "add", true, &logged);
        Ok(written)
    }

    /// Stores memories whose vectors were computed by the caller (with this
    /// store's embedder: vectors of another model are not comparable).
    pub fn add_embedded(
        &self,
        scope: &Scope,
        memories: Vec<(NewMemory, Vec<f32>)>,
    ) -> Result<Vec<WriteResult>> {
        scope.validate()?;
        for (m, _) in &memories {
            memloop_core::text::validate_text(&m.text)?;
        }
        // Every add path (add, remember, the write pipeline, REST, MCP)
        // comes through here, so each gets the default TTLs.
        let mut memories = memories;
        let now = self.clock().now();
        for (m, _) in &mut memories {
            self.default_ttl(m, now)?;
            crate::expand::fill_links(&mut m.links, &m.text, &m.metadata);
        }
        self.fill_pieces(memories.iter_mut().map(|(m, _)| m))?;
        let written = self.store.insert(scope, memories)?;
        Ok(written
            .into_iter()
            .map(|(r, event)| WriteResult {
                id: r.id,
                memory: r.text,
                event,
                previous_memory: None,
            })
            .collect())
    }

    /// The current memory `id` of the default tenant (see [`Memory::get_in`]).
    pub fn get(&self, id: &str) -> Result<MemoryRecord> {
        self.get_in(Scope::DEFAULT_TENANT, id)
    }

    /// The current memory `id` of `tenant`. A deleted, superseded or
    /// expired one (its TTL passed, not yet deleted by gc) answers
    /// [`Error::NotCurrent`] (class not found, as Mem0 answers a deleted
    /// memory), naming what replaced it or when it expired; read it anyway
    /// with [`Memory::get_with`] and [`Lookup::IncludeDeleted`]. Another
    /// tenant's id is `NotFound`, exactly like an unknown one (the `_in`
    /// methods are what a multi-tenant front end such as the server
    /// calls). Every by-id method checks the id first
    /// (`validate_memory_id`): empty, over 256 bytes or with control
    /// characters is `InvalidInput`, whichever front end passed it.
    ///
    /// [`Error::NotCurrent`]: memloop_core::Error::NotCurrent
    pub fn get_in(&self, tenant: &str, id: &str) -> Result<MemoryRecord> {
        self.get_with(tenant, id, Lookup::Current)
    }

    /// A memory of `tenant` by id, as `lookup` says: the one rule every
    /// front end's get shares (the CLI's `--include-deleted`, REST's
    /// `?include_deleted=true`, MCP's `include_deleted`), kept by the
    /// store's seam (`LongTermStore::read`) so both backends answer alike.
    /// The write pipeline reads past versions through the store, not
    /// through this.
    pub fn get_with(&self, tenant: &str, id: &str, lookup: Lookup) -> Result<MemoryRecord> {
        validate_memory_id(id)?;
        self.store.read(tenant, id, lookup)
    }

    pub fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>> {
        self.store.list(query)
    }

    /// How many memories `list` pages through (its limit and offset ignored).
    pub fn count(&self, query: &ListQuery) -> Result<usize> {
        self.store.count(query)
    }

    /// The users, and agents without a user, that have current memories in `tenant`.
    pub fn entities(&self, tenant: &str) -> Result<Vec<Entity>> {
        self.store.entities(tenant)
    }

    /// Replaces a memory's text (re-embedding it); the old text stays in history.
    pub fn update(&self, id: &str, text: &str) -> Result<WriteResult> {
        // Both checked before the embedding is paid for.
        validate_memory_id(id)?;
        memloop_core::text::validate_text(text)?;
        let v = self.embedder.embed(text)?;
        let change = MemoryUpdate {
            text: Some((text.to_string(), v)),
            ..Default::default()
        };
        self.update_with(id, change)
    }

    /// Changes any of text, metadata, expiry and importance of a memory.
    pub fn update_with(&self, id: &str, change: MemoryUpdate) -> Result<WriteResult> {
        self.update_in(Scope::DEFAULT_TENANT, id, change)
    }

    /// `update_with` on a memory of `tenant` (another tenant's id: `NotFound`).
    pub fn update_in(&self, tenant: &str, id: &str, change: MemoryUpdate) -> Result<WriteResult> {
        validate_memory_id(id)?;
        let mut change = change;
        if let Some((text, _)) = &change.text {
            let metadata = match &change.metadata {
                Some(m) => m.clone(),
                None => self.store.get(tenant, id)?.metadata,
            };
            crate::expand::fill_links(&mut change.links, text, &metadata);
            if change.pieces.is_empty() {
                change.pieces = self
                    .embedder
                    .embed_pieces(&[text])?
                    .pop()
                    .unwrap_or_default();
            }
        }
        let (rec, old) = self.store.update(tenant, id, change)?;
        Ok(WriteResult {
            id: rec.id,
            memory: rec.text,
            event: Event::Update,
            previous_memory: Some(old),
        })
    }

    /// Ends a memory's validity: `get` answers not found from now on
    /// (`get_with` and `Lookup::IncludeDeleted` still read it), and its
    /// history stays readable.
    pub fn delete(&self, id: &str) -> Result<WriteResult> {
        self.delete_in(Scope::DEFAULT_TENANT, id)
    }

    /// `delete` of a memory of `tenant` (another tenant's id: `NotFound`).
    pub fn delete_in(&self, tenant: &str, id: &str) -> Result<WriteResult> {
        validate_memory_id(id)?;
        let rec = self.store.delete(tenant, id, None)?;
        Ok(WriteResult {
            id: rec.id,
            memory: rec.text,
            event: Event::Delete,
            previous_memory: None,
        })
    }

    /// Removes every memory of a scope; `purge` also drops their history,
    /// the scope's queued writes and the partition's saved index files, and
    /// checkpoints and truncates the WAL so no copy of the text is left in
    /// the data directory (`Busy` if another process kept reading the whole
    /// time: the rows are gone, run it again). Short-term sessions are not
    /// here: a purge also calls `ShortTermStore::forget_scope`.
    pub fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport> {
        self.store.forget(scope, purge)
    }

    pub fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        self.history_in(Scope::DEFAULT_TENANT, id)
    }

    /// `history` of a memory of `tenant` (another tenant's id: `NotFound`).
    pub fn history_in(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>> {
        validate_memory_id(id)?;
        self.store.history(tenant, id)
    }

    /// Replaces the current memory `old_id` by `new` in `scope` in one
    /// transaction (see `LongTermStore::supersede`), giving `new` its
    /// kind's default TTL when it names no expiry, as every add does.
    pub fn supersede(
        &self,
        scope: &Scope,
        old_id: &str,
        new: (NewMemory, Vec<f32>),
        reason: &str,
    ) -> Result<(MemoryRecord, MemoryRecord)> {
        let (mut m, v) = new;
        self.default_ttl(&mut m, self.clock().now())?;
        crate::expand::fill_links(&mut m.links, &m.text, &m.metadata);
        self.fill_pieces(std::iter::once(&mut m))?;
        self.store.supersede(scope, old_id, (m, v), reason)
    }

    /// Embeds the later pieces of the long texts among `memories` that
    /// have none yet (one batch), so that every write path stores them.
    fn fill_pieces<'a>(&self, memories: impl Iterator<Item = &'a mut NewMemory>) -> Result<()> {
        let mut todo: Vec<&mut NewMemory> = memories.filter(|m| m.pieces.is_empty()).collect();
        if todo.is_empty() {
            return Ok(());
        }
        let texts: Vec<&str> = todo.iter().map(|m| m.text.as_str()).collect();
        let pieces = self.embedder.embed_pieces(&texts)?;
        for (m, p) in todo.iter_mut().zip(pieces) {
            m.pieces = p;
        }
        Ok(())
    }

    /// Every vector of each text, for the paths that store texts as they
    /// are (reindex, import): its first and its later pieces.
    pub fn embed_all(&self, texts: &[&str]) -> Result<Vec<Embedded>> {
        embed_all(self.embedder.as_ref(), texts)
    }

    pub fn stats(&self) -> Result<Stats> {
        self.store.stats()
    }

    /// Saves the HNSW indexes of large partitions so the next open is fast.
    /// (Also done on drop; never needed for durability.)
    pub fn flush(&self) -> Result<()> {
        self.store.flush()
    }

    /// Deletes the memories whose TTL has passed (from the database and
    /// every index; history records each as expired), then saves derived
    /// indexes and prunes the change log they no longer need. Searches
    /// and writes go on meanwhile (see `LongTermStore::expire`); while
    /// it runs it counts as a busy thread, so a search does not split its
    /// keyword walk for a core gc holds (`memloop_longterm::par`).
    pub fn gc(&self) -> Result<GcReport> {
        let _busy = memloop_longterm::par::Busy::start();
        let expired = self.store.expire()?;
        let pruned = self.store.compact()?;
        Ok(GcReport {
            expired_deleted: expired.memories_deleted,
            index_log_entries_pruned: pruned,
        })
    }

    /// The long-term store behind the seam: for the write pipeline's
    /// supersessions and outbox, and bulk paths that bring their own vectors.
    pub fn store(&self) -> &dyn LongTermStore {
        self.store.as_ref()
    }
}

/// Each text's first vector and later pieces, in two batches.
fn embed_all(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Embedded>> {
    let vectors = embedder.embed_batch(texts)?;
    let pieces = embedder.embed_pieces(texts)?;
    if vectors.len() != texts.len() || pieces.len() != texts.len() {
        return Err(Error::Embedding(
            "the embedder returned a wrong number of vectors".into(),
        ));
    }
    Ok(vectors
        .into_iter()
        .zip(pieces)
        .map(|(vector, pieces)| Embedded { vector, pieces })
        .collect())
}
