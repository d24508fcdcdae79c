//! The memory commands: each opens the store, does one thing, prints it.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use memloop::{
    Config, Error, Filter, Kind, ListQuery, Lookup, Memory, MemoryUpdate, NewMemory, Scope,
    SearchQuery,
};

use crate::output::Output;
use crate::ScopeArgs;

impl ScopeArgs {
    pub fn scope(&self) -> memloop::Result<Scope> {
        let scope = Scope {
            tenant: Scope::DEFAULT_TENANT.to_string(),
            user_id: self.user.clone(),
            agent_id: self.agent.clone(),
            session_id: self.session.clone(),
        };
        scope.validate()?;
        Ok(scope)
    }
}

#[derive(Args)]
pub struct AddArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Texts to store, one memory each.
    texts: Vec<String>,
    /// Read memories from a file, one per non-empty line ("-" for stdin).
    #[arg(long)]
    file: Option<PathBuf>,
    #[arg(long, default_value = "fact")]
    kind: String,
    /// Metadata as a JSON object, e.g. '{"topic":"food"}'.
    #[arg(long)]
    metadata: Option<String>,
    /// Forget automatically after this long: 30s, 15m, 12h, 7d, 2w.
    #[arg(long)]
    ttl: Option<String>,
    /// Importance from 0 to 1 (default 0.5).
    #[arg(long)]
    importance: Option<f32>,
    /// When it was said (RFC 3339, YYYY-MM-DD or Unix seconds), to write a
    /// past conversation with its own times: the memories' valid_from,
    /// which places their session on the time axis (`memloop sessions`).
    #[arg(long, value_name = "DATE")]
    at: Option<String>,
}

#[derive(Args)]
pub struct SearchArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    query: Vec<String>,
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Filter, e.g. 'topic = "food" AND rating >= 4' (or JSON: '{"topic": "food"}').
    #[arg(long)]
    filter: Option<String>,
    /// Only these kinds (fact, episode, procedure); repeatable.
    #[arg(long)]
    kind: Vec<String>,
    /// Drop hits whose score (0..1) is below this.
    #[arg(long, default_value_t = 0.0)]
    min_score: f32,
    /// Also search deleted and superseded memories.
    #[arg(long)]
    include_superseded: bool,
    /// Search what was true at this date (YYYY-MM-DD or RFC 3339).
    #[arg(long)]
    as_of: Option<String>,
    /// Follow entity links from the top hits (default: `[search] expand`).
    #[arg(long, value_parser = clap::builder::BoolishValueParser::new())]
    expand: Option<bool>,
    /// Links followed from a hit when expanding, 1 to 3 (turns expansion on).
    #[arg(long)]
    hops: Option<usize>,
    /// Rerank with the configured `[rerank]` reranker (false: skip it).
    #[arg(long, value_parser = clap::builder::BoolishValueParser::new())]
    rerank: Option<bool>,
    /// Fused hits the reranker reorders, 1 to 200 (default: `[rerank] top_n`).
    #[arg(long)]
    rerank_top_n: Option<usize>,
    /// When the question is asked, for the time its words name ("last
    /// week", "the last session"): YYYY-MM-DD (its end) or RFC 3339. Default: now.
    #[arg(long)]
    now: Option<String>,
    /// What a time the query names does: boost (memories in its window rank
    /// higher), filter (only those are searched) or off (words not read).
    /// Default: boost (docs/retrieval.md).
    #[arg(long)]
    time_mode: Option<String>,
}

#[derive(Args)]
pub struct ListArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    #[arg(long)]
    filter: Option<String>,
    #[arg(long)]
    kind: Vec<String>,
    #[arg(long, default_value_t = 100)]
    limit: usize,
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Include deleted and superseded memories.
    #[arg(long)]
    include_superseded: bool,
    /// The memories that were true at this date (YYYY-MM-DD or RFC 3339).
    #[arg(long)]
    as_of: Option<String>,
}

#[derive(Args)]
pub struct UpdateArgs {
    id: String,
    /// The new text (omit to change only metadata).
    text: Vec<String>,
    /// Replace the metadata with this JSON object.
    #[arg(long)]
    metadata: Option<String>,
}

