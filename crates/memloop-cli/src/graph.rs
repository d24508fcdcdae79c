//! `memloop entities` and `memloop links`: the entity graph of a scope.

use clap::Args;
use memloop::{Config, Memory};
use serde_json::json;

use crate::output::{printable, Output};
use crate::ScopeArgs;

#[derive(Args)]
pub struct EntitiesArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// At most this many, most mentioned first.
    #[arg(long, default_value_t = 100)]
    limit: usize,
}

#[derive(Args)]
pub struct LinksArgs {
    /// The entity's name (any case), as `memloop entities` lists it.
    entity: String,
    #[command(flatten)]
    scope: ScopeArgs,
}

pub fn entities(config: &Config, out: &Output, a: EntitiesArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let mut list = memory.graph_entities(&a.scope.scope()?)?;
    list.truncate(a.limit);
    if out.json {
        return out.json_value(&json!({ "entities": list }));
    }
    if list.is_empty() {
        println!("no entities: no current memory of this scope names one");
    }
    for e in &list {
        println!(
            "{:>5}  {:<12} {}",
            e.memories,
            e.kind.as_str(),
            printable(&e.name)
        );
    }
    Ok(())
}

pub fn links(config: &Config, out: &Output, a: LinksArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let Some(l) = memory.entity_links(&a.scope.scope()?, &a.entity)? else {
        return Err(memloop::Error::NotFound(format!(
            "entity {:?} (no current memory of this scope names it; see `memloop entities`)",
            a.entity
        ))
        .into());
    };
    if out.json {
        return out.json_value(&l);
    }
    println!(
        "{} ({}), named by {} memories",
        printable(&l.entity.name),
        l.entity.kind.as_str(),
        l.entity.memories
    );
    if !l.relations.is_empty() {
        println!("relations:");
        for r in &l.relations {
            println!(
                "  {} {} {}  [{}]",
                printable(&r.subject),
                printable(&r.relation),
                printable(&r.object),
                printable(&r.memory_id)
            );
        }
    }
    if !l.co_mentioned.is_empty() {
        let names: Vec<String> = l
            .co_mentioned
            .iter()
            .map(|e| format!("{} ({})", printable(&e.name), e.memories))
            .collect();
        println!("named with: {}", names.join(", "));
    }
    println!("memories:");
    for m in &l.memories {
        println!("  {}  [{}]", printable(&m.text), printable(&m.id));
    }
    Ok(())
}
