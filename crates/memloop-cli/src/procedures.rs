//! `memloop procedures add|search`: the procedural layer (docs/layers.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use memloop::time::to_rfc3339;
use memloop::{Config, Memory, ProcedureHit, ProcedureQuery, ProcedureRun, ProcedureWrite};
use serde_json::json;

use crate::output::{printable, Output};
use crate::ScopeArgs;

#[derive(Subcommand)]
pub enum ProceduresCommand {
    /// Record one run of a task from a JSON file (`-` for stdin): the first
    /// run adds a procedure, later runs of the same task merge into it.
    Add(AddArgs),
    /// Procedures for a task, ranked by similarity × success rate × recency.
    Search(SearchArgs),
}

#[derive(Args)]
pub struct AddArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// `{"task", "steps": [{"tool", "args", "result", "ok"?, "error"?}],
    /// "outcome": "success"|"failure"|"partial", "error"?, "at"?, "execution_id"?}`.
    #[arg(long)]
    file: PathBuf,
}

#[derive(Args)]
pub struct SearchArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// The task, in words.
    query: Vec<String>,
    #[arg(long, default_value_t = 5)]
    top_k: usize,
}

pub fn run(config: &Config, out: &Output, c: ProceduresCommand) -> anyhow::Result<()> {
    match c {
        ProceduresCommand::Add(a) => add(config, out, a),
        ProceduresCommand::Search(a) => search(config, out, a),
    }
}

fn read_run(path: &PathBuf) -> anyhow::Result<ProcedureRun> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(path).map_err(|e| memloop::Error::Io {
            path: path.clone(),
            source: e,
        })?
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| memloop::Error::invalid(format!("{} is not JSON: {e}", path.display())))?;
    ProcedureRun::from_json(value).map_err(|e| match e {
        memloop::Error::InvalidInput(m) => {
            memloop::Error::invalid(format!("{}: {m}", path.display())).into()
        }
        other => other.into(),
    })
}

fn add(config: &Config, out: &Output, a: AddArgs) -> anyhow::Result<()> {
    let run = read_run(&a.file)?;
    let memory = Memory::open_with(config)?;
    let w = memory.record_procedure(&a.scope.scope()?, run)?;
    if out.json {
        return out.json_value(&json!({ "results": [w] }));
    }
    print_write(&w);
    Ok(())
}

fn print_write(w: &ProcedureWrite) {
    let p = &w.procedure;
    println!("{:<6} {}  {}", w.event.as_str(), w.id, printable(&p.task));
    println!("       {}", printable(&p.tally()));
    println!("       steps: {}", printable(&p.steps_line()));
    for f in &p.pitfalls {
        println!("       pitfall: {}", printable(&f.sentence()));
    }
}

fn search(config: &Config, out: &Output, a: SearchArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let mut q = ProcedureQuery::new(a.scope.scope()?, a.query.join(" "));
    q.top_k = a.top_k.clamp(1, 1000);
    let hits = memory.search_procedures(&q)?;
    if out.json {
        return out.json_value(&json!({ "results": hits }));
    }
    if hits.is_empty() {
        println!("no procedure found for this task");
    }
    for h in &hits {
        print_hit(h);
    }
    Ok(())
}

fn print_hit(h: &ProcedureHit) {
    let s = &h.scores;
    println!(
        "{:.3} = similarity {:.3} × success {:.2} × recency {:.2}  {}",
        s.score, s.similarity, s.success_rate, s.recency, h.id
    );
    match &h.procedure {
        Some(p) => {
            println!(
                "      {} ({}, last run {})",
                printable(&p.task),
                p.tally(),
                to_rfc3339(p.last_run)
            );
            println!("      steps: {}", printable(&p.steps_line()));
            for f in &h.pitfalls {
                println!("      pitfall: last time {}", printable(f));
            }
        }
        None => println!("      {}", printable(&h.memory)),
    }
}