fn open(config: &Config) -> anyhow::Result<Memory> {
    Ok(Memory::open_with(config)?)
}

fn parse_metadata(s: Option<&str>) -> memloop::Result<serde_json::Value> {
    match s {
        None => Ok(serde_json::json!({})),
        Some(s) => {
            let v: serde_json::Value = serde_json::from_str(s)
                .map_err(|e| Error::invalid(format!("--metadata is not valid JSON ({e}): give an object like '{{\"topic\":\"food\"}}'")))?;
            if !v.is_object() {
                return Err(Error::invalid(
                    "--metadata must be a JSON object, like '{\"topic\":\"food\"}'",
                ));
            }
            Ok(v)
        }
    }
}

pub fn parse_filter(s: Option<&str>) -> memloop::Result<Option<Filter>> {
    match s.map(str::trim) {
        None => Ok(None),
        Some(s) if s.starts_with('{') => {
            let v: serde_json::Value = serde_json::from_str(s)
                .map_err(|e| Error::invalid(format!("bad filter: not valid JSON: {e}")))?;
            Ok(Some(Filter::from_json(&v)?))
        }
        Some(s) => Ok(Some(Filter::parse(s)?)),
    }
}

fn parse_kinds(kinds: &[String]) -> memloop::Result<Vec<Kind>> {
    kinds.iter().map(|k| Kind::parse(k)).collect()
}

/// Parses 30s, 15m, 12h, 7d, 2w into milliseconds (at most 100 years):
/// the library's parser, its message naming the option.
fn parse_ttl(s: &str) -> memloop::Result<i64> {
    memloop::parse_ttl(s).map_err(|e| match e {
        Error::InvalidInput(m) => Error::invalid(format!("--ttl {m}")),
        other => other,
    })
}

/// Lines of a file (or stdin), refusing invalid UTF-8 with the line it is on.
fn read_lines(path: &PathBuf) -> anyhow::Result<Vec<String>> {
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading stdin")?;
    } else {
        bytes = std::fs::read(path).map_err(|e| {
            Error::invalid(format!(
                "cannot read {}: {e}: check the path given to --file",
                path.display()
            ))
        })?;
    }
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let text = std::str::from_utf8(line).map_err(|_| {
            Error::invalid(format!(
                "{} line {} is not valid UTF-8: convert the file to UTF-8 (e.g. iconv -t UTF-8); nothing was stored",
                path.display(),
                i + 1
            ))
        })?;
        let text = text.trim_end_matches('\r');
        if !text.trim().is_empty() {
            out.push(text.to_string());
        }
    }
    Ok(out)
}

pub fn add(config: &Config, out: &Output, a: AddArgs) -> anyhow::Result<()> {
    let scope = a.scope.scope()?;
    let mut texts = a.texts;
    if let Some(f) = &a.file {
        texts.extend(read_lines(f)?);
    }
    if texts.is_empty() {
        return Err(
            Error::invalid("nothing to add: give the text as arguments or with --file").into(),
        );
    }
    let kind = Kind::parse(&a.kind)?;
    let metadata = parse_metadata(a.metadata.as_deref())?;
    let expires_at = a
        .ttl
        .as_deref()
        .map(parse_ttl)
        .transpose()?
        .map(|ms| memloop::expires_after(memloop::now_millis(), ms))
        .transpose()?;
    let said = a.at.as_deref().map(parse_at).transpose()?;
    let memories: Vec<NewMemory> = texts
        .into_iter()
        .map(|t| {
            let mut m = NewMemory::text(t).kind(kind).metadata(metadata.clone());
            m.expires_at = expires_at;
            m.importance = a.importance;
            m.valid_from = said;
            m
        })
        .collect();
    // Validate everything before storing anything: a bad line stores nothing.
    for m in &memories {
        memloop::text::validate_text(&m.text)?;
    }
    // One batch, one transaction: a failure stores nothing.
    let results = open(config)?.add_batch(&scope, memories)?;
    out.writes(&results)
}

