//! `memloop entities` and `memloop links`: the entity graph of a scope.

use clap::Args;
use memloop::{Config, Memory};
use serde_json::json;

use crate::commands::parse_as_of;
use crate::output::{printable, Output};
use crate::ScopeArgs;

#[derive(Args)]
pub struct EntitiesArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// At most this many, most mentioned first.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// The graph as it was at this date (YYYY-MM-DD or RFC 3339).
    #[arg(long)]
    as_of: Option<String>,
}

#[derive(Args)]
pub struct LinksArgs {
    /// The entity's name (any case), as `memloop entities` lists it.
    entity: String,
    #[command(flatten)]
    scope: ScopeArgs,
    /// The links as they were at this date (YYYY-MM-DD or RFC 3339): the
    /// relations that held then.
    #[arg(long)]
    as_of: Option<String>,
}

pub fn entities(config: &Config, out: &Output, a: EntitiesArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let as_of = a.as_of.as_deref().map(parse_as_of).transpose()?;
    let mut list = memory.graph_entities(&a.scope.scope()?, as_of)?;
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
    let as_of = a.as_of.as_deref().map(parse_as_of).transpose()?;
    let Some(l) = memory.entity_links(&a.scope.scope()?, &a.entity, as_of)? else {
        return Err(memloop::Error::EntityNotFound(a.entity).into());
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
