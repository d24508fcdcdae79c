//! The derived indexes of one partition: load from SQLite, catch up from
//! `index_log`, save and restore HNSW indexes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use memloop_core::text::StemMemo;
use memloop_core::{Result, Scope};
use rusqlite::{params, Connection};
use sha2::{Digest, Sha256};

use crate::keyword_file;
use crate::removed_file::{self, FileId};
use crate::rows::blob_to_vector;
use crate::stored_terms;
use crate::vector::{Flat, VectorIndex, WholeMark};
use crate::{lock, read, sql_err, write, write_tx, EmbeddedStore};
use memloop_longterm::expiry::Expiry;
use memloop_longterm::keyword::KeywordIndex;

/// A write batch of at least this many rows loads its partition's index
/// (see `keep_current`): the size of an import's batch, not of a turn's.
pub(crate) const LOAD_FROM_BATCH: usize = 100;

/// A loaded partition index, as [`EmbeddedStore::index_status`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexStatus {
    /// Vectors in the index.
    pub vectors: usize,
    /// Keys the vector index holds: a row's first vector and each of its
    /// pieces (`vectors` counts rows).
    pub keys: usize,
    /// True for an HNSW graph, false for the exact scan.
    pub hnsw: bool,
    /// Log entries (of any partition) committed after the index last caught
    /// up: what the next search would apply first if they are this one's.
    pub behind: i64,
    /// The indexes were restored from the files saved at the last close
    /// (no text analysed), not built from the rows.
    pub restored: bool,
}

/// A row's text, context and speaker, as a load reads them.
type Doc = (i64, String, Option<String>, Option<String>);

/// What the indexes hold of a current row.
struct CurrentRow {
    /// Its terms as written (schema version 7), or None: analyse `text`.
    terms: Option<String>,
    text: String,
    vector: Vec<f32>,
    context: Option<String>,
    speaker: Option<String>,
    expires_at: Option<i64>,
}

/// A text column as borrowed from its row (None when NULL).
fn text_ref<'a>(r: &'a rusqlite::Row<'_>, column: usize) -> Result<Option<&'a str>> {
    r.get_ref(column)
        .and_then(|v| v.as_str_or_null().map_err(rusqlite::Error::from))
        .map_err(sql_err)
}

/// Analysed terms as the keyword index takes them.
fn as_strs(terms: &[String]) -> impl Iterator<Item = &str> + Clone {
    terms.iter().map(String::as_str)
}

/// Who said a memory: its metadata's `speaker`, when it has one.
fn speaker_of(metadata: &str) -> Option<String> {
    if !metadata.contains("\"speaker\"") {
        return None; // most metadata: not worth parsing
    }
    serde_json::from_str::<serde_json::Value>(metadata)
        .ok()
        .and_then(|m| m.get("speaker").and_then(|s| s.as_str()).map(String::from))
}

pub struct PartitionIndex {
    pub vectors: VectorIndex,
    pub keywords: KeywordIndex,
    pub expiry: Expiry,
    /// Every index_log entry up to this seq is reflected here.
    pub applied_seq: i64,
    /// The seq the saved HNSW file reflects (0: nothing saved).
    pub saved_seq: i64,
    /// Restored from the saved files (graph and keyword index) rather
    /// than built from the rows.
    pub restored: bool,
    /// Unique to each load: tells gc whether the index it cut rows out of
    /// is still the one in place, or was reloaded from the rows meanwhile.
    pub generation: u64,
}