pub fn search(config: &Config, out: &Output, a: SearchArgs) -> anyhow::Result<()> {
    let scope = a.scope.scope()?;
    let mut q = SearchQuery::new(scope, a.query.join(" "));
    q.top_k = a.top_k;
    q.filter = parse_filter(a.filter.as_deref())?;
    q.kinds = parse_kinds(&a.kind)?;
    q.min_score = a.min_score;
    q.include_superseded = a.include_superseded;
    q.as_of = a.as_of.as_deref().map(parse_as_of).transpose()?;
    let mode = memloop::QueryTimeMode::parse_field(a.time_mode.as_deref(), "--time-mode")?;
    let now = match a.now.as_deref() {
        Some(s) => memloop::parse_reference_time(s, "--now")?,
        None => memloop::now_millis(),
    };
    let memory = open(config)?;
    q.expand = memory.expansion_asked(a.expand, a.hops)?;
    q.rerank = memory.rerank_asked(a.rerank, a.rerank_top_n)?;
    let time = memory.read_time(&mut q, now, mode)?;
    let searched = memory.search_traced(&q)?;
    out.hits(&searched.hits, time.as_ref(), searched.rerank.as_ref())
}

pub fn get(config: &Config, out: &Output, id: &str, lookup: Lookup) -> anyhow::Result<()> {
    let memory = open(config)?;
    let record = memory.get_with(Scope::DEFAULT_TENANT, id, lookup)?;
    out.record(&record, memory.clock().now())
}

pub fn list(config: &Config, out: &Output, a: ListArgs) -> anyhow::Result<()> {
    let q = ListQuery {
        scope: a.scope.scope()?,
        filter: parse_filter(a.filter.as_deref())?,
        kinds: parse_kinds(&a.kind)?,
        include_superseded: a.include_superseded,
        as_of: a.as_of.as_deref().map(parse_as_of).transpose()?,
        limit: a.limit,
        offset: a.offset,
    };
    out.records(&open(config)?.list(&q)?)
}

/// `--at DATE`: when something was said.
pub fn parse_at(s: &str) -> memloop::Result<i64> {
    memloop::time::parse_said_at("--at", &serde_json::Value::String(s.to_string()))
}

/// A bare date means the end of that day: what was true on it.
pub(crate) fn parse_as_of(s: &str) -> memloop::Result<i64> {
    memloop::parse_reference_time(s, "--as-of")
}

pub fn update(config: &Config, out: &Output, a: UpdateArgs) -> anyhow::Result<()> {
    let text = a.text.join(" ");
    let metadata = a
        .metadata
        .as_deref()
        .map(|m| parse_metadata(Some(m)))
        .transpose()?;
    if text.trim().is_empty() && metadata.is_none() {
        return Err(Error::invalid("nothing to update: give the new text, or --metadata").into());
    }
    // Before the model is loaded for the new text (the facade checks it too).
    memloop::validate_memory_id(&a.id)?;
    let memory = open(config)?;
    let result = if text.trim().is_empty() {
        memory.update_with(
            &a.id,
            MemoryUpdate {
                metadata,
                ..Default::default()
            },
        )?
    } else {
        memloop::text::validate_text(&text)?;
        let v = memory.embedder().embed(&text)?;
        memory.update_with(
            &a.id,
            MemoryUpdate {
                text: Some((text, v)),
                metadata,
                ..Default::default()
            },
        )?
    };
    out.writes(std::slice::from_ref(&result))
}

pub fn delete(config: &Config, out: &Output, id: &str) -> anyhow::Result<()> {
    let r = open(config)?.delete(id)?;
    out.writes(std::slice::from_ref(&r))
}

pub fn history(config: &Config, out: &Output, id: &str) -> anyhow::Result<()> {
    out.history(&open(config)?.history(id)?)
}

