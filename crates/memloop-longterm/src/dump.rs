//! Export and import: the lines of memloop's JSONL format (docs/export.md)
//! and what a backend writes back. A dump holds every memory, current or
//! not, and every history entry, as stored: ids, times, supersession,
//! provenance and (optionally) vectors, so a store moved to another backend
//! and back is the same store.

use memloop_core::time::millis;
use memloop_core::{EmbedderInfo, Event, HistoryEntry, MemoryRecord};
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
}

impl DumpedMemory {
    /// The record with its `superseded_by` put back, and its vectors when
    /// the line has them.
    pub fn into_record(self) -> (MemoryRecord, Option<Embedded>) {
        let mut record = self.record;
        record.superseded_by = self.superseded_by;
        let pieces = self.pieces;
        (
            record,
            self.vector.map(|vector| Embedded { vector, pieces }),
        )
    }
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
    pub memories: Vec<(MemoryRecord, Embedded)>,
    pub history: Vec<Vec<DumpedHistory>>,
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
