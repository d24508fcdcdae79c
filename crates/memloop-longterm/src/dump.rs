//! Export and import: the lines of memloop's JSONL format (docs/export.md)
//! and what a backend writes back. A dump holds every memory, current or
//! not, and every history entry, as stored: ids, times, supersession,
//! provenance and (optionally) vectors, so a store moved to another backend
//! and back is the same store.

use memloop_core::links::{entity_key, Mention};
use memloop_core::time::{millis, opt_millis};
use memloop_core::{EmbedderInfo, Error, Event, HistoryEntry, MemoryRecord, Result};
use serde::{Deserialize, Serialize};

use crate::Embedded;

/// The value of `format` in a dump's first line.
pub const FORMAT: &str = "memloop-export";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

/// One line of a dump.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum DumpLine {
    Header(DumpHeader),
    Memory(Box<DumpedMemory>),
    History(DumpedHistory),
}

/// The first line: what wrote the dump and with which embedder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpHeader {
    pub format: String,
    pub version: u32,
    /// The embedder of the vectors (and of the store they came from).
    pub embedder: EmbedderInfo,
    /// Whether memory lines carry their vectors.
    pub vectors: bool,
    /// Only this user's memories and history, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// A memory as stored, current or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpedMemory {
    #[serde(flatten)]
    pub record: MemoryRecord,
    /// What replaced its claim (the record skips it on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// With `vector`: a long memory's later pieces (none for a short one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pieces: Vec<Vec<f32>>,
    /// Its part of the entity graph (absent when it links to nothing).
    #[serde(default, skip_serializing_if = "DumpedLinks::is_empty")]
    pub links: DumpedLinks,
}

impl DumpedMemory {
    /// The record with its `superseded_by` put back, its vectors when the
    /// line has them, and its links.
    pub fn into_parts(self) -> (MemoryRecord, Option<Embedded>, DumpedLinks) {
        let mut record = self.record;
        record.superseded_by = self.superseded_by;
        let pieces = self.pieces;
        (
            record,
            self.vector.map(|vector| Embedded { vector, pieces }),
            self.links,
        )
    }
}

/// A memory's links as stored: the entities it mentions (with each
/// entity's name and kind in its partition) and the relations it states,
/// each with the time it held. Written back as they are: a relation that a
/// later memory retired stays retired, without the write's reconciling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DumpedLinks {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<Mention>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<DumpedRelation>,
}

impl DumpedLinks {
    pub fn is_empty(&self) -> bool {
        self.mentions.is_empty() && self.relations.is_empty()
    }

    /// Refuses links no write could have stored: a name that is empty (as
    /// an entity key), a relation without a name, or one that ended before
    /// it began.
    pub fn check(&self) -> Result<()> {
        let named = |what: &str, name: &str| {
            if entity_key(name).is_empty() {
                Err(Error::invalid(format!(
                    "links: {what} {name:?} is not a name (it has no letters or digits to key it by)"
                )))
            } else {
                Ok(())
            }
        };
        for m in &self.mentions {
            named("mention", &m.name)?;
        }
        for r in &self.relations {
            named("relation subject", &r.subject)?;
            named("relation object", &r.object)?;
            if r.relation.trim().is_empty() {
                return Err(Error::invalid(
                    "links: a relation has an empty name: give it one (e.g. \"works_at\")",
                ));
            }
            if r.valid_until.is_some_and(|u| u < r.valid_from) {
                return Err(Error::invalid(format!(
                    "links: relation {} {} {} ends before it begins (valid_until < valid_from)",
                    r.subject, r.relation, r.object
                )));
            }
        }
        Ok(())
    }
}

/// `subject relation object`, by the entities' names, and when it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpedRelation {
    pub subject: String,
    pub relation: String,
    pub object: String,
    #[serde(with = "millis")]
    pub valid_from: i64,
    #[serde(default, with = "opt_millis", skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
}

/// One memory to write back: as stored, with its vectors and links.
#[derive(Debug)]
pub struct RestoredMemory {
    pub record: MemoryRecord,
    pub embedded: Embedded,
    pub links: DumpedLinks,
}

/// One history entry; a memory's entries are consecutive, oldest first.
/// Entries of a memory that `forget` removed (without purge) stand alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpedHistory {
    pub tenant: String,
    /// The partition the memory lived in (`Scope::partition`).
    pub partition: String,
    pub memory_id: String,
    pub event: Event,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_memory: Option<String>,
    #[serde(with = "millis")]
    pub at: i64,
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DumpedHistory {
    /// A stored entry of a memory in `partition` (whose tenant leads it).
    pub fn new(partition: String, e: HistoryEntry) -> Self {
        DumpedHistory {
            tenant: partition
                .split('\u{1f}')
                .next()
                .unwrap_or_default()
                .to_string(),
            partition,
            memory_id: e.memory_id,
            event: e.event,
            old_memory: e.old_memory,
            new_memory: e.new_memory,
            at: e.at,
            actor: e.actor,
            reason: e.reason,
        }
    }
}

/// What one `restore` call writes: memories with their vectors, and the
/// whole history of some memories (one group per memory).
#[derive(Debug, Default)]
pub struct RestoreBatch {
    pub memories: Vec<RestoredMemory>,
    pub history: Vec<Vec<DumpedHistory>>,
}

impl RestoreBatch {
    /// What a store checks of a batch before writing any of it: each
    /// memory's vectors (of `embedder`'s width and piece count), links
    /// and scope.
    pub fn check(&self, embedder: &EmbedderInfo) -> Result<()> {
        for m in &self.memories {
            m.embedded.check(embedder)?;
            m.links.check()?;
            m.record.scope.partition()?;
        }
        Ok(())
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// Memories written.
    pub memories: usize,
    /// Memories skipped: their id was stored already.
    pub memories_present: usize,
    /// History entries written.
    pub history: usize,
    /// History groups skipped: the memory had history already.
    pub history_present: usize,
}

impl RestoreReport {
    pub fn add(&mut self, other: RestoreReport) {
        self.memories += other.memories;
        self.memories_present += other.memories_present;
        self.history += other.history;
        self.history_present += other.history_present;
    }
}

/// Whether a history entry belongs to `user`'s partitions (of any tenant).
pub fn history_of_user(partition: &str, user: Option<&str>) -> bool {
    user.is_none_or(|u| partition.ends_with(&format!("\u{1f}u\u{1f}{u}")))
}