pub fn forget(config: &Config, out: &Output, scope: &ScopeArgs, purge: bool) -> anyhow::Result<()> {
    let scope = scope.scope()?;
    let report = open(config)?.forget(&scope, purge)?;
    // A purge also forgets the user's short-term sessions when they live in
    // a shared buffer (Redis); the in-process buffer dies with each process,
    // so there is nothing of it to clear here.
    let sessions_cleared = match (&config.short_term.url, purge) {
        // `open`, not `build`: a Redis that is down is then named (address,
        // no password), and the message says what was done and what was not.
        (Some(_), true) => Some(config.short_term.open()?.forget_scope(&scope).map_err(
            |e| match e {
                Error::Remote(m) => Error::Remote(format!(
                    "the memories were purged, but not the short-term sessions: {m}; \
                     run the purge again once it is back"
                )),
                other => other,
            },
        )?),
        _ => None,
    };
    if out.json {
        let mut v = serde_json::to_value(&report)?;
        if let (Some(n), Some(obj)) = (sessions_cleared, v.as_object_mut()) {
            obj.insert("short_term_sessions_cleared".into(), n.into());
        }
        return out.json_value(&v);
    }
    println!(
        "forgot {} memories{}{}",
        report.memories_deleted,
        if purge {
            format!(" and {} history entries", report.history_deleted)
        } else {
            String::new()
        },
        sessions_cleared.map_or_else(String::new, |n| format!(
            "; cleared {n} short-term sessions"
        ))
    );
    Ok(())
}

pub fn stats(config: &Config, out: &Output) -> anyhow::Result<()> {
    let s = open(config)?.stats()?;
    if out.json {
        return out.json_value(&s);
    }
    println!("data dir:    {}", config.data_dir.display());
    println!(
        "memories:    {} ({} current, {} deleted or superseded, {} expired awaiting gc)",
        s.memories, s.current, s.superseded, s.expired
    );
    let mut kinds: Vec<_> = s.by_kind.iter().collect();
    kinds.sort();
    for (k, n) in kinds {
        println!("  {k:<10} {n}");
    }
    println!("partitions:  {}", s.partitions);
    println!("history:     {} entries", s.history_entries);
    println!("database:    {:.1} MB", s.database_bytes as f64 / 1e6);
    println!("embedder:    {}", s.embedder);
    println!("schema:      v{}", s.schema_version);
    Ok(())
}

pub fn reindex(config: &Config, out: &Output) -> anyhow::Result<()> {
    let bar = crate::output::progress_bar(out, 0, "re-embedding");
    let n = Memory::reindex(config, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    // Memories written before the store kept a graph get their links.
    let bar = crate::output::progress_bar(out, 0, "linking");
    let linked = open(config)?.relink(&|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if out.json {
        return out.json_value(&serde_json::json!({ "reindexed": n, "linked": linked }));
    }
    println!("re-embedded {n} memories; {linked} without entity links gained them");
    Ok(())
}

pub fn gc(config: &Config, out: &Output) -> anyhow::Result<()> {
    let memory = open(config)?;
    let llm = config.llm.as_ref().map(|c| c.build()).transpose()?;
    let pipeline = memloop::WritePipeline::new(llm.map(std::sync::Arc::from));
    let replayed = pipeline.drain_outbox(&memory, 10_000, true)?;
    let waiting = memory.store().outbox_len()?;
    let report = memory.gc()?;
    if out.json {
        return out.json_value(&serde_json::json!({
            "expired_deleted": report.expired_deleted,
            "index_log_entries_pruned": report.index_log_entries_pruned,
            "outbox_events_applied": replayed.len(),
            "outbox_waiting": waiting,
        }));
    }
    println!(
        "{} expired memories deleted; indexes saved; {} change-log entries pruned; {} queued writes applied, {waiting} still waiting",
        report.expired_deleted,
        report.index_log_entries_pruned,
        replayed.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_units() {
        assert_eq!(parse_ttl("30s").unwrap(), 30_000);
        assert_eq!(parse_ttl("2w").unwrap(), 2 * 604_800_000);
        assert_eq!(parse_ttl(" 7d ").unwrap(), 7 * 86_400_000);
        for bad in [
            "",
            "  ",
            "d",
            "-1d",
            "5y",
            "1.5h",
            "9999999999999999w",
            "9999999999d",
            "3日",
            "日",
            "5dé",
        ] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
    }
}
