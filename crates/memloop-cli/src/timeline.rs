//! `memloop sessions`: a user's sessions on the time axis, newest first,
//! each with its ordinal (1 = the first), start, end and memories.

use clap::Args;
use memloop::time::to_rfc3339;
use memloop::{Config, Memory};
use serde_json::json;

use crate::output::{printable, Output};
use crate::ScopeArgs;

#[derive(Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    scope: ScopeArgs,
}

pub fn run(config: &Config, out: &Output, a: SessionsArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let list = memory.sessions(&a.scope.scope()?)?;
    if out.json {
        return out.json_value(&json!({ "sessions": list }));
    }
    if list.is_empty() {
        println!("no sessions: no current memory of this scope was written in one (give --session when writing)");
    }
    for s in &list {
        println!(
            "#{:<4} {}  {}  {:>5} memories  {}",
            s.ordinal,
            to_rfc3339(s.started_at),
            to_rfc3339(s.ended_at),
            s.memories,
            printable(&s.id)
        );
    }
    Ok(())
}
