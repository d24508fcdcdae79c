//! `memloop remember`: the write pipeline on one user turn: the gate decides
//! whether it is worth keeping, then facts are distilled and reconciled with
//! the stored ones (ADD / UPDATE / DELETE / NOOP). `memloop add` stays a raw insert.

use clap::Args;
use memloop::gate::{heuristic, GateConfig};
use memloop::{Config, LongTermWriter, Memory, TurnToWrite, WritePipeline};

use crate::output::{printable, Output};
use crate::ScopeArgs;

#[derive(Args)]
pub struct RememberArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Skip the persistence gate: always extract.
    #[arg(long)]
    no_gate: bool,
    /// What the user said.
    text: Vec<String>,
}

pub fn run(config: &Config, out: &Output, a: RememberArgs) -> anyhow::Result<()> {
    let text = a.text.join(" ");
    memloop::text::validate_text(&text)?;
    let scope = a.scope.scope()?;
    let decision = if a.no_gate {
        memloop::gate::GateDecision {
            persist: true,
            reason: "gate skipped (--no-gate)".into(),
        }
    } else {
        heuristic(&text, "user", &GateConfig::default())
    };
    let mut results = Vec::new();
    let mut notes = Vec::new();
    if decision.persist {
        let memory = Memory::open_with(config)?;
        let llm = config.llm.as_ref().map(|c| c.build()).transpose()?;
        let pipeline = WritePipeline::new(llm.map(std::sync::Arc::from));
        // The turn's id is its content in its session: the same words
        // remembered again are the same turn, so a replay changes nothing.
        let turn_id = format!(
            "remember-{}",
            &memloop::text::content_hash(&format!(
                "{}\n{}",
                scope.session_id.as_deref().unwrap_or(""),
                text
            ))[..16]
        );
        let turn = TurnToWrite {
            scope: &scope,
            turn_id: &turn_id,
            role: "user",
            text: &text,
            at: memloop::now_millis(),
            context: None,
            vector: None,
        };
        let report = pipeline.write(&memory, &turn)?;
        results = report.events;
        notes = report.notes;
        notes.extend(report.deferred);
    }
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
