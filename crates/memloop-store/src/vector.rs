//! The vector index of one partition: an exact scan while the partition is
//! small (its vectors in f16), an HNSW graph (usearch, f16) once it passes a threshold. Vectors are
//! unit length, so cosine similarity is the dot product.

use std::path::Path;

use half::f16;
use half::slice::HalfFloatSliceExt;
use memloop_core::{Error, Result};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::removed_file::FileId;
use crate::rows::StoredVector;
use memloop_longterm::keyword::top_k;
use memloop_longterm::pieces::{by_row, discounted, VectorHit};

pub enum VectorIndex {
    Flat(Flat),
    Ann(Ann),
}

/// A row's vectors are kept under keys: the row itself for the first (the
/// start of the text, what the embedder reads of it) and `row | i << 48`
/// for the i-th later piece of a long text. Rows (SQLite's, from 1 up)
/// stay far below 2^48, and a piece never answers for another row.
const PIECE_SHIFT: u32 = 48;
const ROW_MASK: i64 = (1 << PIECE_SHIFT) - 1;
/// Vectors one row may have: its first and its pieces.
pub const MAX_VECTORS: usize = memloop_core::MAX_PIECES + 1;

fn key(row: i64, piece: usize) -> i64 {
    row | ((piece as i64) << PIECE_SHIFT)
}

fn row_of(key: i64) -> i64 {
    key & ROW_MASK
}

#[derive(Default)]
pub struct Flat {
    dim: usize,
    /// Keys, in the order of their vectors in `data`.
    keys: Vec<i64>,
    /// Half precision, as SQLite stores them (`rows.rs`): a partition's
    /// vectors cost half the memory, and a search reads the same values a
    /// reload would.
    data: Vec<f16>,
    pos: foldhash::HashMap<i64, usize>,
    /// How many of the keys are later pieces (not a row's first vector).
    pieces: usize,
}

pub struct Ann {
    index: Index,
    pieces: usize,
    /// Searches in flight, at most `search_threads()`: usearch keeps a
    /// search context per reserved thread and fails a search that finds
    /// none free ("Reserve capacity ahead of searches!"), which a server's
    /// concurrent searches of one partition (its index is read-locked, so
    /// they run together) met at once under load.
    searching: SearchGate,
    since: SinceWhole,
}

impl Ann {
    fn new(index: Index, pieces: usize) -> Ann {
        Ann {
            index,
            pieces,
            searching: SearchGate::default(),
            since: SinceWhole::default(),
        }
    }
}

/// What a graph went through since it was last saved whole (or loaded),
/// so that a save after removals only can list the rows removed instead
/// of writing every vector again (`removed_file`).
#[derive(Default)]
struct SinceWhole {
    /// The file it was last saved whole to or loaded from (None: never).
    base: Option<FileId>,
    /// Vectors added to it, and how many of those the base file holds.
    adds: u64,
    base_adds: u64,
    /// Rows taken out since the base file was written, in order.
    removed: Vec<i64>,
}

/// Where a whole save of a graph began: what the file it writes holds.
#[derive(Clone, Copy)]
pub struct WholeMark {
    adds: u64,
    removed: usize,
}

/// The thread contexts every graph reserves, and so the searches of one
/// graph that run at once (more could not run faster on these cores).
fn search_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// A counting gate of `search_threads()` places.
#[derive(Default)]
struct SearchGate {
    running: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

impl SearchGate {
    fn count(&self) -> std::sync::MutexGuard<'_, usize> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` once a place is free.
    fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let mut running = self.count();
        while *running >= search_threads() {
            running = self.freed.wait(running).unwrap_or_else(|p| p.into_inner());
        }
        *running += 1;
        drop(running);
        let _place = Place(self);
        f()
    }
}

/// A place taken in a `SearchGate`, given back when dropped: also when the
/// search unwinds, which would otherwise leave the gate a place short for
/// good.
struct Place<'a>(&'a SearchGate);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        *self.0.count() -= 1;
        self.0.freed.notify_one();
    }
}

