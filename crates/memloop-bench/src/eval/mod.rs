//! `memloop eval`: retrieval quality on long conversations. Each
//! conversation gets a fresh store; every turn is stored as an episode with
//! its speaker, session date and turn id; every question is asked in that
//! conversation's scope and the ranked turns are scored against the
//! question's evidence turns. Baselines (BM25 only, dense only) run on the
//! same stores in the same run.

mod cache;
pub(crate) mod format;
mod gate;
mod locomo;
mod metrics;
mod replay;
mod report;
mod suite;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use memloop::MAX_TEXT_BYTES;
use memloop::{
    Config, Durability, Embedder, Kind, LocalEmbedder, Memory, NewMemory, Scope, SearchQuery,
};
use serde_json::{json, Value};

use crate::output::Output;
use crate::run_store::RunStore;
use format::Conversation;
use metrics::{dedup_in_order, ndcg_at, percentile, recall_at, reciprocal_rank, KS};

#[derive(Subcommand)]
pub enum EvalCommand {
    /// LoCoMo's JSON (e.g. ../shared/data/locomo-dev.json).
    Locomo(EvalArgs),
    /// The generic format (docs/eval-format.md).
    Jsonl(EvalArgs),
    /// Several datasets in one run, one table: every category of each, the
    /// default against both baselines (docs/retrieval.md).
    Suite(suite::SuiteArgs),
    /// The persistence gate: which turns it keeps against the turns questions cite (docs/gate.md).
    Gate(gate::GateArgs),
    /// Token economy: one conversation through the loop, input tokens against the full history.
    Tokens(replay::ReplayArgs),
}

#[derive(Args)]
pub struct EvalArgs {
    file: PathBuf,
    /// Write eval.json and recall.svg (recall@k per method) into this folder.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write every question's evidence, its top-10 turns and the default method's hits
    /// (each with its session, length and signals) to this JSONL file.
    #[arg(long)]
    details: Option<PathBuf>,
    /// Also write the conversations in the generic format to this file.
    #[arg(long)]
    write_jsonl: Option<PathBuf>,
    #[command(flatten)]
    method: MethodArgs,
}

/// How the default method searches, and how much of each dataset is asked:
/// the same for `eval locomo`, `eval jsonl` and `eval suite`.
#[derive(Args)]
pub(crate) struct MethodArgs {
    /// Only the first N conversations.
    #[arg(long)]
    limit: Option<usize>,
    /// Fusion weight of the vector signal in the default method (default: the search default).
    #[arg(long)]
    vector_weight: Option<f32>,
    /// Fusion weight of the keyword signal in the default method (default: the search default).
    #[arg(long)]
    keyword_weight: Option<f32>,
    /// Score added to turns spoken by a person the question names (default: the search default, off).
    #[arg(long)]
    speaker_boost: Option<f32>,
    /// Weight of the decay signal (recency × importance × use) in the
    /// default method (default: the search default, 0: off). Decay is
    /// judged at each question's time (its date, else just after the
    /// conversation's last turn), and the eval's searches count as
    /// retrievals, as a user's would.
    #[arg(long)]
    decay_weight: Option<f32>,
    /// Decay's half-life in days, with --decay-weight.
    #[arg(long, default_value_t = 30.0)]
    decay_half_life_days: f64,
    /// Turns before and after each turn indexed with it as keyword context.
    #[arg(long, default_value_t = EPISODE_CONTEXT_TURNS)]
    context: usize,
    /// BM25 weight of context terms relative to the turn's own.
    #[arg(long, default_value_t = 0.5)]
    context_weight: f32,
    #[command(flatten)]
    expand: ExpandArgs,
    /// What a time a question names does in the default method: boost,
    /// filter or off (default: the search default). It is read against the
    /// question's date, else the moment after the conversation's last turn.
    #[arg(long)]
    time_mode: Option<String>,
    /// The boost's weight with --time-mode boost (default: memloop::DEFAULT_TIME_BOOST).
    #[arg(long)]
    time_boost: Option<f32>,
    /// Keep the vectors this run computes in this folder (one file per
    /// model) and read back those a run before computed: a ranking
    /// experiment then runs without embedding again (and the report's
    /// query-embedding latency is the cache's). Start from an empty folder
    /// after changing the embedder's code.
    #[arg(long)]
    embed_cache: Option<PathBuf>,
}

