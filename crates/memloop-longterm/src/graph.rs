//! The entity graph as the store answers it: the entities of a scope, one
//! entity's links, and the memories one hop from a set of memories. Kept
//! beside the memories (same database, same transactions); a memory that is
//! deleted, superseded or expired no longer links anything, and `forget`
//! removes its mentions (and with `purge`, the names no memory mentions).

use memloop_core::links::EntityKind;
use memloop_core::{MemoryRecord, Result, Scope};
use serde::Serialize;

/// An entity named in a scope's current memories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphEntity {
    /// As first written ("Anna", "Acme Corp").
    pub name: String,
    pub kind: EntityKind,
    /// Current memories that mention it.
    pub memories: i64,
}

/// A relation between two entities, and the memory that states it. It
/// holds from `valid_from` (its memory's) until `valid_until`: the moment
/// a later memory gave the subject another object of a single-valued
/// relation (`Relation::single`), or its memory stopped being current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphRelation {
    pub subject: String,
    pub relation: String,
    pub object: String,
    pub memory_id: String,
    /// Unix milliseconds.
    pub valid_from: i64,
    /// Unix milliseconds; None while it holds.
    pub valid_until: Option<i64>,
}

/// One entity with what links to it: `memloop links ENTITY`.
#[derive(Debug, Clone, Serialize)]
pub struct EntityLinks {
    pub entity: GraphEntity,
    /// Relations it is an end of, stated by current memories.
    pub relations: Vec<GraphRelation>,
    /// Entities named in the same current memories, with how many.
    pub co_mentioned: Vec<GraphEntity>,
    /// Current memories that mention it, newest first.
    pub memories: Vec<MemoryRecord>,
}

/// How far a search's expansion reaches from one memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLimits {
    /// An entity named by more current memories than this (the user, a
    /// conversation's speakers) links too much to tell anything: skipped.
    pub max_entity_memories: usize,
    /// At most this many memories reached through one entity of one seed.
    pub per_entity: usize,
}

impl LinkLimits {
    /// Whether an entity named by `count` current memories is followed: it
    /// links two at least, and is no hub.
    pub fn follows(&self, count: usize) -> bool {
        (2..=self.max_entity_memories).contains(&count)
    }
}

/// Adds to `out` what `seed` reaches through `entity` (named by
/// `entity_memories` current memories): of the memories naming it,
/// newest first (`naming`: at least `per_entity` + the seeds' count of
/// them), those that are no seed, at most `per_entity`. How both backends
/// end [`GraphStore::linked`].
pub fn reach(
    out: &mut Vec<Linked>,
    (seed, entity, entity_memories): (&str, &str, usize),
    naming: &[MemoryRecord],
    seeds: &std::collections::HashSet<&str>,
    limits: &LinkLimits,
) {
    let reached = naming
        .iter()
        .filter(|r| !seeds.contains(r.id.as_str()))
        .take(limits.per_entity);
    out.extend(reached.map(|record| Linked {
        seed_id: seed.to_string(),
        entity: entity.to_string(),
        entity_memories,
        record: record.clone(),
    }));
}

/// A memory reached from a seed memory through an entity both mention.
#[derive(Debug, Clone)]
pub struct Linked {
    pub seed_id: String,
    /// The entity's name as first written.
    pub entity: String,
    /// Current memories mentioning the entity (its specificity).
    pub entity_memories: usize,
    pub record: MemoryRecord,
}

/// How a search follows entity links from its best hits (done by the
/// facade over [`GraphStore::linked`]): the top `seeds` hits'
/// entities lead to other current memories naming them, each scored
/// `weight` × the score of the hit it was reached from (× `weight` again
/// per further hop), so a linked memory ranks below what led to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expansion {
    /// Links followed from a hit: 0 turns expansion off.
    pub hops: usize,
    /// Hits whose entities are followed.
    pub seeds: usize,
    /// A linked memory's score relative to the hit it was reached from (0..1).
    pub weight: f32,
    pub limits: LinkLimits,
}

impl Expansion {
    /// No expansion: direct hits only.
    pub const OFF: Expansion = Expansion {
        hops: 0,
        ..Expansion::ON
    };

    /// One hop from the top 5 hits, at half their score, through entities
    /// named by at most 20 memories, 5 memories per entity.
    pub const ON: Expansion = Expansion {
        hops: 1,
        seeds: 5,
        weight: 0.5,
        limits: LinkLimits {
            max_entity_memories: 20,
            per_entity: 5,
        },
    };

    pub fn is_on(&self) -> bool {
        self.hops > 0 && self.seeds > 0 && self.weight > 0.0
    }
}

/// The entity graph a backend keeps beside its memories (same database,
/// same transactions), read by scope: another tenant's or user's entities
/// are never seen, and a memory that is deleted, superseded or expired
/// links nothing. `as_of` reads the graph as it was at that moment (Unix
/// ms): the memories true then, and the relations that held then.
pub trait GraphStore: Send + Sync {
    /// The entities named by current memories of `scope` (its partition,
    /// narrowed as `scope` narrows it), most mentioned first; with `as_of`,
    /// by the memories true at that moment.
    fn graph_entities(&self, scope: &Scope, as_of: Option<i64>) -> Result<Vec<GraphEntity>>;

    /// One entity of `scope` by name (any case), with its relations that
    /// hold (held at `as_of`), the entities named beside it and the
    /// memories naming it, or None.
    fn entity_links(
        &self,
        scope: &Scope,
        name: &str,
        as_of: Option<i64>,
    ) -> Result<Option<EntityLinks>>;

    /// The current memories of `scope` that share an entity with one of
    /// the memories `seed_ids` (themselves left out), within `limits`.
    fn linked(&self, scope: &Scope, seed_ids: &[&str], limits: &LinkLimits) -> Result<Vec<Linked>>;
}