fn ann_err(e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("vector index: {e}"))
}

fn ann_options(dim: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::IP,
        quantization: ScalarKind::F16,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 96,
        multi: false,
    }
}

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent sums let the compiler keep several SIMD lanes busy.
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

impl Flat {
    pub fn new(dim: usize) -> Flat {
        Flat {
            dim,
            ..Default::default()
        }
    }

    /// Adds a key (not held yet) and gives its vector's place to fill.
    fn push_key(&mut self, k: i64) -> &mut [f16] {
        self.pos.insert(k, self.keys.len());
        self.keys.push(k);
        self.pieces += usize::from(k != row_of(k));
        let start = self.data.len();
        self.data.resize(start + self.dim, f16::ZERO);
        &mut self.data[start..]
    }
}

/// Whether `len` floats are a row's vectors: one to `MAX_VECTORS` of `dim`.
fn check_width(len: usize, dim: usize) -> Result<()> {
    if dim == 0 || len == 0 || !len.is_multiple_of(dim) || len / dim > MAX_VECTORS {
        return Err(ann_err(format!(
            "vector of {len} dimensions, index has {dim} (a row may have 1 to {MAX_VECTORS} vectors of {dim})"
        )));
    }
    Ok(())
}

/// A row's vectors (concatenated, first the text's start) under their keys.
fn keyed(row: i64, v: &[f32], dim: usize) -> impl Iterator<Item = (i64, &[f32])> {
    v.chunks_exact(dim.max(1))
        .enumerate()
        .map(move |(i, piece)| (key(row, i), piece))
}

impl VectorIndex {
    /// Rows held (a row with pieces counts once).
    pub fn len(&self) -> usize {
        match self {
            VectorIndex::Flat(f) => f.keys.len() - f.pieces,
            VectorIndex::Ann(a) => a.index.size().saturating_sub(a.pieces),
        }
    }