/// Entity expansion in the default method (the baselines never expand).
#[derive(Args)]
struct ExpandArgs {
    /// Follow entity links from the top hits: true or false (default: the search default).
    #[arg(long, value_parser = clap::builder::BoolishValueParser::new())]
    expand: Option<bool>,
    /// Links followed from a hit (with --expand true).
    #[arg(long)]
    expand_hops: Option<usize>,
    /// Top hits whose entities are followed.
    #[arg(long)]
    expand_seeds: Option<usize>,
    /// A linked memory's score relative to the hit it came from.
    #[arg(long)]
    expand_weight: Option<f32>,
    /// Entities named by more memories than this are not followed.
    #[arg(long)]
    expand_max_entity: Option<usize>,
    /// Memories taken per entity of a hit.
    #[arg(long)]
    expand_per_entity: Option<usize>,
}

impl MethodArgs {
    /// The default method's decay, when asked for (None: the search default).
    fn decay(&self) -> Option<memloop::Decay> {
        self.decay_weight.map(|weight| memloop::Decay {
            weight,
            half_life_ms: (self.decay_half_life_days * 86_400_000.0) as i64,
        })
    }
}

impl ExpandArgs {
    fn expansion(&self) -> memloop::graph::Expansion {
        use memloop::graph::Expansion;
        let mut e = match self.expand {
            Some(true) => Expansion::ON,
            Some(false) => Expansion::OFF,
            None => memloop::DEFAULT_EXPANSION,
        };
        let base = Expansion::ON;
        if e.is_on() || self.expand_hops.is_some() {
            e.hops = self.expand_hops.unwrap_or(e.hops.max(base.hops));
        }
        e.seeds = self.expand_seeds.unwrap_or(e.seeds);
        e.weight = self.expand_weight.unwrap_or(e.weight);
        e.limits.max_entity_memories = self
            .expand_max_entity
            .unwrap_or(e.limits.max_entity_memories);
        e.limits.per_entity = self.expand_per_entity.unwrap_or(e.limits.per_entity);
        e
    }
}

/// A retrieval method: how much each signal weighs in the fusion.
struct Method {
    name: &'static str,
    vector_weight: f32,
    keyword_weight: f32,
}

const METHODS: [Method; 3] = [
    Method {
        name: "default",
        vector_weight: 1.0,
        keyword_weight: 1.0,
    },
    Method {
        name: "bm25",
        vector_weight: 0.0,
        keyword_weight: 1.0,
    },
    Method {
        name: "dense",
        vector_weight: 1.0,
        keyword_weight: 0.0,
    },
];

/// What one method returned for one question.
struct Answer {
    conversation: String,
    question: String,
    category: Option<String>,
    category_name: Option<String>,
    adversarial: bool,
    ranked: Vec<String>,
    evidence: HashSet<String>,
    /// Tokens of the top-k memories' texts, per k in KS.
    tokens: Vec<usize>,
    /// The default method's hits as `--details` writes them (each with its
    /// session, length and signals), so a ranking idea can be tried over
    /// them before it is built; empty for the baselines.
    hits: Vec<Value>,
}

pub fn run(config: &Config, out: &Output, cmd: EvalCommand) -> anyhow::Result<()> {
    let (args, dataset) = match cmd {
        EvalCommand::Locomo(a) => {
            let (conversations, skips) = locomo::load(&a.file)?;
            let dataset = Dataset::new("locomo", conversations, skips);
            (a, dataset)
        }
        EvalCommand::Jsonl(a) => {
            let conversations = format::read_jsonl(&a.file)?;
            (a, Dataset::new("jsonl", conversations, Default::default()))
        }
        EvalCommand::Suite(a) => return suite::run(config, out, &a),
        EvalCommand::Gate(a) => return gate::run(out, &a),
        EvalCommand::Tokens(a) => return replay::run(config, out, &a),
    };
    let mut dataset = dataset;
    if let Some(n) = args.method.limit {
        dataset.conversations.truncate(n);
    }
    if let Some(p) = &args.write_jsonl {
        format::write_jsonl(p, &dataset.conversations)?;
    }
    let embedder = crate::local_model::load(config, "memloop eval")?;
    let report = evaluate(
        config,
        out,
        &embedder,
        &args.method,
        dataset,
        args.details.as_deref(),
    )?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            dir.join("eval.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        std::fs::write(dir.join("recall.svg"), report::chart(&report))?;
    }
    if out.json {
        out.json_value(&report)
    } else {
        report::table(&report, args.out.as_deref());
        Ok(())
    }
}

