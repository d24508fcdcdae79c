//! Each partition's BM25 index, kept in this process's memory and brought
//! up to date from the database's change log (schema version 7) at the
//! snapshot of the search that reads it.
//!
//! A keyword search in SQL reads every posting of the query's terms: some
//! 46,000 rows and 45 ms at 100,000 memories. Here a search reads the
//! partition's version (one row it reads anyway); when this process's copy
//! is at that version, BM25 runs in memory with MaxScore pruning, as in
//! the embedded store. When the copy is behind, the rows logged since are
//! read again (a few, usually); when the log no longer reaches back that
//! far, or there is no copy, the partition's postings are read whole.
//!
//! Consistency: the partition's versions grow in commit order (see the
//! migration), so a snapshot seeing version V sees every change up to V,
//! and the copy brought to V is exactly the snapshot's current rows. A copy
//! already newer than the search's snapshot (another search here read a
//! later one) cannot go back: that search asks SQL instead. Several
//! servers each keep their own copies, all read from the one database.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use memloop_core::Result;
use memloop_longterm::expiry::Expiry;
use memloop_longterm::keyword::KeywordIndex;

use crate::pool::Tx;

/// What a search knows of a partition before it asks the cache: its
/// keyword version (None: no current memories) and the log's floor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Position {
    pub version: Option<i64>,
    pub floor: i64,
}

/// A partition's index at one version, with the expiry of its rows that
/// have one (an expired row stays until gc deletes it, and no search
/// admits it).
struct Copy {
    version: i64,
    index: KeywordIndex,
    expiry: Expiry,
}

#[derive(Default)]
pub(crate) struct Slot {
    copy: RwLock<Option<Copy>>,
    /// When a search last used it, by the cache's tick (for eviction).
    used: AtomicU64,
    /// Memories in the copy, for the budget.
    docs: AtomicU64,
}

pub(crate) struct KeywordCache {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    tick: AtomicU64,
    /// Most memories kept in all copies together; the least recently
    /// searched partitions go first (one larger than this is still kept,
    /// alone).
    budget: u64,
}

/// What [`KeywordCache::prepare`] left for the search.
pub(crate) enum Prepared {
    /// No copy at this snapshot: BM25 in SQL.
    Sql,
    /// The partition has no current memory.
    Empty,
    /// The copy in `slot`, at `version`.
    Ready { slot: Arc<Slot>, version: i64 },
}

fn read_lock<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

/// A query: its terms, how many hits, its time, and the rows it may return
/// (a narrowed search).
pub(crate) struct KeywordQuery<'a> {
    pub terms: &'a [String],
    pub limit: usize,
    pub now: i64,
    pub allowed: Option<&'a HashSet<i64>>,
}

/// Rows changed since the copy above this share of its size: reading the
/// partition whole costs less than looking each one up.
const RELOAD_SHARE: usize = 4;

impl KeywordCache {
    pub fn new(budget: u64) -> KeywordCache {
        KeywordCache {
            slots: Mutex::new(HashMap::new()),
            tick: AtomicU64::new(0),
            budget,
        }
    }

