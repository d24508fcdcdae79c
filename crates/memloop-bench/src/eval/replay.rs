//! `memloop eval tokens`: one long conversation replayed through the loop,
//! offline, turn by turn: the input tokens the loop assembles against the
//! tokens of sending the whole history, and the loop's own overhead.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use memloop::context::MESSAGE_OVERHEAD;
use memloop::{Config, Layers, Memory, MemoryLoop, Scope, StoreOptions};
use serde_json::{json, Value};

use super::format::{self, Conversation};
use super::locomo;
use crate::output::Output;

/// Turns at which the report gives the figures (and the last turn).
const MARKS: &[usize] = &[10, 30, 50, 100, 200];

#[derive(Args)]
pub struct ReplayArgs {
    /// LoCoMo's JSON, or the generic format when the name ends in .jsonl.
    file: PathBuf,
    /// Which conversation (0-based; default: the longest).
    #[arg(long)]
    conversation: Option<usize>,
    /// Replay with this short-term backend (e.g. redis://127.0.0.1:6379).
    #[arg(long)]
    short_term: Option<String>,
    /// Assemble with two layers (one memory block, the default), three (a
    /// section per layer, each section's tokens measured), or both: the
    /// conversation replayed once in each mode, side by side.
    #[arg(long, default_value = "two", value_parser = ["two", "three", "both"])]
    layers: String,
}