/// Conversations to evaluate, what loading them skipped, and the name the
/// report gives them (`locomo` keeps the paper's anchor in the table).
pub(crate) struct Dataset {
    name: String,
    conversations: Vec<Conversation>,
    skips: locomo::SkipReport,
}

impl Dataset {
    fn new(name: &str, conversations: Vec<Conversation>, skips: locomo::SkipReport) -> Self {
        Dataset {
            name: name.into(),
            conversations,
            skips,
        }
    }
}

/// One dataset through the default method and both baselines, each
/// conversation in a fresh store: the report `--json` prints.
pub(crate) fn evaluate(
    config: &Config,
    out: &Output,
    embedder: &Arc<LocalEmbedder>,
    args: &MethodArgs,
    dataset: Dataset,
    details: Option<&Path>,
) -> anyhow::Result<Value> {
    let Dataset {
        name: dataset,
        conversations,
        mut skips,
    } = dataset;
    let time_mode = memloop::QueryTimeMode::parse_field(args.time_mode.as_deref(), "--time-mode")?;
    let mut times = TimesRead::default();
    let started = Instant::now();
    let work = tempfile::Builder::new().prefix("memloop-eval-").tempdir()?;
    let run = RunStore::new(&config.store, "eval");
    let mut answers: Vec<Vec<Answer>> = METHODS.iter().map(|_| Vec::new()).collect();
    let mut latencies: Vec<Latency> = Vec::new();
    let cache = match &args.embed_cache {
        Some(dir) => Some(Arc::new(cache::CachedEmbedder::open(
            embedder.clone(),
            dir,
        )?)),
        None => None,
    };
    let vectors: Arc<dyn Embedder> = match &cache {
        Some(c) => c.clone(),
        None => embedder.clone(),
    };
    for (i, conv) in conversations.iter().enumerate() {
        // The store's clock is the conversation's: just after its last
        // turn, then each question's time (what decay is judged at).
        let clock = memloop::time::Clock::manual(asked_after(conv));
        let memory = ingest(
            out,
            &vectors,
            (&run, &work.path().join(format!("conv-{i}")), Some(&clock)),
            conv,
            (args.context, args.context_weight),
            &mut skips.split_turns,
        )?;
        let scope = run.scope(&conv.id);
        let defaults = SearchQuery::new(scope.clone(), "");
        let weights = (
            args.vector_weight.unwrap_or(defaults.vector_weight),
            args.keyword_weight.unwrap_or(defaults.keyword_weight),
            args.speaker_boost.unwrap_or(defaults.speaker_boost),
        );
        ask(
            out,
            (&memory, &scope, &clock),
            (embedder, vectors.as_ref()),
            conv,
            (weights, args.decay()),
            args.expand.expansion(),
            (time_mode, args.time_boost, &mut times),
            &mut answers,
            &mut latencies,
        )?;
        run.clean(&memory, &scope)?;
        if let Some(c) = &cache {
            c.save()?;
        }
    }
    let mut report = summarize(&answers[0]);
    report["baselines"] = json!({
        METHODS[1].name: summarize(&answers[1]),
        METHODS[2].name: summarize(&answers[2]),
    });
    let sorted = |f: fn(&Latency) -> f64| {
        let mut v: Vec<f64> = latencies.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (total, embed, search) = (
        sorted(|l| l.embed_ms + l.search_ms),
        sorted(|l| l.embed_ms),
        sorted(|l| l.search_ms),
    );
    report["search_latency_ms"] = json!({"p50": percentile(&total, 0.5), "p99": percentile(&total, 0.99),
        "includes": "query embedding and hybrid search",
        "embedding": {"p50": percentile(&embed, 0.5), "p99": percentile(&embed, 0.99)},
        "search_top50": {"p50": percentile(&search, 0.5), "p99": percentile(&search, 0.99)}});
    report["time"] = json!({
        "mode": time_mode.as_str(),
        "boost": args.time_boost.unwrap_or(memloop::DEFAULT_TIME_BOOST),
        "questions_with_time": times.read,
        "with_window": times.windows,
        "examples": times.examples,
    });
    report["conversations"] = json!(conversations.len());
    report["skipped"] = json!({
        "unparseable_evidence": skips.unparseable_evidence,
        "unknown_evidence": skips.unknown_evidence,
        "questions_without_evidence": skips.questions_without_evidence,
        "split_turns": skips.split_turns,
    });
    report["dataset"] = json!(dataset);
    report["store"] = json!(run.backend());
    report["elapsed_s"] = json!(started.elapsed().as_secs_f64());
    if let Some(path) = details {
        write_details(path, &answers)?;
    }
    Ok(report)
}

/// One hit of the default method in `--details`: its turns, session,
/// length in words, who said it, its score and each signal's part.
fn hit_detail(h: &memloop::SearchHit) -> Value {
    let r = &h.record;
    json!({"turns": r.provenance.turn_ids, "session": r.provenance.session_id,
        "words": r.text.split_whitespace().count(), "speaker": r.metadata.get("speaker"),
        "score": h.score, "scores": h.scores})
}

/// Each question's evidence and top 10 turns, with the rank of its first
/// evidence turn under each method (so a miss of the default can be read
/// beside what each signal alone found), and the default's hits (top 50)
/// with their sessions and signals.
fn write_details(path: &Path, answers: &[Vec<Answer>]) -> anyhow::Result<()> {
    let first_hit = |a: &Answer| a.ranked.iter().position(|t| a.evidence.contains(t));
    let lines: Vec<String> = answers[0]
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut evidence: Vec<&String> = a.evidence.iter().collect();
            evidence.sort();
            let mut line = json!({"conversation": a.conversation, "question": a.question,
                "category": a.category, "evidence": evidence,
                "top10": a.ranked.iter().take(10).collect::<Vec<_>>(),
                "recall_at_10": recall_at(&a.ranked, &a.evidence, 10),
                "hits": a.hits});
            for (m, method) in METHODS.iter().enumerate() {
                line["first_evidence_rank"][method.name] =
                    json!(answers[m].get(i).and_then(first_hit));
            }
            line.to_string()
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n")?;
    Ok(())
}

/// Turns on each side of a turn that are indexed with it (as keyword context):
/// a reply such as "Yes, last Saturday!" is found through what it answers.
/// ±2 beat ±1 and ±3 on the dev split (docs/retrieval.md).
pub(crate) const EPISODE_CONTEXT_TURNS: usize = 2;

/// The text stored for a turn: who said it, and what.
fn turn_text(speaker: &str, text: &str) -> String {
    format!("{speaker}: {text}")
}

pub(crate) fn ingest(
    out: &Output,
    embedder: &Arc<dyn Embedder>,
    (run, dir, clock): (&RunStore, &Path, Option<&memloop::time::Clock>),
    conv: &Conversation,
    (context, context_weight): (usize, f32),
    split_turns: &mut usize,
) -> anyhow::Result<Memory> {
    let mut options = run.options().with_durability(Durability::Process);
    if let Some(c) = clock {
        options = options.with_clock(c.clone());
    }
    options.context_weight = context_weight;
    let memory = Memory::with_embedder(dir, embedder.clone(), options)?;
    let scope = run.scope(&conv.id);
    let total: usize = conv.sessions.iter().map(|s| s.turns.len()).sum();
    let bar = crate::output::progress_bar(out, total as u64, &format!("ingest {}", conv.id));
    let mut batch = Vec::new();
    for s in &conv.sessions {
        let date = s.date.as_deref().and_then(memloop::filter::parse_date);
        for (ti, t) in s.turns.iter().enumerate() {
            let lo = ti.saturating_sub(context);
            let hi = (ti + context + 1).min(s.turns.len());
            let around: Vec<String> = (lo..hi)
                .filter(|&j| j != ti)
                .map(|j| turn_text(&s.turns[j].speaker, &s.turns[j].text))
                .collect();
            // A turn longer than a memory may be is stored in pieces, each
            // citing the turn: finding any piece finds the turn.
            let said = turn_text(&t.speaker, &t.text);
            let pieces = pieces(&said, MAX_TEXT_BYTES);
            if pieces.len() > 1 {
                *split_turns += 1;
            }
            let context = (!around.is_empty())
                .then(|| prefix(&around.join("\n"), MAX_TEXT_BYTES).to_string());
            for piece in pieces {
                let mut m = NewMemory::text(piece).kind(Kind::Episode).metadata(json!({
                    "session": s.id, "speaker": t.speaker, "date": s.date,
                }));
                m.valid_from = t
                    .timestamp
                    .as_deref()
                    .and_then(memloop::filter::parse_date)
                    .or(date);
                m.provenance.session_id = Some(s.id.clone());
                m.provenance.turn_ids = vec![t.id.clone()];
                m.provenance.source = "import".into();
                m.context = context.clone();
                batch.push(m);
            }
        }
    }
    for chunk in batch.chunks(128) {
        memory.add_batch(&scope, chunk.to_vec())?;
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(memory)
}

/// `text` cut at white space (or any char boundary) into pieces of at most
/// `max` bytes.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let head = prefix(rest, max);
        let cut = head
            .rfind(char::is_whitespace)
            .filter(|&i| i > max / 2)
            .unwrap_or(head.len());
        out.push(rest[..cut].trim_end());
        rest = rest[cut..].trim_start();
    }
    if !rest.trim().is_empty() || out.is_empty() {
        out.push(rest);
    }
    out
}