    /// Brings this process's copy of the partition to `tx`'s snapshot
    /// (reading what changed since, or the partition whole), so that
    /// [`KeywordCache::run`] can rank without the transaction: on another
    /// thread, while the vector side's statement runs.
    pub fn prepare(
        &self,
        tx: &mut Tx<'_>,
        partition: &str,
        at: Position,
        context_weight: f32,
    ) -> Result<Prepared> {
        if self.budget == 0 {
            return Ok(Prepared::Sql);
        }
        let Some(version) = at.version else {
            // No current memory: nothing to find, and nothing worth keeping.
            self.lock().remove(partition);
            return Ok(Prepared::Empty);
        };
        let slot = self
            .lock()
            .entry(partition.to_string())
            .or_default()
            .clone();
        slot.used
            .store(self.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        let ready = Prepared::Ready {
            slot: slot.clone(),
            version,
        };
        if read_lock(&slot.copy)
            .as_ref()
            .is_some_and(|c| c.version == version)
        {
            return Ok(ready);
        }
        let mut guard = slot.copy.write().unwrap_or_else(|p| p.into_inner());
        let loaded = match guard.take() {
            Some(c) if c.version == version => c,
            Some(c) if c.version > version => {
                *guard = Some(c);
                return Ok(Prepared::Sql);
            }
            Some(c) if c.version >= at.floor => {
                catch_up(tx, partition, c, version, context_weight)?
            }
            _ => load(tx, partition, version, context_weight)?,
        };
        slot.docs
            .store(loaded.index.len() as u64, Ordering::Relaxed);
        *guard = Some(loaded);
        drop(guard);
        self.evict(partition);
        Ok(ready)
    }

    /// The partition's `limit` best rows by BM25 at the prepared snapshot,
    /// or None when the search must ask SQL: the copy was newer than the
    /// snapshot, or another search moved it on since `prepare`.
    pub fn run(&self, prepared: &Prepared, q: &KeywordQuery<'_>) -> Option<Vec<(i64, f32)>> {
        match prepared {
            Prepared::Sql => None,
            Prepared::Empty => Some(Vec::new()),
            Prepared::Ready { slot, version } => read_lock(&slot.copy)
                .as_ref()
                .filter(|c| c.version == *version)
                .map(|c| run(c, q)),
        }
    }

    /// Drops the least recently searched copies while all of them together
    /// hold more memories than the budget (never `keep`'s).
    fn evict(&self, keep: &str) {
        let mut slots = self.lock();
        let mut total: u64 = slots.values().map(|s| s.docs.load(Ordering::Relaxed)).sum();
        while total > self.budget {
            let oldest = slots
                .iter()
                .filter(|(name, _)| name.as_str() != keep)
                .min_by_key(|(_, s)| s.used.load(Ordering::Relaxed))
                .map(|(name, s)| (name.clone(), s.docs.load(Ordering::Relaxed)));
            let Some((name, docs)) = oldest else { break };
            slots.remove(&name);
            total -= docs;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn run(c: &Copy, q: &KeywordQuery<'_>) -> Vec<(i64, f32)> {
    let admit =
        |rid: i64| !c.expiry.is_expired(rid, q.now) && q.allowed.is_none_or(|a| a.contains(&rid));
    let filtered = q.allowed.is_some() || c.expiry.any_expired(q.now);
    let allow: memloop_longterm::keyword::Allow<'_> = if filtered { Some(&admit) } else { None };
    c.index.search(q.terms, q.limit, allow)
}

/// A row's stored terms: each with its weighted frequency (the text's
/// occurrences count 1, the context's `context_weight` × the row's
/// `context_scale`), the row's
/// weighted length and its expiry.
struct Doc {
    terms: Vec<(String, f32)>,
    len: f32,
    expires_at: Option<i64>,
}

/// The partition's current rows (`rids` of them, when given), read as
/// their `tsvector`s' text: one row per memory where the postings hold one
/// per term (a tenth of the rows and of the memory to read a partition
/// whole).
fn read_docs(
    tx: &mut Tx<'_>,
    partition: &str,
    rids: Option<&[i64]>,
    context_weight: f32,
) -> Result<Vec<(i64, Doc)>> {
    let rows = tx.query(
        "SELECT rid, tsv::text, doc_len, expires_at, context_scale FROM memories \
         WHERE partition = $1 AND valid_until IS NULL AND ($2::bigint[] IS NULL OR rid = ANY($2))",
        &[&partition, &rids],
    )?;
    let mut out: Vec<(i64, Doc)> = rows
        .iter()
        .map(|r| {
            let text: &str = r.get(1);
            let context_weight = context_weight * r.get::<_, f32>(4);
            let terms = tsvector_counts(text)
                .into_iter()
                .map(|(term, a, b)| (term, a as f32 + context_weight * b as f32))
                .collect();
            (
                r.get(0),
                Doc {
                    terms,
                    len: r.get(2),
                    expires_at: r.get(3),
                },
            )
        })
        .collect();
    // Slots in row order, whatever order the rows came in.
    out.sort_unstable_by_key(|d| d.0);
    Ok(out)
}

/// A `tsvector`'s text (`'tea':1A,4B 'it''s':2A`) as (lexeme, positions
/// weighted A, positions weighted B): what the postings trigger counts
/// from `unnest(tsv)`. Quotes and backslashes in a lexeme come doubled.
fn tsvector_counts(text: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut lexeme = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => lexeme.extend(chars.next()),
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    lexeme.push('\'');
                }
                '\'' => break,
                c => lexeme.push(c),
            }
        }
        let (mut a, mut b) = (0, 0);
        if chars.peek() == Some(&':') {
            chars.next();
            while let Some(&c) = chars.peek() {
                match c {
                    ' ' => break,
                    'A' => a += 1,
                    'B' => b += 1,
                    _ => {}
                }
                chars.next();
            }
        }
        out.push((lexeme, a, b));
    }
    out
}

fn add(copy: &mut Copy, rid: i64, doc: &Doc) {
    copy.index.insert_counted(
        rid,
        doc.terms.iter().map(|(t, tf)| (t.as_str(), *tf)),
        doc.len,
        None,
    );
    copy.expiry.set(rid, doc.expires_at);
}

/// The partition's current rows, read whole.
fn load(tx: &mut Tx<'_>, partition: &str, version: i64, context_weight: f32) -> Result<Copy> {
    let mut copy = Copy {
        version,
        index: KeywordIndex::default(),
        expiry: Expiry::default(),
    };
    for (rid, doc) in read_docs(tx, partition, None, context_weight)? {
        add(&mut copy, rid, &doc);
    }
    Ok(copy)
}

/// Brings `copy` from its version to `version`: each row logged in between
/// is taken out and, if current at the snapshot, put back as it is now.
fn catch_up(
    tx: &mut Tx<'_>,
    partition: &str,
    mut copy: Copy,
    version: i64,
    context_weight: f32,
) -> Result<Copy> {
    let changed: Vec<i64> = tx
        .query(
            "SELECT DISTINCT rid FROM keyword_log WHERE partition = $1 AND version > $2 AND version <= $3",
            &[&partition, &copy.version, &version],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if changed.len() > copy.index.len() / RELOAD_SHARE + 64 {
        return load(tx, partition, version, context_weight);
    }
    for rid in &changed {
        copy.index.remove(*rid);
        copy.expiry.remove(*rid);
    }
    for (rid, doc) in read_docs(tx, partition, Some(&changed), context_weight)? {
        add(&mut copy, rid, &doc);
    }
    copy.version = version;
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::tsvector_counts;

    #[test]
    fn tsvector_text_is_counted_by_weight() {
        let got = tsvector_counts("'berlin':2A,5B,7 'it''s':1A 'back\\\\slash':3B 'bare'");
        assert_eq!(
            got,
            vec![
                ("berlin".to_string(), 1, 1),
                ("it's".to_string(), 1, 0),
                ("back\\slash".to_string(), 0, 1),
                ("bare".to_string(), 0, 0),
            ]
        );
        assert!(tsvector_counts("").is_empty());
    }
}