/// A new [`PartitionIndex::generation`].
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl PartitionIndex {
    /// A saved vector index alone, reflecting the log up to `seq`: enough
    /// to cut rows out of it and save it again.
    pub fn vectors_only(vectors: VectorIndex, seq: i64) -> PartitionIndex {
        PartitionIndex {
            vectors,
            keywords: KeywordIndex::default(),
            expiry: Expiry::default(),
            applied_seq: seq,
            saved_seq: seq,
            restored: true,
            generation: next_generation(),
        }
    }

    /// Takes a row out of every index.
    pub fn remove(&mut self, row: i64) -> Result<()> {
        self.vectors.remove(row)?;
        self.keywords.remove(row);
        self.expiry.remove(row);
        Ok(())
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Sidecar {
    partition: String,
    seq: i64,
    model_id: String,
    /// How many rows of the graph's removed list (`removed_file`) this
    /// position includes: 0 when the graph was saved whole.
    #[serde(default)]
    removed: usize,
}

/// The last seq ever given to an index_log entry (it survives pruning).
pub(crate) fn max_seq(conn: &Connection) -> Result<i64> {
    Ok(log_position(conn)?.0)
}

/// Entries up to this seq have been pruned: an index older than it must reload.
pub(crate) fn log_floor(conn: &Connection) -> Result<i64> {
    Ok(log_position(conn)?.1)
}

/// The log's last seq and its floor, read by one cached statement: every
/// search asks for both, and two statements prepared afresh each time
/// were half of a search in a small loaded partition (docs/benchmarks.md).
pub(crate) fn log_position(conn: &Connection) -> Result<(i64, i64)> {
    let (latest, floor): (i64, Option<String>) = conn
        .prepare_cached(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'index_log'), 0), \
             (SELECT value FROM meta WHERE key = 'index_log_floor')",
        )
        .and_then(|mut stmt| stmt.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(sql_err)?;
    Ok((latest, floor.and_then(|s| s.parse().ok()).unwrap_or(0)))
}

/// Which loaded indexes `save_indexes` writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Saving {
    /// Every one that changed since its last save: the next open then
    /// finds them all (`flush`, at exit).
    Every,
    /// Only those with a saved file, which may hold rows since removed
    /// or be far behind the log. gc and the log's pruning need no more:
    /// an index never saved holds no removed row on disk and needs no
    /// log entry (it is built from the rows), and writing it whole there
    /// (183 MB at 200,000 memories, 0.6 s) made gc's own cost a third
    /// larger. The periodic and final flushes save it.
    OnDisk,
}

/// Where a partition's HNSW index is saved: named by a hash, never by user ids.
pub fn ann_paths(dir: &Path, partition: &str) -> (PathBuf, PathBuf) {
    let base = saved_base(dir, partition);
    (base.with_extension("usearch"), base.with_extension("json"))
}

/// Where a partition's keyword index is saved (`keyword_file`), beside its graph.
pub fn keywords_path(dir: &Path, partition: &str) -> PathBuf {
    saved_base(dir, partition).with_extension("keywords")
}

/// Where the rows removed from a partition's graph since its last whole
/// save are listed (`removed_file`).
pub fn removed_path(dir: &Path, partition: &str) -> PathBuf {
    saved_base(dir, partition).with_extension("removed")
}

/// The sidecar of the saved graph file at `index_path`, the file's
/// identity, and the rows its removed list names (as many as the sidecar
/// counts). None if a file is missing or the list is not this file's.
fn saved_list(index_path: &Path) -> Option<(Sidecar, FileId, Vec<i64>)> {
    let sidecar: Sidecar =
        serde_json::from_slice(&std::fs::read(index_path.with_extension("json")).ok()?).ok()?;
    let base = FileId::of(index_path)?;
    let rows = if sidecar.removed > 0 {
        removed_file::load(&index_path.with_extension("removed"), base, sidecar.removed)?
    } else {
        Vec::new()
    };
    Some((sidecar, base, rows))
}

/// What a load restores from the saved graph file at `index_path`: the
/// graph less the rows its list names, with its sidecar. None if a file
/// is missing or unusable.
fn saved_graph(index_path: &Path, dims: usize) -> Option<(VectorIndex, Sidecar)> {
    let (sidecar, base, rows) = saved_list(index_path)?;
    let mut vectors = VectorIndex::load_ann(dims, index_path).ok()?;
    if FileId::of(index_path) != Some(base) {
        // Saved again while we read it: the next load takes the new one.
        return None;
    }
    // The graph as read is the file: what the list takes out is what it
    // lost since.
    vectors.saved_whole(vectors.whole_mark(), base);
    for row in rows {
        vectors.remove(row).ok()?;
    }
    Some((vectors, sidecar))
}

/// The error of a failed write of the saved index file at `path`.
fn saved_file_err(path: &Path) -> impl Fn(std::io::Error) -> memloop_core::Error + '_ {
    move |e| memloop_core::Error::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// The rows of `partition`'s log entries in (`from`, `to`], if none of
/// them is a current memory (each entry then removed its row from the
/// indexes); None if one is (it was added or changed).
fn removals_only(
    conn: &Connection,
    partition: &str,
    from: i64,
    to: i64,
) -> Result<Option<Vec<i64>>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT c.row, m.row IS NOT NULL FROM \
             (SELECT DISTINCT row FROM index_log WHERE partition = ?1 AND seq > ?2 AND seq <= ?3) AS c \
             LEFT JOIN memories AS m ON m.row = c.row AND m.valid_until IS NULL",
        )
        .map_err(sql_err)?;
    let rows = stmt
        .query_map(params![partition, from, to], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?))
        })
        .map_err(sql_err)?;
    let mut removed = Vec::new();
    for row in rows {
        let (row, current) = row.map_err(sql_err)?;
        if current {
            return Ok(None);
        }
        removed.push(row);
    }
    Ok(Some(removed))
}