/// The longest prefix of `text` of at most `max` bytes, on a char boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// How many questions named a time, how many of those got a window, and a
/// few of the readings (to see what was read).
#[derive(Default)]
struct TimesRead {
    read: usize,
    windows: usize,
    examples: Vec<String>,
}

/// When a conversation's questions are asked when they do not say: just
/// after its last turn (the latest session or turn time), or now if it has
/// no times.
fn asked_after(conv: &Conversation) -> i64 {
    conv.sessions
        .iter()
        .flat_map(|s| {
            s.turns
                .iter()
                .filter_map(|t| t.timestamp.as_deref())
                .chain(s.date.as_deref())
        })
        .filter_map(memloop::filter::parse_date)
        .max()
        .map_or_else(memloop::now_millis, |t| t + 1)
}

/// One question's time: embedding the question, then searching (the default method).
struct Latency {
    embed_ms: f64,
    search_ms: f64,
}

#[allow(clippy::too_many_arguments)]
fn ask(
    out: &Output,
    (memory, scope, clock): (&Memory, &Scope, &memloop::time::Clock),
    (embedder, vectors): (&LocalEmbedder, &dyn Embedder),
    conv: &Conversation,
    (weights, decay): ((f32, f32, f32), Option<memloop::Decay>),
    expansion: memloop::graph::Expansion,
    (time_mode, time_boost, times): (memloop::QueryTimeMode, Option<f32>, &mut TimesRead),
    answers: &mut [Vec<Answer>],
    latencies: &mut Vec<Latency>,
) -> anyhow::Result<()> {
    let after = asked_after(conv);
    let bar = crate::output::progress_bar(
        out,
        conv.questions.len() as u64,
        &format!("ask {}", conv.id),
    );
    let top = *KS.iter().max().unwrap_or(&50);
    for q in &conv.questions {
        bar.inc(1);
        if q.evidence.is_empty() {
            continue;
        }
        let evidence: HashSet<String> = q.evidence.iter().cloned().collect();
        let t = Instant::now();
        let vector = vectors.embed_query(&q.question)?;
        let embed_ms = t.elapsed().as_secs_f64() * 1e3;
        // The store's clock at the question's time, once for every method
        // (and outside the search's timing).
        let now = q
            .date
            .as_deref()
            .and_then(memloop::filter::parse_date)
            .unwrap_or(after);
        clock.set(now)?;
        for (m, method) in METHODS.iter().enumerate() {
            let mut sq = SearchQuery::new(scope.clone(), q.question.clone());
            sq.top_k = top;
            // The baselines are the pure signals: no speaker boost.
            (sq.vector_weight, sq.keyword_weight, sq.speaker_boost) = if m == 0 {
                weights
            } else {
                (method.vector_weight, method.keyword_weight, 0.0)
            };
            sq.expand = Some(if m == 0 {
                expansion
            } else {
                memloop::graph::Expansion::OFF
            });
            sq.decay = if m == 0 {
                decay
            } else {
                Some(memloop::Decay::OFF)
            };
            let t = Instant::now();
            // Only the default method reads the question's time.
            if m == 0 {
                if let Some(r) = memory.read_time(&mut sq, now, time_mode)? {
                    if let (Some(w), Some(t)) = (time_boost, sq.time.as_mut()) {
                        if let memloop::TimeMode::Boost(_) = t.mode {
                            t.mode = memloop::TimeMode::Boost(w);
                        }
                    }
                    times.read += 1;
                    times.windows += usize::from(r.has_window());
                    if times.examples.len() < 20 {
                        times.examples.push(format!("{}: {r}", q.question));
                    }
                }
            }
            let hits = memory.search_by_vector(&sq, &vector)?;
            if m == 0 {
                latencies.push(Latency {
                    embed_ms,
                    search_ms: t.elapsed().as_secs_f64() * 1e3,
                });
            }
            let ranked = dedup_in_order(
                hits.iter()
                    .flat_map(|h| h.record.provenance.turn_ids.clone()),
            );
            let tokens = KS
                .iter()
                .map(|&k| {
                    hits.iter()
                        .take(k)
                        .map(|h| embedder.count_tokens(&h.record.text))
                        .sum()
                })
                .collect();
            let hits = if m == 0 {
                hits.iter().map(hit_detail).collect()
            } else {
                Vec::new()
            };
            answers[m].push(Answer {
                hits,
                conversation: conv.id.clone(),
                question: q.question.clone(),
                category: q.category.clone(),
                category_name: q.category_name.clone(),
                adversarial: q.adversarial(),
                ranked,
                evidence: evidence.clone(),
                tokens,
            });
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Averages over questions: overall (all but the adversarial) and per
/// category, each named as the file names it.
fn summarize(answers: &[Answer]) -> Value {
    let overall: Vec<&Answer> = answers.iter().filter(|a| !a.adversarial).collect();
    let mut by_cat: BTreeMap<String, Vec<&Answer>> = BTreeMap::new();
    for a in answers {
        by_cat
            .entry(a.category.clone().unwrap_or_else(|| "none".into()))
            .or_default()
            .push(a);
    }
    let mut v = block(&overall);
    v["per_category"] = by_cat
        .iter()
        .map(|(c, list)| {
            let mut b = block(list);
            b["name"] = json!(list.iter().find_map(|a| a.category_name.clone()));
            b["adversarial"] = json!(list.iter().any(|a| a.adversarial));
            (c.clone(), b)
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    v
}

fn block(list: &[&Answer]) -> Value {
    let n = list.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Answer) -> f64| list.iter().map(|a| f(a)).sum::<f64>() / n;
    let recall: serde_json::Map<String, Value> = KS
        .iter()
        .map(|&k| {
            (
                k.to_string(),
                json!(mean(&|a| recall_at(&a.ranked, &a.evidence, k))),
            )
        })
        .collect();
    let tokens: serde_json::Map<String, Value> = KS
        .iter()
        .enumerate()
        .map(|(i, &k)| (k.to_string(), json!(mean(&|a| a.tokens[i] as f64))))
        .collect();
    json!({
        "questions": list.len(),
        "recall": recall,
        "mrr": mean(&|a| reciprocal_rank(&a.ranked, &a.evidence)),
        "ndcg_at_10": mean(&|a| ndcg_at(&a.ranked, &a.evidence, 10)),
        "context_tokens": tokens,
    })
}

#[cfg(test)]
mod piece_tests {
    use super::*;

    #[test]
    fn an_over_long_turn_is_cut_into_pieces_within_the_limit() {
        let text = "word ".repeat(30).trim_end().to_string();
        let parts = pieces(&text, 40);
        assert!(parts.len() > 1);
        assert!(
            parts.iter().all(|p| p.len() <= 40 && !p.is_empty()),
            "{parts:?}"
        );
        assert_eq!(parts.join(" "), text, "nothing lost at the cuts");
        // No white space: cut on a char boundary.
        let dense = "é".repeat(30);
        let parts = pieces(&dense, 7);
        assert!(parts.iter().all(|p| p.len() <= 7));
        assert_eq!(parts.concat(), dense);
        assert_eq!(pieces("short", 40), ["short"]);
    }
}
