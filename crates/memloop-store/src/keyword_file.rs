//! A partition's keyword index saved beside its HNSW graph
//! (`index/<hash>.keywords`), so that reopening a large store restores it
//! instead of reading and analysing every text again (most of a reopen's
//! time at a million memories).
//!
//! It is a cache of what SQLite holds, like the graph: written with the
//! graph and before the sidecar that names their log position, each file
//! carrying its own position too, so the log replays whatever came after
//! the older of the two. A file that is missing, of another version or
//! context weight, behind the pruned log, or damaged (a checksum covers
//! every byte) is ignored and the texts are analysed as before. It holds
//! stems of the partition's texts, so it is removed with the graph when a
//! purge drops the partition's indexes, and written from live documents
//! only (no term of a removed memory).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use memloop_longterm::expiry::Expiry;
use memloop_longterm::keyword::{KeywordIndex, MAX_SPEAKER_WORDS};

use crate::fields::Fields;

const MAGIC: &[u8; 8] = b"MLKWIDX\0";
/// Bumped whenever the layout, the analyser or the weighing of terms
/// changes: a file of another version is ignored (and rewritten at the next
/// save). 2: a long context weighs at most `CONTEXT_WORDS` in all.
const VERSION: u32 = 2;

/// A restored keyword index, the expiry of its rows, and the log position it reflects.
pub(crate) struct Saved {
    pub keywords: KeywordIndex,
    pub expiry: Expiry,
    pub seq: i64,
}

/// Writes the index to `path` (through a temporary file and a rename, so a
/// reader never sees half a file).
pub(crate) fn save(
    path: &Path,
    seq: i64,
    context_weight: f32,
    keywords: &KeywordIndex,
    expiry: &Expiry,
) -> std::io::Result<()> {
    // Named by the process: two processes saving at once never share one.
    let tmp = path.with_extension(format!("keywords.{}.tmp", std::process::id()));
    let written = write(&tmp, seq, context_weight, keywords, expiry)
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        // It holds stems of the texts: not left behind half written.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write(
    tmp: &Path,
    seq: i64,
    context_weight: f32,
    keywords: &KeywordIndex,
    expiry: &Expiry,
) -> std::io::Result<()> {
    let mut out = Fields::new(BufWriter::with_capacity(1 << 20, File::create(tmp)?));
    let (dictionary, docs) = keywords.export();
    out.inner.write_all(MAGIC)?;
    out.put(u64::from(VERSION))?;
    out.put(seq as u64)?;
    out.put(u64::from(context_weight.to_bits()))?;
    out.put(dictionary.len() as u64)?;
    for term in &dictionary {
        out.put_str(term)?;
    }
    out.put(docs.len() as u64)?;
    for d in &docs {
        out.put(d.row as u64)?;
        out.put(u64::from(d.len.to_bits()))?;
        out.put(expiry.get(d.row).unwrap_or(i64::MIN) as u64)?;
        out.put(d.speaker.len() as u64)?;
        for w in d.speaker {
            out.put_str(w)?;
        }
        out.put(d.terms.len() as u64)?;
        for &(id, tf) in &d.terms {
            out.put(u64::from(id) | u64::from(tf.to_bits()) << 32)?;
        }
    }
    let sum = out.sum;
    out.inner.write_all(&sum.to_le_bytes())?;
    out.inner.flush()
}

/// Reads a saved index, or None when the file is absent, of another
/// version or context weight, or damaged.
pub(crate) fn load(path: &Path, context_weight: f32) -> Option<Saved> {
    let file = File::open(path).ok()?;
    // No count in a damaged file may make us reserve more than the file holds.
    let size = file.metadata().ok()?.len();
    let mut r = Fields::new(BufReader::with_capacity(1 << 20, file));
    let mut magic = [0u8; 8];
    r.inner.read_exact(&mut magic).ok()?;
    if &magic != MAGIC || r.get()? != u64::from(VERSION) {
        return None;
    }
    let seq = r.get()? as i64;
    if r.get()? != u64::from(context_weight.to_bits()) {
        return None;
    }
    let terms = r.get()?;
    let mut dictionary = Vec::with_capacity(terms.min(size / 8) as usize);
    for _ in 0..terms {
        dictionary.push(r.get_str(size)?);
    }
    let count = r.get()?;
    let mut docs = Vec::with_capacity(count.min(size / 40) as usize);
    let mut expiry = Expiry::default();
    for _ in 0..count {
        let row = r.get()? as i64;
        let len = f32::from_bits(r.get()? as u32);
        let expires = r.get()? as i64;
        if expires != i64::MIN {
            expiry.set(row, Some(expires));
        }
        let words = r.get()?;
        if words > MAX_SPEAKER_WORDS as u64 {
            return None;
        }
        let speaker = (0..words)
            .map(|_| r.get_str(size))
            .collect::<Option<Vec<_>>>()?;
        let n = r.get()?;
        let mut terms = Vec::with_capacity(n.min(size / 8) as usize);
        for _ in 0..n {
            let t = r.get()?;
            terms.push((t as u32, f32::from_bits((t >> 32) as u32)));
        }
        docs.push((row, terms, len, speaker));
    }
    let sum = r.sum;
    let mut stored = [0u8; 8];
    r.inner.read_exact(&mut stored).ok()?;
    let mut rest = [0u8; 1];
    if u64::from_le_bytes(stored) != sum || r.inner.read(&mut rest).ok()? != 0 {
        return None;
    }
    Some(Saved {
        keywords: KeywordIndex::import(dictionary, docs)?,
        expiry,
        seq,
    })
}
