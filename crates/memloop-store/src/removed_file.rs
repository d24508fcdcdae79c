//! The rows taken out of a partition's saved HNSW graph since it was last
//! saved whole (`index/<hash>.removed`).
//!
//! Rewriting a graph file to record removals only rewrote every vector it
//! holds (a removed slot keeps its place in the file either way): after gc
//! cut 100,000 of 200,000 memories, 183 MB for what 0.8 MB of row numbers
//! says. So while the graph has only lost rows since its last whole save,
//! a save writes this list instead, and a load takes the listed rows out
//! again. The list belongs to one file, named by its identity (inode,
//! length, modification time): if another process has saved the graph
//! whole meanwhile, a list no longer matches and the saved index is not
//! used (the rows rebuild it). The sidecar says how many of the list's
//! rows its log position includes, so a list written just before a crash,
//! longer than its sidecar knows, is read only as far as the sidecar says.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use crate::fields::Fields;

const MAGIC: &[u8; 8] = b"MLRMROW\0";
const VERSION: u64 = 1;

/// Which saved graph file a list belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    inode: u64,
    len: u64,
    modified_ns: u64,
}

impl FileId {
    /// The identity of the file at `path`, if there is one.
    pub fn of(path: &Path) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        let ns = m
            .mtime()
            .wrapping_mul(1_000_000_000)
            .wrapping_add(m.mtime_nsec());
        Some(FileId {
            inode: m.ino(),
            len: m.len(),
            modified_ns: ns as u64,
        })
    }
}

/// Writes the list for the graph file `base` through a temporary file and
/// a rename, so a reader never sees half a list.
pub(crate) fn save(path: &Path, base: FileId, rows: &[i64]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("removed.{}.tmp", std::process::id()));
    let written = write(&tmp, base, rows).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write(tmp: &Path, base: FileId, rows: &[i64]) -> std::io::Result<()> {
    let mut out = Fields::new(BufWriter::with_capacity(1 << 16, File::create(tmp)?));
    out.inner.write_all(MAGIC)?;
    out.put(VERSION)?;
    out.put(base.inode)?;
    out.put(base.len)?;
    out.put(base.modified_ns)?;
    out.put(rows.len() as u64)?;
    for &row in rows {
        out.put(row as u64)?;
    }
    let sum = out.sum;
    out.inner.write_all(&sum.to_le_bytes())?;
    out.inner.flush()
}

/// The first `count` rows of the list at `path`, if it is whole and
/// belongs to the graph file `base`.
pub(crate) fn load(path: &Path, base: FileId, count: usize) -> Option<Vec<i64>> {
    let file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut r = Fields::new(BufReader::with_capacity(1 << 16, file));
    let mut magic = [0u8; 8];
    r.inner.read_exact(&mut magic).ok()?;
    if &magic != MAGIC || r.get()? != VERSION {
        return None;
    }
    let id = FileId {
        inode: r.get()?,
        len: r.get()?,
        modified_ns: r.get()?,
    };
    let n = r.get()?;
    if id != base || n < count as u64 || n > size / 8 {
        return None;
    }
    let mut rows = Vec::with_capacity(n as usize);
    for _ in 0..n {
        rows.push(r.get()? as i64);
    }
    let sum = r.sum;
    let mut stored = [0u8; 8];
    r.inner.read_exact(&mut stored).ok()?;
    if u64::from_le_bytes(stored) != sum {
        return None;
    }
    rows.truncate(count);
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_back_only_for_its_file_and_only_whole() {
        let dir = tempfile::tempdir().unwrap();
        let graph = dir.path().join("g.usearch");
        std::fs::write(&graph, b"graph").unwrap();
        let base = FileId::of(&graph).unwrap();
        let path = dir.path().join("g.removed");
        save(&path, base, &[3, 9, 27]).unwrap();
        assert_eq!(load(&path, base, 3), Some(vec![3, 9, 27]));
        // A sidecar written before the last rows were listed reads fewer.
        assert_eq!(load(&path, base, 2), Some(vec![3, 9]));
        // More than the list holds: not this list.
        assert_eq!(load(&path, base, 4), None);
        // Another graph file (saved whole by another process): not its list.
        std::fs::write(&graph, b"another graph").unwrap();
        assert_eq!(load(&path, FileId::of(&graph).unwrap(), 3), None);
        // A damaged list.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 9;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(load(&path, base, 3), None);
    }
}