/// The saved graph file at `index_path` as a load restores it (its list
/// of removed rows applied), for tools and tests that read the files.
pub fn load_saved_graph(index_path: &Path, dims: usize) -> Option<VectorIndex> {
    saved_graph(index_path, dims).map(|(vectors, _)| vectors)
}

fn saved_base(dir: &Path, partition: &str) -> PathBuf {
    let hash: String = Sha256::digest(partition.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join("index").join(hash)
}

impl EmbeddedStore {
    /// The partition's index, loaded on first use and caught up with every commit.
    pub(crate) fn partition_index(&self, partition: &str) -> Result<Arc<RwLock<PartitionIndex>>> {
        let conn = self.conn();
        // Looked up under the connection's lock, which loads hold: callers
        // that waited behind a load of this partition find it loaded
        // instead of each loading (and building an HNSW graph) again.
        let existing = lock(&self.partitions).get(partition).cloned();
        let part = match existing {
            Some(p) => p,
            None => {
                let loaded = Arc::new(RwLock::new(self.load_partition(&conn, partition)?));
                let part = lock(&self.partitions)
                    .entry(partition.to_string())
                    .or_insert_with(|| loaded.clone())
                    .clone();
                if Arc::ptr_eq(&part, &loaded) {
                    // Just read in one transaction with the log's position:
                    // as current as a look at the log now would find it
                    // (a write committed since is concurrent with this
                    // call). Looking again took a read transaction of its
                    // own, a tenth of a small partition's first search.
                    return Ok(part);
                }
                part
            }
        };
        let (latest, floor) = log_position(&conn)?;
        {
            // Up to date (the usual case): no need to wait for a save.
            let p = self.read_for_search(&part);
            if p.applied_seq >= floor && p.applied_seq >= latest {
                drop(p);
                return Ok(part);
            }
        }
        let mut p = write(&part);
        if p.applied_seq < floor {
            // The log was pruned past this index (gc in another process): start over.
            *p = self.load_partition(&conn, partition)?;
        }
        if latest > p.applied_seq && self.gc_chunk_applied(&conn, partition, &p, latest)? {
            // gc's chunk, just committed: its rows are out of this index
            // already, and reading its 20,000 entries took 30-60 ms.
            p.applied_seq = latest;
        }
        if latest > p.applied_seq {
            let from = p.applied_seq;
            self.apply_log(&conn, &mut p, partition, from)?;
            p.applied_seq = latest;
            // Rows may have come back (a catch-up can read rows gc has cut
            // from the index but not yet deleted): gc must not assume its
            // removals still hold.
            p.generation = next_generation();
            if !p.vectors.is_ann() && p.vectors.len() >= self.options.ann_threshold {
                p.vectors.promote()?;
            }
        }
        drop(p);
        Ok(part)
    }

    /// After this process committed `rows` changes to `partition`: a loaded
    /// index catches up at once, so the next search finds nothing to apply
    /// (after a bulk import, neither the catch-up nor the HNSW graph falls
    /// on it); an index not loaded is loaded for a batch of at least
    /// [`LOAD_FROM_BATCH`] rows (an import keeps it current from its first
    /// batch) and otherwise left to the first search (a one-off add to a
    /// large partition does not pay the load). The write is committed
    /// whatever happens here: a failure is logged and the next search
    /// catches up instead.
    pub(crate) fn keep_current(&self, partition: &str, rows: usize) {
        let loaded = lock(&self.partitions).contains_key(partition);
        if !loaded && rows < LOAD_FROM_BATCH {
            return;
        }
        if let Err(e) = self.partition_index(partition) {
            tracing::warn!(error = %e, "index catch-up after a write failed; the next search retries it");
        }
    }

    /// What this process holds in memory of a scope's partition index:
    /// None when it is not loaded (the next search loads it).
    pub fn index_status(&self, scope: &Scope) -> Result<Option<IndexStatus>> {
        let partition = scope.partition()?;
        let Some(part) = lock(&self.partitions).get(&partition).cloned() else {
            return Ok(None);
        };
        let latest = max_seq(&self.conn())?;
        let p = read(&part);
        Ok(Some(IndexStatus {
            vectors: p.vectors.len(),
            keys: p.vectors.keys(),
            hnsw: p.vectors.is_ann(),
            behind: (latest - p.applied_seq).max(0),
            restored: p.restored,
        }))
    }

    fn load_partition(&self, conn: &Connection, partition: &str) -> Result<PartitionIndex> {
        // One read transaction: the rows and the log position agree.
        conn.execute_batch("BEGIN").map_err(sql_err)?;
        let result = self.load_partition_in_tx(conn, partition);
        let _ = conn.execute_batch("COMMIT");
        result
    }

    fn load_partition_in_tx(&self, conn: &Connection, partition: &str) -> Result<PartitionIndex> {
        let applied_seq = max_seq(conn)?;
        // With a saved graph to restore, the vectors are not read here
        // (1.5 KB a row); without one (every small partition) they are read
        // in the same scan as the texts, not by a second one. Only a
        // partition with a saved graph can have a saved keyword index.
        let saved = ann_paths(&self.dir, partition).1.is_file();
        if saved {
            if let Some(part) = self.restore_saved(conn, partition, applied_seq)? {
                return Ok(part);
            }
        }
        let dim = self.embedder.dimensions;
        let mut keywords = KeywordIndex::default();
        let mut expiry = Expiry::default();
        // The texts only of rows without their terms (written before
        // schema version 7): the others' terms are read as stored.
        let mut stmt = conn
            .prepare_cached(if saved {
                "SELECT row, terms, CASE WHEN terms IS NULL THEN text END, \
                 CASE WHEN terms IS NULL THEN context END, metadata, expires_at FROM memories \
                 WHERE partition = ?1 AND valid_until IS NULL"
            } else {
                "SELECT row, terms, CASE WHEN terms IS NULL THEN text END, \
                 CASE WHEN terms IS NULL THEN context END, metadata, expires_at, embedding FROM memories \
                 WHERE partition = ?1 AND valid_until IS NULL"
            })
            .map_err(sql_err)?;
        // Filled as the rows are read (no vector allocated per row); made
        // a graph at the end if the partition is large enough for one.
        let mut vectors = VectorIndex::Flat(Flat::new(dim));
        let mut docs = Vec::new();
        let mut rows = stmt.query([partition]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            let row: i64 = r.get(0).map_err(sql_err)?;
            // Borrowed from the row, not copied: two allocations a row
            // less in a load.
            let stored = text_ref(r, 1)?;
            let metadata = text_ref(r, 4)?.unwrap_or_default();
            expiry.set(row, r.get(5).map_err(sql_err)?);
            if !saved {
                // Not a blob: refused by the index as the wrong width.
                let blob = r.get_ref(6).map_err(sql_err)?.as_blob().unwrap_or(&[]);
                vectors.insert_blob(row, blob)?;
            }
            let speaker = speaker_of(metadata);
            match stored {
                Some(stored) => self.insert_terms(
                    &mut keywords,
                    row,
                    stored_terms::parse(stored),
                    speaker.as_deref(),
                ),
                None => {
                    let text: Option<String> = r.get(2).map_err(sql_err)?;
                    let context: Option<String> = r.get(3).map_err(sql_err)?;
                    docs.push((row, text.unwrap_or_default(), context, speaker));
                }
            }
        }
        drop(rows);
        drop(stmt);
        for ((row, _, _, speaker), (terms, context_terms)) in docs.iter().zip(self.analyse(&docs)) {
            let terms = (as_strs(&terms), as_strs(&context_terms));
            self.insert_terms(&mut keywords, *row, terms, speaker.as_deref());
        }
        let count = keywords.len();
        if saved && count >= self.options.ann_threshold {
            let floor = log_floor(conn)?;
            if let Some((vectors, saved_seq)) = self
                .restore_ann(partition)
                .filter(|(_, seq)| (floor..=applied_seq).contains(seq))
            {
                // Bring the saved graph up to date with what was committed after it was saved.
                let mut part = PartitionIndex {
                    vectors,
                    keywords,
                    expiry,
                    applied_seq,
                    saved_seq,
                    restored: false,
                    generation: next_generation(),
                };
                self.apply_log_vectors_only(conn, &mut part, partition, saved_seq)?;
                part.vectors.count_pieces(count);
                return Ok(part);
            }
        }
        if saved {
            // The saved graph is unusable (or the partition shrank below
            // the threshold): read the vectors after all.
            let mut stmt = conn
                .prepare_cached(
                    "SELECT row, embedding FROM memories WHERE partition = ?1 AND valid_until IS NULL",
                )
                .map_err(sql_err)?;
            let mut rows = stmt.query([partition]).map_err(sql_err)?;
            while let Some(r) = rows.next().map_err(sql_err)? {
                let blob = r.get_ref(1).map_err(sql_err)?.as_blob().unwrap_or(&[]);
                vectors.insert_blob(r.get(0).map_err(sql_err)?, blob)?;
            }
        }
        if count >= self.options.ann_threshold {
            vectors.promote()?;
        }
        Ok(PartitionIndex {
            vectors,
            keywords,
            expiry,
            applied_seq,
            saved_seq: 0,
            restored: false,
            generation: next_generation(),
        })
    }

    /// The partition's indexes as last saved (graph and keyword index),
    /// caught up with the log: no text read or analysed. None when either
    /// file is missing, unusable or behind the pruned log, or the
    /// partition shrank below the graph's threshold.
    fn restore_saved(
        &self,
        conn: &Connection,
        partition: &str,
        applied_seq: i64,
    ) -> Result<Option<PartitionIndex>> {
        let path = keywords_path(&self.dir, partition);
        if !path.is_file() {
            return Ok(None);
        }
        let floor = log_floor(conn)?;
        let Some(saved) = keyword_file::load(&path, self.options.context_weight) else {
            tracing::warn!(path = %path.display(), "saved keyword index unusable; analysing the texts instead");
            return Ok(None);
        };
        // Behind the pruned log, or ahead of the database (a database
        // restored from a backup under newer index files): not this store's.
        // Checked on the keyword file before the graph is read, so a stale
        // keyword file does not cost a read of the graph here and another
        // on the way back (`load_partition_in_tx` restores the graph alone).
        let usable = |seq: i64| (floor..=applied_seq).contains(&seq);
        if !usable(saved.seq) {
            return Ok(None);
        }
        let Some((vectors, graph_seq)) = self.restore_ann(partition).filter(|g| usable(g.1)) else {
            return Ok(None);
        };
        let mut part = PartitionIndex {
            vectors,
            keywords: saved.keywords,
            expiry: saved.expiry,
            applied_seq,
            saved_seq: graph_seq.min(saved.seq),
            restored: true,
            generation: next_generation(),
        };
        // Whatever was committed after the older of the two files:
        // re-applying a change one of them already holds is harmless.
        let from = part.saved_seq;
        self.apply_log(conn, &mut part, partition, from)?;
        let count = part.keywords.len();
        if count < self.options.ann_threshold {
            return Ok(None);
        }
        part.vectors.count_pieces(count);
        Ok(Some(part))
    }

    /// A throwaway exact index of the memories visible at `as_of` (or of
    /// every version, current or not, when `as_of` is None): how a search
    /// looks into the past, which the shared indexes (current rows only) do
    /// not hold. Costs a scan of the partition; meant for occasional queries.
    pub(crate) fn past_index(&self, partition: &str, as_of: Option<i64>) -> Result<PartitionIndex> {
        let conn = self.conn();
        let mut keywords = KeywordIndex::default();
        let mut memo = StemMemo::default();
        let mut vectors = VectorIndex::Flat(Flat::new(self.embedder.dimensions));
        let mut stmt = conn
            .prepare_cached(
                "SELECT row, text, context, metadata, embedding, terms FROM memories WHERE partition = ?1 \
                 AND (?2 IS NULL OR (valid_from <= ?2 AND (valid_until IS NULL OR valid_until > ?2)))",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(rusqlite::params![partition, as_of], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                    blob_to_vector(&r.get::<_, Vec<u8>>(4)?),
                    r.get::<_, Option<String>>(5)?,
                ))
            })
            .map_err(sql_err)?;
        for row in rows {
            let (row, text, context, metadata, v, terms) = row.map_err(sql_err)?;
            let speaker = speaker_of(&metadata);
            self.index_keywords(
                (&mut keywords, &mut memo),
                row,
                (terms.as_deref(), &text, context.as_deref()),
                speaker.as_deref(),
            );
            vectors.insert(row, &v)?;
        }
        // Its searches look into the past, where expiry does not apply.
        Ok(PartitionIndex {
            vectors,
            keywords,
            expiry: Expiry::default(),
            applied_seq: 0,
            saved_seq: 0,
            restored: false,
            generation: next_generation(),
        })
    }

    /// The rows of a partition changed after `from`, each with what the
    /// indexes should hold of it (None: gone or no longer current), read
    /// in one statement: a catch-up after gc deleted thousands of rows
    /// must not run a query per row while searches wait on it.
    fn changed_rows(
        conn: &Connection,
        partition: &str,
        from: i64,
    ) -> Result<Vec<(i64, Option<CurrentRow>)>> {
        let mut stmt = conn
            .prepare_cached(
                "SELECT c.row, m.text, m.embedding, m.context, m.metadata, m.expires_at, m.terms \
                 FROM (SELECT DISTINCT row FROM index_log WHERE partition = ?1 AND seq > ?2) AS c \
                 LEFT JOIN memories AS m ON m.row = c.row AND m.valid_until IS NULL",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(params![partition, from], |r| {
                let row = r.get::<_, i64>(0)?;
                let Some(text) = r.get::<_, Option<String>>(1)? else {
                    return Ok((row, None));
                };
                Ok((
                    row,
                    Some(CurrentRow {
                        terms: r.get(6)?,
                        text,
                        vector: blob_to_vector(&r.get::<_, Vec<u8>>(2)?),
                        context: r.get(3)?,
                        speaker: speaker_of(&r.get::<_, String>(4)?),
                        expires_at: r.get(5)?,
                    }),
                ))
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
    }

    fn apply_log(
        &self,
        conn: &Connection,
        p: &mut PartitionIndex,
        partition: &str,
        from: i64,
    ) -> Result<()> {
        let changed = Self::changed_rows(conn, partition, from)?;
        let mut vectors = Vec::with_capacity(changed.len());
        let mut memo = StemMemo::default();
        for (row, current) in &changed {
            p.remove(*row)?;
            if let Some(c) = current {
                vectors.push((*row, c.vector.as_slice()));
                p.expiry.set(*row, c.expires_at);
                self.index_keywords(
                    (&mut p.keywords, &mut memo),
                    *row,
                    (c.terms.as_deref(), &c.text, c.context.as_deref()),
                    c.speaker.as_deref(),
                );
            }
        }
        p.vectors.insert_many(&vectors)
    }

    pub(crate) fn apply_log_vectors_only(
        &self,
        conn: &Connection,
        p: &mut PartitionIndex,
        partition: &str,
        from: i64,
    ) -> Result<()> {
        let changed = Self::changed_rows(conn, partition, from)?;
        let mut vectors = Vec::with_capacity(changed.len());
        for (row, current) in &changed {
            p.vectors.remove(*row)?;
            if let Some(c) = current {
                vectors.push((*row, c.vector.as_slice()));
            }
        }
        p.vectors.insert_many(&vectors)
    }

    /// A saved HNSW index of this partition and the seq it reflects, if usable.
    pub(crate) fn restore_ann(&self, partition: &str) -> Option<(VectorIndex, i64)> {
        let (index_path, _) = ann_paths(&self.dir, partition);
        let (vectors, sidecar) = saved_graph(&index_path, self.embedder.dimensions)?;
        self.owns(&sidecar, partition)
            .then_some((vectors, sidecar.seq))
    }

    /// Whether a saved index is this partition's, for this model.
    fn owns(&self, sidecar: &Sidecar, partition: &str) -> bool {
        sidecar.partition == partition && sidecar.model_id == self.embedder.model_id
    }

    /// Saves every HNSW index that changed since it was last saved, and
    /// writes the retrieval counts waiting to be written.
    pub(crate) fn flush(&self) -> Result<()> {
        self.access.flush()?;
        self.save_indexes(Saving::Every)
    }

    /// Saves the HNSW indexes that changed since they were last saved
    /// (`which`: all of them, or only those with a saved file). gc and
    /// the log's pruning need no more: the retrieval counts have a thread
    /// of their own, and writing them there cost gc an fsync that wrote
    /// back every page gc had written (0.2 s at 100,000 memories).
    pub(crate) fn save_indexes(&self, which: Saving) -> Result<()> {
        // Listed under `saving`: a partition dropped (a purge) before this
        // point is not saved again, and one dropped after waits for it.
        let _saving = lock(&self.saving);
        let parts: Vec<(String, Arc<RwLock<PartitionIndex>>)> = lock(&self.partitions)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (partition, part) in parts {
            let (seq, whole) = {
                let p = read(&part);
                if !p.vectors.is_ann() || p.saved_seq >= p.applied_seq {
                    continue;
                }
                // Asked of the file system only for an index that changed.
                if which == Saving::OnDisk && !ann_paths(&self.dir, &partition).0.exists() {
                    continue;
                }
                let whole = self.save_ann(
                    &partition,
                    &p.vectors,
                    p.applied_seq,
                    Some((&p.keywords, &p.expiry)),
                )?;
                (p.applied_seq, whole)
            };
            let mut p = write(&part);
            p.saved_seq = p.saved_seq.max(seq);
            if let Some((mark, base)) = whole {
                p.vectors.saved_whole(mark, base);
            }
        }
        Ok(())
    }

    /// Saves a partition's HNSW index as reflecting the log up to `seq`,
    /// with its keyword index when given (else a saved one, now behind
    /// the graph, is removed): files first, then the sidecar (a crash
    /// between them leaves files newer than the sidecar says, and
    /// replaying the log over them is harmless). A graph that has only
    /// lost rows since the file it was saved whole to (still in place)
    /// is saved as the list of those rows; else it is written whole, and
    /// what the file now holds is returned, for the caller to tell the
    /// index under its write lock. The caller holds `saving`.
    pub(crate) fn save_ann(
        &self,
        partition: &str,
        vectors: &VectorIndex,
        seq: i64,
        keywords: Option<(&KeywordIndex, &Expiry)>,
    ) -> Result<Option<(WholeMark, FileId)>> {
        let (index_path, sidecar_path) = ann_paths(&self.dir, partition);
        let listed = vectors
            .removed_since_whole()
            .filter(|(base, _)| FileId::of(&index_path) == Some(*base));
        let (removed, whole) = match listed {
            Some((base, rows)) => {
                let path = removed_path(&self.dir, partition);
                removed_file::save(&path, base, rows).map_err(saved_file_err(&path))?;
                (rows.len(), None)
            }
            None => {
                let mark = vectors.whole_mark();
                let tmp = index_path.with_extension("usearch.tmp");
                vectors.save(&tmp)?;
                std::fs::rename(&tmp, &index_path).map_err(saved_file_err(&index_path))?;
                let _ = std::fs::remove_file(removed_path(&self.dir, partition));
                (0, FileId::of(&index_path).map(|base| (mark, base)))
            }
        };
        let keywords_at = keywords_path(&self.dir, partition);
        match keywords {
            Some((k, expiry)) => {
                keyword_file::save(&keywords_at, seq, self.options.context_weight, k, expiry)
                    .map_err(saved_file_err(&keywords_at))?
            }
            None => {
                let _ = std::fs::remove_file(&keywords_at);
            }
        }
        self.write_sidecar(&sidecar_path, partition, seq, removed)?;
        Ok(whole)
    }

    fn write_sidecar(&self, path: &Path, partition: &str, seq: i64, removed: usize) -> Result<()> {
        let sidecar = Sidecar {
            partition: partition.to_string(),
            seq,
            model_id: self.embedder.model_id.clone(),
            removed,
        };
        let json = serde_json::to_vec(&sidecar)
            .map_err(|e| memloop_core::Error::Internal(e.to_string()))?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, json).map_err(saved_file_err(path))?;
        std::fs::rename(&tmp, path).map_err(saved_file_err(path))
    }

    /// For a partition not loaded whose log entries after its saved
    /// graph's position all remove rows (gc's, say): adds those rows to
    /// the graph's removed list and moves its sidecar on, without reading
    /// the graph (183 MB at 200,000 memories) or writing it. Its saved
    /// keyword index is removed, as when the graph is restored and cut
    /// (the next load analyses the texts). False when this cannot be done
    /// (no usable saved graph or list, a row added since, the log pruned
    /// past it): the caller restores the graph instead. The caller holds
    /// `saving`.
    pub(crate) fn list_removed_unloaded(&self, partition: &str) -> Result<bool> {
        let (index_path, sidecar_path) = ann_paths(&self.dir, partition);
        let Some((sidecar, base, mut rows)) = saved_list(&index_path) else {
            return Ok(false);
        };
        if !self.owns(&sidecar, partition) {
            return Ok(false);
        }
        let (latest, removed) = {
            let conn = self.conn();
            let (latest, floor) = log_position(&conn)?;
            if sidecar.seq < floor {
                return Ok(false);
            }
            (
                latest,
                removals_only(&conn, partition, sidecar.seq, latest)?,
            )
        };
        let Some(removed) = removed else {
            return Ok(false);
        };
        rows.extend(removed);
        let path = removed_path(&self.dir, partition);
        removed_file::save(&path, base, &rows).map_err(saved_file_err(&path))?;
        let _ = std::fs::remove_file(keywords_path(&self.dir, partition));
        self.write_sidecar(&sidecar_path, partition, latest, rows.len())?;
        Ok(true)
    }

    /// Saves the HNSW indexes, then deletes the index_log entries that no
    /// saved index needs any more. Returns how many entries were deleted.
    pub(crate) fn compact_log(&self) -> Result<usize> {
        self.save_indexes(Saving::OnDisk)?;
        let mut floor = {
            let conn = self.conn();
            max_seq(&conn)?
        };
        // Every saved HNSW index (of this process or another) must still be able to catch up.
        if let Ok(entries) = std::fs::read_dir(self.dir.join("index")) {
            for e in entries.flatten() {
                if e.path().extension().is_some_and(|x| x == "json") {
                    let sidecar = std::fs::read(e.path())
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Sidecar>(&b).ok());
                    if let Some(s) = sidecar {
                        floor = floor.min(s.seq);
                    }
                }
            }
        }
        // On a connection of its own: pruning many entries must not hold
        // the shared one, which every search needs to catch up.
        let mut conn = self.side_connection()?;
        let tx = write_tx(&mut conn)?;
        let floor = floor.max(log_floor(&tx)?);
        // Every entry at or below the floor (the usual case once every
        // index is saved): the log is emptied whole, which frees its pages
        // without a row-by-row delete (300,000 entries: 0.3 s).
        // `sqlite_sequence` keeps the last seq, so none is reused.
        let deleted = if floor >= max_seq(&tx)? {
            tx.execute("DELETE FROM index_log", [])
        } else {
            tx.execute("DELETE FROM index_log WHERE seq <= ?1", [floor])
        }
        .map_err(sql_err)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('index_log_floor', ?1) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [floor.to_string()],
        )
        .map_err(sql_err)?;
        tx.commit().map_err(sql_err)?;
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(sql_err)?;
        Ok(deleted)
    }

    /// Drops a partition's in-memory and saved indexes (after forget or reindex).
    pub(crate) fn drop_partition_index(&self, partition: &str) {
        // Under `saving`: a flush that listed this partition finishes its
        // save first, and the files it wrote go too.
        let _saving = lock(&self.saving);
        lock(&self.partitions).remove(partition);
        self.drop_saved_ann(partition);
    }

    /// Removes a partition's saved index files (the next load rebuilds them).
    pub(crate) fn drop_saved_ann(&self, partition: &str) {
        // Every file named after the partition's hash: graph, sidecar,
        // keyword index, and what a save cut short left (temporary files
        // hold the same bytes).
        let base = saved_base(&self.dir, partition);
        let Some(prefix) = base
            .file_name()
            .map(|n| format!("{}.", n.to_string_lossy()))
        else {
            return;
        };
        if let Ok(entries) = std::fs::read_dir(self.dir.join("index")) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }

    /// The terms and context terms of each (row, text, context, speaker):
    /// on every core for a large partition (analysis is most of a load,
    /// and what keeps a restart waiting), on this thread for a small one.
    fn analyse(&self, docs: &[Doc]) -> Vec<(Vec<String>, Vec<String>)> {
        const PARALLEL_FROM: usize = 4096;
        let one = |part: &[Doc]| {
            let mut memo = StemMemo::default();
            part.iter()
                .map(|(_, text, context, _)| {
                    stored_terms::analyse(text, context.as_deref(), &mut memo)
                })
                .collect::<Vec<_>>()
        };
        if docs.len() < PARALLEL_FROM {
            return one(docs);
        }
        // Asked only here: it reads the process's CPU quota from files,
        // which cost a small partition's load (every one with its terms
        // stored, so nothing to analyse) a tenth of its time.
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        if threads < 2 {
            return one(docs);
        }
        let chunk = docs.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = docs
                .chunks(chunk)
                .map(|part| scope.spawn(move || one(part)))
                .collect();
            handles
                .into_iter()
                .zip(docs.chunks(chunk))
                // A panicked thread's part is analysed again here.
                .flat_map(|(h, part)| h.join().unwrap_or_else(|_| one(part)))
                .collect()
        })
    }

    /// Indexes a row's terms: as stored when it has them, else analysed
    /// from its text and context.
    fn index_keywords(
        &self,
        (k, memo): (&mut KeywordIndex, &mut StemMemo),
        row: i64,
        (stored, text, context): (Option<&str>, &str, Option<&str>),
        speaker: Option<&str>,
    ) {
        match stored {
            Some(stored) => self.insert_terms(k, row, stored_terms::parse(stored), speaker),
            None => {
                let (terms, context_terms) = stored_terms::analyse(text, context, memo);
                let terms = (as_strs(&terms), as_strs(&context_terms));
                self.insert_terms(k, row, terms, speaker)
            }
        }
    }

    /// Adds a row's (terms, context terms) to a keyword index.
    fn insert_terms<'t>(
        &self,
        k: &mut KeywordIndex,
        row: i64,
        (terms, context_terms): (
            impl Iterator<Item = &'t str>,
            impl Iterator<Item = &'t str> + Clone,
        ),
        speaker: Option<&str>,
    ) {
        k.insert_terms(
            row,
            terms,
            context_terms,
            self.options.context_weight,
            speaker,
        );
    }
}
