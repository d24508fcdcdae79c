//! `memloop remember`: the write pipeline on one user turn: the gate decides
//! whether it is worth keeping, then facts are distilled and reconciled with
//! the stored ones (ADD / UPDATE / DELETE / NOOP). `memloop add` stays a raw insert.

use clap::Args;
use memloop::{Config, MemoryLoop, RememberOptions, Remembered};

use crate::output::{printable, Output};
use crate::ScopeArgs;

#[derive(Args)]
pub struct RememberArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Skip the persistence gate: always extract.
    #[arg(long)]
    no_gate: bool,
    /// When it was said (RFC 3339, YYYY-MM-DD or Unix seconds), to write a
    /// past conversation with its own times: the episode's and the facts'
    /// valid_from (a fact about an earlier date keeps that date).
    #[arg(long, value_name = "DATE")]
    at: Option<String>,
    /// What the user said.
    text: Vec<String>,
}

pub fn run(config: &Config, out: &Output, a: RememberArgs) -> anyhow::Result<()> {
    let text = a.text.join(" ");
    memloop::text::validate_text(&text)?;
    let scope = a.scope.scope()?;
    let at = a.at.as_deref().map(crate::commands::parse_at).transpose()?;
    // The loop's remember: the gate as configured in [loop.gate] (and the
    // LLM's second opinion with llm_gate), the configured writer.
    let lp = MemoryLoop::open(config)?;
    let options = RememberOptions {
        skip_gate: a.no_gate,
        at,
        ..RememberOptions::default()
    };
    let Remembered {
        gate: decision,
        events: results,
        notes,
    } = lp.remember(&scope, &text, options)?;
    if out.json {
        let results: Vec<_> = results
            .iter()
            .map(|e| {
                let mut v = serde_json::json!({
                    "id": e.id, "memory": e.memory, "event": e.event, "kind": e.kind, "reason": e.reason,
                });
                if let (Some(p), Some(obj)) = (&e.previous_memory, v.as_object_mut()) {
                    obj.insert("previous_memory".into(), p.clone().into());
                }
                v
            })
            .collect();
        return out.json_value(&serde_json::json!({
            "results": results,
            "persisted": decision.persist,
            "reason": decision.reason,
            "notes": notes,
        }));
    }
    let verdict = if decision.persist { "kept" } else { "not kept" };
    println!("{verdict}: {}", printable(&decision.reason));
    for e in &results {
        let was = e
            .previous_memory
            .as_deref()
            .map(|p| format!(" (was: {})", printable(p)))
            .unwrap_or_default();
        println!(
            "{:<6} {} {}{was}  [{}]",
            e.event.as_str(),
            e.id,
            printable(&e.memory),
            printable(&e.reason)
        );
    }
    for n in &notes {
        println!("note: {}", printable(n));
    }
    Ok(())
}