    /// Keys held: each row's first vector and its pieces.
    pub fn keys(&self) -> usize {
        match self {
            VectorIndex::Flat(f) => f.keys.len(),
            VectorIndex::Ann(a) => a.index.size(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_ann(&self) -> bool {
        matches!(self, VectorIndex::Ann(_))
    }

    /// For a graph restored from a file and caught up with the rows: it
    /// holds `rows` rows, so the rest of its vectors are pieces (the count
    /// only sizes how far a search looks).
    pub fn count_pieces(&mut self, rows: usize) {
        if let VectorIndex::Ann(a) = self {
            a.pieces = a.index.size().saturating_sub(rows);
        }
    }

    fn dim(&self) -> usize {
        match self {
            VectorIndex::Flat(f) => f.dim,
            VectorIndex::Ann(a) => a.index.dimensions(),
        }
    }

    /// Inserts (or replaces) a row's vectors: `v` is one vector, or a long
    /// text's pieces one after another, the text's start first.
    pub fn insert(&mut self, row: i64, v: &[f32]) -> Result<()> {
        let dim = self.dim();
        check_width(v.len(), dim)?;
        self.remove(row)?;
        for (k, piece) in keyed(row, v, dim) {
            self.add_key(k, piece)?;
        }
        Ok(())
    }

    fn add_key(&mut self, k: i64, v: &[f32]) -> Result<()> {
        match self {
            VectorIndex::Flat(f) => {
                // A slice at a time: the CPU's conversion instructions
                // where it has them (see `rows::vector_to_blob`).
                f.push_key(k).convert_from_f32_slice(v);
                Ok(())
            }
            VectorIndex::Ann(a) => {
                if a.index.size() + 1 > a.index.capacity() {
                    a.index
                        .reserve_capacity_and_threads(
                            (a.index.capacity() * 2).max(1024),
                            search_threads(),
                        )
                        .map_err(ann_err)?;
                }
                a.index.add(k as u64, v).map_err(ann_err)?;
                a.pieces += usize::from(k != row_of(k));
                a.since.adds += 1;
                Ok(())
            }
        }
    }

    /// Inserts (or replaces) a row's vectors as SQLite stores them
    /// (`rows::vector_to_blob`): an exact index decodes the halves straight
    /// into its storage (converting them to f32 and back was a third of
    /// loading a small partition, and a vector allocated per row a sixth),
    /// a graph takes them as f32.
    pub fn insert_blob(&mut self, row: i64, blob: &[u8]) -> Result<()> {
        let halves = match (&*self, StoredVector::half_bytes(blob)) {
            (VectorIndex::Flat(_), Some(halves)) => halves,
            _ => return self.insert(row, &StoredVector::from_blob(blob).into_f32()),
        };
        let dim = self.dim();
        check_width(halves.len() / 2, dim)?;
        self.remove(row)?;
        if let VectorIndex::Flat(f) = self {
            for (i, piece) in halves.chunks_exact(2 * dim).enumerate() {
                let place = f.push_key(key(row, i));
                for (h, b) in place.iter_mut().zip(piece.chunks_exact(2)) {
                    *h = f16::from_le_bytes([b[0], b[1]]);
                }
            }
        }
        Ok(())
    }

    /// Inserts (or replaces) many rows at once: into an HNSW graph on every
    /// core when there are enough of them to pay for the threads (a bulk
    /// import's batch), one by one otherwise.
    pub fn insert_many(&mut self, items: &[(i64, &[f32])]) -> Result<()> {
        const PARALLEL_FROM: usize = 64;
        if !self.is_ann() || items.len() < PARALLEL_FROM {
            return items.iter().try_for_each(|(row, v)| self.insert(*row, v));
        }
        let dim = self.dim();
        for (_, v) in items {
            check_width(v.len(), dim)?;
        }
        for (row, _) in items {
            self.remove(*row)?;
        }
        let VectorIndex::Ann(a) = self else {
            return Ok(());
        };
        let keys: Vec<(i64, &[f32])> = items
            .iter()
            .flat_map(|(row, v)| keyed(*row, v, dim))
            .collect();
        let threads = search_threads();
        let needed = a.index.size() + keys.len();
        if needed > a.index.capacity() {
            a.index
                .reserve_capacity_and_threads(needed.max(a.index.capacity() * 2), threads)
                .map_err(ann_err)?;
        }
        a.since.adds += keys.len() as u64;
        add_concurrently(&a.index, &keys, threads, &|_, _| {})?;
        a.pieces += keys.len() - items.len();
        Ok(())
    }

    /// Takes a row's vectors out (its first and every piece).
    pub fn remove(&mut self, row: i64) -> Result<()> {
        let mut i = 0;
        while i < MAX_VECTORS && self.remove_key(key(row, i))? {
            i += 1;
        }
        if let (VectorIndex::Ann(a), true) = (self, i > 0) {
            a.since.removed.push(row);
        }
        Ok(())
    }

    /// When a graph has only lost rows since it was saved whole to (or
    /// loaded from) the file `base`: that file and the rows lost since.
    pub fn removed_since_whole(&self) -> Option<(FileId, &[i64])> {
        match self {
            VectorIndex::Ann(a) if a.since.adds == a.since.base_adds => {
                a.since.base.map(|base| (base, a.since.removed.as_slice()))
            }
            _ => None,
        }
    }

    /// Taken before a whole save, to give `saved_whole` afterwards: the
    /// index may change between the two (the save holds a read lock only).
    pub fn whole_mark(&self) -> WholeMark {
        match self {
            VectorIndex::Ann(a) => WholeMark {
                adds: a.since.adds,
                removed: a.since.removed.len(),
            },
            VectorIndex::Flat(_) => WholeMark {
                adds: 0,
                removed: 0,
            },
        }
    }

    /// The graph as of `mark` is now the file `base`: what changed after
    /// the mark is what changed since.
    pub fn saved_whole(&mut self, mark: WholeMark, base: FileId) {
        if let VectorIndex::Ann(a) = self {
            a.since.base = Some(base);
            a.since.base_adds = mark.adds;
            let listed = mark.removed.min(a.since.removed.len());
            a.since.removed.drain(..listed);
        }
    }

    /// Removes one key's vector; false if there was none.
    fn remove_key(&mut self, k: i64) -> Result<bool> {
        let piece = usize::from(k != row_of(k));
        match self {
            VectorIndex::Flat(f) => {
                let Some(p) = f.pos.remove(&k) else {
                    return Ok(false);
                };
                let last = f.keys.len() - 1;
                f.keys.swap_remove(p);
                if p != last {
                    let moved = f.keys[p];
                    f.pos.insert(moved, p);
                    let (head, tail) = f.data.split_at_mut(last * f.dim);
                    head[p * f.dim..(p + 1) * f.dim].copy_from_slice(&tail[..f.dim]);
                }
                f.data.truncate(last * f.dim);
                f.pieces -= piece;
                Ok(true)
            }
            VectorIndex::Ann(a) => {
                if !a.index.contains(k as u64) {
                    return Ok(false);
                }
                a.index.remove(k as u64).map_err(ann_err)?;
                a.pieces = a.pieces.saturating_sub(piece);
                Ok(true)
            }
        }
    }

    /// Up to `k` nearest rows with their cosine similarity, best first; a
    /// row with pieces reports its best one and ranks by it less a
    /// discount for its vectors among the `2k` nearest
    /// (`memloop_longterm::pieces`). Long rows filling those `2k` can
    /// leave fewer than `k` rows.
    pub fn search(
        &self,
        q: &[f32],
        k: usize,
        allow: memloop_longterm::keyword::Allow<'_>,
    ) -> Result<Vec<VectorHit>> {
        let allowed = |key: i64| allow.is_none_or(|a| a(row_of(key)));
        match self {
            VectorIndex::Flat(f) => {
                if q.len() != f.dim {
                    return Err(ann_err("query has the wrong number of dimensions"));
                }
                let mut buf = vec![0.0f32; f.dim];
                let hits = f
                    .keys
                    .iter()
                    .enumerate()
                    .filter(|(_, key)| allowed(**key))
                    .map(|(i, &key)| {
                        f.data[i * f.dim..(i + 1) * f.dim].convert_to_f32_slice(&mut buf);
                        (key, dot(q, &buf))
                    });
                // The nearest keys, as a graph walk would find them; each
                // row's pieces among them discount its best.
                let wanted = if f.pieces > 0 { k.saturating_mul(2) } else { k };
                let nearest = top_k(hits.collect(), wanted);
                Ok(discounted(
                    by_row(nearest.into_iter().map(|(key, s)| (row_of(key), s))),
                    k,
                ))
            }
            VectorIndex::Ann(a) => {
                // Pieces of one row may fill several of the first places:
                // look further when there are any, and keep each row's best.
                let wanted = if a.pieces > 0 { k.saturating_mul(2) } else { k };
                let m = a
                    .searching
                    .run(|| match allow {
                        None => a.index.search(q, wanted),
                        Some(_) => a
                            .index
                            .filtered_search(q, wanted, |key| allowed(key as i64)),
                    })
                    .map_err(ann_err)?;
                let nearest = m
                    .keys
                    .iter()
                    .zip(&m.distances)
                    .map(|(&key, &d)| (row_of(key as i64), 1.0 - d));
                Ok(discounted(by_row(nearest), k))
            }
        }
    }

    /// Builds an HNSW index over the given rows (each with its vectors) on
    /// every core (usearch accepts concurrent adds once capacity is
    /// reserved), reporting progress.
    pub fn build_ann(
        dim: usize,
        items: &[(i64, Vec<f32>)],
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<VectorIndex> {
        for (_, v) in items {
            check_width(v.len(), dim)?;
        }
        let keys: Vec<(i64, &[f32])> = items
            .iter()
            .flat_map(|(row, v)| keyed(*row, v, dim))
            .collect();
        VectorIndex::build_ann_from(dim, &keys, progress)
    }

    /// An HNSW index over vectors already under their keys.
    fn build_ann_from(
        dim: usize,
        keys: &[(i64, &[f32])],
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<VectorIndex> {
        let threads = search_threads();
        let index = Index::new(&ann_options(dim)).map_err(ann_err)?;
        index
            .reserve_capacity_and_threads(keys.len().max(1024), threads)
            .map_err(ann_err)?;
        add_concurrently(&index, keys, threads, progress)?;
        progress(keys.len(), keys.len());
        let pieces = keys.iter().filter(|(k, _)| *k != row_of(*k)).count();
        Ok(VectorIndex::Ann(Ann::new(index, pieces)))
    }

    /// Turns an exact index into an HNSW one (when a partition outgrows the threshold).
    pub fn promote(&mut self) -> Result<()> {
        if let VectorIndex::Flat(f) = self {
            let data = f.data.to_f32_vec();
            let keys: Vec<(i64, &[f32])> = f
                .keys
                .iter()
                .copied()
                .zip(data.chunks_exact(f.dim.max(1)))
                .collect();
            let ann = VectorIndex::build_ann_from(f.dim, &keys, &|_, _| {})?;
            *self = ann;
        }
        Ok(())
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        if let VectorIndex::Ann(a) = self {
            a.index.save(&path.to_string_lossy()).map_err(ann_err)?;
        }
        Ok(())
    }

    pub fn load_ann(dim: usize, path: &Path) -> Result<VectorIndex> {
        let index = Index::new(&ann_options(dim)).map_err(ann_err)?;
        index.load(&path.to_string_lossy()).map_err(ann_err)?;
        if index.dimensions() != dim {
            return Err(ann_err("saved index has other dimensions"));
        }
        // A loaded graph's thread contexts are usearch's default, not ours.
        index
            .reserve_capacity_and_threads(index.size().max(1024), search_threads())
            .map_err(ann_err)?;
        Ok(VectorIndex::Ann(Ann::new(index, 0)))
    }
}

/// Adds keyed vectors to an HNSW graph from `threads` threads (usearch accepts
/// concurrent adds once capacity and threads are reserved), reporting
/// progress every thousand.
fn add_concurrently(
    index: &Index,
    keys: &[(i64, &[f32])],
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<()> {
    let done = std::sync::atomic::AtomicUsize::new(0);
    on_threads(keys, threads, |part| {
        for (key, v) in part {
            index.add(*key as u64, v).map_err(ann_err)?;
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if n.is_multiple_of(1000) {
                progress(n, keys.len());
            }
        }
        Ok(())
    })?;
    repair_stranded(index, keys, threads)
}

/// Runs `work` on `threads` parts of `keys` at once, giving each part's answer.
fn on_threads<'a, T: Send>(
    keys: &[(i64, &'a [f32])],
    threads: usize,
    work: impl Fn(&[(i64, &'a [f32])]) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let chunk = keys.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = keys
            .chunks(chunk)
            .map(|part| scope.spawn(|| work(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(ann_err("an index thread panicked")))
            })
            .collect()
    })
}

/// Adds again, one at a time, the keys a concurrent add left stored but
/// unreachable. usearch's concurrent `add` can strand a node: one that
/// another thread's add reached through its upper-level links before its
/// own bottom-level links existed ends up with no link in (upstream issue
/// 735). Measured here, 3 to 6 of 1,200 nodes per concurrent build, never in
/// a one-thread build: memories a dense search could not find. So each key
/// added searches for itself, on every core (about 40% of the adds' time
/// at 384 dimensions, 20k nodes); one its search misses is removed and
/// added alone, and checked again.
fn repair_stranded(index: &Index, keys: &[(i64, &[f32])], threads: usize) -> Result<()> {
    const ROUNDS: usize = 3;
    let mut suspects: Vec<(i64, &[f32])> = keys.to_vec();
    for _ in 0..ROUNDS {
        suspects = on_threads(&suspects, threads, |part| {
            let mut lost = Vec::new();
            for &(key, v) in part {
                if !finds_itself(index, key, v)? {
                    lost.push((key, v));
                }
            }
            Ok(lost)
        })?
        .concat();
        if suspects.is_empty() {
            return Ok(());
        }
        for &(key, v) in &suspects {
            index.remove(key as u64).map_err(ann_err)?;
            index.add(key as u64, v).map_err(ann_err)?;
        }
    }
    Ok(())
}

/// Whether a search for a key's own vector finds it. When it does not but
/// every place it fills ties the first (copies of one vector, more than the
/// search holds), the key may be one of the copies left out: not stranded.
fn finds_itself(index: &Index, key: i64, v: &[f32]) -> Result<bool> {
    const LOOK: usize = 10;
    let m = index.search(v, LOOK).map_err(ann_err)?;
    let ties = |d: &[f32]| d.len() == LOOK && d[LOOK - 1] - d[0] <= 1e-4;
    Ok(m.keys.contains(&(key as u64)) || ties(&m.distances))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let n = dot(&v, &v).sqrt();
        v.iter_mut().for_each(|a| *a /= n);
        v
    }

    /// A graph built on several threads holds no node its own vector cannot
    /// find (without the repair, 3 or 4 of these 1,200 were stranded in
    /// every build), and exact copies of one vector do not count as lost.
    #[test]
    fn a_concurrent_build_strands_no_node() {
        let dim = 32;
        let mut items: Vec<(i64, Vec<f32>)> = (0..1200).map(|i| (i, unit(i as u64, dim))).collect();
        items.extend((1200..1220).map(|i| (i, unit(7, dim))));
        let ann = VectorIndex::build_ann(dim, &items, &|_, _| {}).unwrap();
        let VectorIndex::Ann(a) = &ann else {
            panic!("not a graph")
        };
        let lost: Vec<i64> = items
            .iter()
            .filter(|(row, v)| !finds_itself(&a.index, *row, v).unwrap())
            .map(|(row, _)| *row)
            .collect();
        assert!(lost.is_empty(), "stranded: {lost:?}");
        let hits = ann.search(&unit(600, dim), 1, None).unwrap();
        assert_eq!(hits[0].row, 600);
    }

    /// More searches of one graph at once than it has thread contexts (a
    /// server's concurrent queries of one user): each waits for a context
    /// instead of failing, whether the graph was built or loaded from a file.
    #[test]
    fn concurrent_searches_beyond_the_cores_all_answer() {
        let dim = 32;
        let items: Vec<(i64, Vec<f32>)> = (1..=2000).map(|r| (r, unit(r as u64, dim))).collect();
        let built = VectorIndex::build_ann(dim, &items, &|_, _| {}).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.usearch");
        built.save(&path).unwrap();
        let loaded = VectorIndex::load_ann(dim, &path).unwrap();
        for index in [&built, &loaded] {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..16u64)
                    .map(|t| {
                        scope.spawn(move || {
                            (0..200u64)
                                .map(|i| index.search(&unit(t * 1000 + i, dim), 10, None))
                                .filter(|r| r.as_ref().map_or(true, |hits| hits.len() != 10))
                                .count()
                        })
                    })
                    .collect();
                let failed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
                assert_eq!(failed, 0, "searches that failed or came back short");
            });
        }
    }

    #[test]
    fn flat_insert_remove_search() {
        let mut idx = VectorIndex::Flat(Flat::new(16));
        for r in 0..50 {
            idx.insert(r, &unit(r as u64, 16)).unwrap();
        }
        idx.remove(10).unwrap();
        idx.remove(49).unwrap();
        assert_eq!(idx.len(), 48);
        let hits = idx.search(&unit(20, 16), 3, None).unwrap();
        assert_eq!(hits[0].row, 20);
        // Kept in half precision: a relative error of 2^-11 per component.
        assert!((hits[0].similarity - 1.0).abs() < 1e-3);
        assert!(idx
            .search(&unit(10, 16), 48, None)
            .unwrap()
            .iter()
            .all(|h| h.row != 10));
    }

    /// A load hands the exact index the stored halves as they are; it must
    /// hold and find what inserting their f32 values gives, pieces and all,
    /// and refuse a wrong width as `insert` does.
    #[test]
    fn stored_halves_index_as_their_f32_values() {
        let dim = 16;
        let (mut direct, mut converted) = (
            VectorIndex::Flat(Flat::new(dim)),
            VectorIndex::Flat(Flat::new(dim)),
        );
        for r in 0..20 {
            // Rows 0-4 have a second piece.
            let mut v = unit(r as u64, dim);
            if r < 5 {
                v.extend(unit(100 + r as u64, dim));
            }
            let blob = crate::rows::vector_to_blob(&v);
            direct.insert_blob(r, &blob).unwrap();
            converted
                .insert(r, &crate::rows::blob_to_vector(&blob))
                .unwrap();
        }
        // Replacing a row keeps one copy of it.
        let blob = crate::rows::vector_to_blob(&unit(7, dim));
        direct.insert_blob(7, &blob).unwrap();
        assert_eq!(direct.len(), 20);
        for q in [3u64, 7, 103, 500] {
            let query = unit(q, dim);
            assert_eq!(
                direct.search(&query, 20, None).unwrap(),
                converted.search(&query, 20, None).unwrap()
            );
        }
        let wrong = crate::rows::vector_to_blob(&vec![0.5; dim + 1]);
        assert!(direct.insert_blob(50, &wrong).is_err());
        // An odd byte out is not a vector either.
        assert!(direct.insert_blob(51, &blob[..blob.len() - 1]).is_err());
        assert_eq!(direct.len(), 20);
    }

    #[test]
    fn ann_agrees_with_flat_and_saves() {
        let dim = 32;
        let items: Vec<(i64, Vec<f32>)> = (0..2000).map(|r| (r, unit(r as u64, dim))).collect();
        let mut flat = VectorIndex::Flat(Flat::new(dim));
        for (r, v) in &items {
            flat.insert(*r, v).unwrap();
        }
        let ann = VectorIndex::build_ann(dim, &items, &|_, _| {}).unwrap();
        let mut found = 0;
        for q in 0..50 {
            let query = unit(10_000 + q, dim);
            let exact: Vec<i64> = flat
                .search(&query, 10, None)
                .unwrap()
                .iter()
                .map(|h| h.row)
                .collect();
            let approx: Vec<i64> = ann
                .search(&query, 10, None)
                .unwrap()
                .iter()
                .map(|h| h.row)
                .collect();
            found += approx.iter().filter(|r| exact.contains(r)).count();
        }
        assert!(found as f32 / 500.0 > 0.9, "recall {found}/500");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.usearch");
        ann.save(&path).unwrap();
        let back = VectorIndex::load_ann(dim, &path).unwrap();
        assert_eq!(back.len(), 2000);
        // The saved graph is the same graph: it answers every query as the
        // one in memory did. (Not "item 7 finds itself first": the graph
        // is approximate and built by concurrent threads, and under load it
        // sometimes missed, failing CI for no fault of saving.)
        let ids = |index: &VectorIndex, q: &[f32]| -> Vec<i64> {
            index
                .search(q, 10, None)
                .unwrap()
                .iter()
                .map(|h| h.row)
                .collect()
        };
        for (_, v) in items.iter().take(50) {
            assert_eq!(ids(&back, v), ids(&ann, v));
        }
    }
}