fn load(file: &Path) -> anyhow::Result<Vec<Conversation>> {
    if file.extension().is_some_and(|e| e == "jsonl") {
        format::read_jsonl(file)
    } else {
        Ok(locomo::load(file)?.0)
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

pub fn run(config: &Config, out: &Output, a: &ReplayArgs) -> anyhow::Result<()> {
    let conversations = load(&a.file)?;
    let length = |c: &Conversation| c.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
    let index = match a.conversation {
        Some(i) => i,
        None => (0..conversations.len())
            .max_by_key(|&i| length(&conversations[i]))
            .unwrap_or(0),
    };
    let conv = conversations.get(index).ok_or_else(|| {
        anyhow::anyhow!(
            "{} holds {} conversations: pick --conversation 0..{}",
            a.file.display(),
            conversations.len(),
            conversations.len().saturating_sub(1)
        )
    })?;
    let modes: &[Layers] = match a.layers.as_str() {
        "three" => &[Layers::Three],
        "both" => &[Layers::Two, Layers::Three],
        _ => &[Layers::Two],
    };
    let reports = modes
        .iter()
        .map(|&layers| replay_once(config, out, a, conv, layers))
        .collect::<anyhow::Result<Vec<Value>>>()?;
    if out.json {
        return match reports.as_slice() {
            [one] => out.json_value(one),
            all => out.json_value(&json!({ "modes": all })),
        };
    }
    for r in &reports {
        print_report(r);
    }
    Ok(())
}

/// Mean tokens per turn of the memory block, and of each section in
/// three-layer mode.
#[derive(Default)]
struct SectionTokens {
    turns: usize,
    total: usize,
    by_layer: std::collections::BTreeMap<&'static str, usize>,
}

impl SectionTokens {
    fn add(&mut self, trace: &memloop::TurnTrace) {
        self.turns += 1;
        self.total += trace.tokens.input.memories;
        for l in &trace.layers {
            *self.by_layer.entry(l.layer.as_str()).or_default() += l.tokens;
        }
    }

    fn means(&self) -> Value {
        let mean = |n: usize| n as f64 / self.turns.max(1) as f64;
        let mut v = json!({ "all": mean(self.total) });
        for (layer, n) in &self.by_layer {
            v[*layer] = json!(mean(*n));
        }
        v
    }
}

/// One replay of `conv` through the loop with `layers`: the report.
fn replay_once(
    config: &Config,
    out: &Output,
    a: &ReplayArgs,
    conv: &Conversation,
    layers: Layers,
) -> anyhow::Result<Value> {
    let length = |c: &Conversation| c.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
    // A fresh store of its own, so nothing of yours is touched or counted.
    let dir = tempfile::tempdir()?;
    let mut cfg = config.clone().with_data_dir(dir.path());
    cfg.turn.layers = layers;
    cfg.store = StoreOptions::default();
    cfg.llm = None;
    cfg.short_term.url = a.short_term.clone();
    let memory = Arc::new(Memory::open_with(&cfg)?);
    // `build`, not `open`: every turn of a replay needs the buffer, so a
    // Redis that is down should stop it before the first one.
    let lp = MemoryLoop::new(memory, cfg.short_term.build()?, cfg.turn.clone())?;
    let count = |s: &str| lp.tokens().count(s);
    let user = Scope::user(format!("replay-{}", conv.id)).with_tenant("replay");

    let bar = crate::output::progress_bar(out, length(conv) as u64, "replay");
    let mut full = count(&lp.config().system_prompt);
    let mut rows: Vec<Value> = Vec::new();
    let (mut overhead, mut kept) = (Vec::new(), 0usize);
    let mut stages: Vec<memloop::Timings> = Vec::new();
    let mut sections = SectionTokens::default();
    let mut n = 0;
    for session in &conv.sessions {
        let scope = user
            .clone()
            .with_session(format!("{}-{}", conv.id, session.id));
        lp.short_term()
            .clear(&scope.tenant, scope.session_id.as_deref().unwrap_or(""))?;
        for turn in &session.turns {
            let input = format!("{}: {}", turn.speaker, turn.text);
            let o = lp.turn(&scope, &input)?;
            n += 1;
            full += count(&input) + MESSAGE_OVERHEAD;
            kept += usize::from(o.trace.gate.persist);
            overhead.push(o.trace.timings.overhead_us as f64 / 1e3);
            stages.push(o.trace.timings);
            sections.add(&o.trace);
            let last = n == length(conv);
            if MARKS.contains(&n) || last {
                let used = o.trace.tokens.input.total_input;
                rows.push(json!({
                    "turn": n, "input_tokens": used, "full_history_tokens": full,
                    "ratio": used as f64 / full as f64,
                    "memories": o.trace.tokens.input.memories, "turns": o.trace.tokens.input.turns,
                    "sections": o.trace.layers.iter().map(|l| (l.layer.as_str(), l.tokens)).collect::<std::collections::BTreeMap<_, _>>(),
                }));
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let stage = |f: fn(&memloop::Timings) -> u64| {
        percentile(stages.iter().map(|t| f(t) as f64 / 1e3).collect(), 0.5)
    };
    let stages_p50 = json!({
        "read_short_term": stage(|t| t.read_short_term_us),
        "search": stage(|t| t.search_us),
        "assemble": stage(|t| t.assemble_us),
        "write_short_term": stage(|t| t.write_short_term_us),
        "gate": stage(|t| t.gate_us),
        "write_long_term_without_embedding": stage(|t| t.write_long_term_us.saturating_sub(t.write_embed_us)),
        "summary": stage(|t| t.summary_us),
    });
    // The long-term write of the turns the gate kept, embedding included.
    let writes: Vec<f64> = stages
        .iter()
        .filter(|t| t.write_long_term_us > 0)
        .map(|t| t.write_long_term_us as f64 / 1e3)
        .collect();
    let backend = a.short_term.as_deref().map_or("in-process", |_| "redis");
    let report = json!({
        "conversation": conv.id, "turns": n, "sessions": conv.sessions.len(),
        "persisted": kept, "short_term": backend, "encoding": lp.tokens().encoding(),
        "layers": layers, "budget": lp.config().budget, "at": rows,
        "memory_tokens_mean": sections.means(),
        "overhead_ms": {"p50": percentile(overhead.clone(), 0.5), "p99": percentile(overhead, 0.99)},
        "stage_p50_ms": stages_p50,
        "write_pipeline_ms": {"p50": percentile(writes.clone(), 0.5), "p99": percentile(writes, 0.99)},
    });
    Ok(report)
}

fn print_report(report: &Value) {
    println!(
        "\nconversation {} ({} turns, {} sessions), {} layers, short-term {}; {} turns persisted",
        report["conversation"].as_str().unwrap_or(""),
        report["turns"],
        report["sessions"],
        report["layers"].as_str().unwrap_or(""),
        report["short_term"].as_str().unwrap_or(""),
        report["persisted"]
    );
    println!(
        "{:>6} {:>12} {:>14} {:>7}",
        "turn", "input tok", "full history", "ratio"
    );
    for r in report["at"].as_array().into_iter().flatten() {
        println!(
            "{:>6} {:>12} {:>14} {:>6.1}%",
            r["turn"].as_u64().unwrap_or(0),
            r["input_tokens"].as_u64().unwrap_or(0),
            r["full_history_tokens"].as_u64().unwrap_or(0),
            r["ratio"].as_f64().unwrap_or(0.0) * 100.0
        );
    }
    println!(
        "loop overhead (no LLM, no embedding): p50 {:.2} ms, p99 {:.2} ms",
        report["overhead_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
        report["overhead_ms"]["p99"].as_f64().unwrap_or(f64::NAN)
    );
    println!("stage p50 (ms): {}", report["stage_p50_ms"]);
    println!(
        "long-term write of a kept turn (rules, embedding included): p50 {:.2} ms, p99 {:.2} ms",
        report["write_pipeline_ms"]["p50"]
            .as_f64()
            .unwrap_or(f64::NAN),
        report["write_pipeline_ms"]["p99"]
            .as_f64()
            .unwrap_or(f64::NAN)
    );
    println!(
        "memory tokens per turn (mean, by section): {}",
        report["memory_tokens_mean"]
    );
}
