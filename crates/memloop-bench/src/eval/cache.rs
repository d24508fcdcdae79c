//! `--embed-cache DIR`: the vectors an eval computed, kept on disk by
//! model and text, so the next run of a ranking experiment (fusion, BM25,
//! how pieces score) reads them back instead of embedding every turn
//! again: on LongMemEval's haystacks, embedding is nearly all of a run.
//! Valid only for the embedder that wrote it: the file is named by the
//! model id, and a change to the forward pass or its kernels must start
//! from an empty folder.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use memloop::{Embedder, EmbedderInfo};

/// What a vector was made for: the same text embeds differently as a
/// query (task prefixes) and is read in pieces only as a document.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Document = 0,
    Pieces = 1,
    Query = 2,
}

/// A text's key: its kind, length and two independent 64-bit hashes.
type Key = (u8, u64, u64, u64);

fn key(kind: Kind, text: &str) -> Key {
    // FNV-1a from two offsets: the same on every toolchain, unlike std's
    // hasher, whose output may change between releases.
    let hash = |seed: u64| {
        text.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    (
        kind as u8,
        text.len() as u64,
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x6c62_272e_07bb_0142),
    )
}

/// An embedder that answers from the cache and embeds (then remembers)
/// only what it has not seen.
pub(crate) struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    path: PathBuf,
    known: Mutex<Entries>,
    fresh: Mutex<Vec<(Key, Vec<Vec<f32>>)>>,
}

impl CachedEmbedder {
    /// Opens (or starts) the cache of `inner`'s model in `dir`.
    pub fn open(inner: Arc<dyn Embedder>, dir: &Path) -> anyhow::Result<CachedEmbedder> {
        std::fs::create_dir_all(dir)?;
        let info = inner.info();
        let name: String = info
            .model_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = dir.join(format!("{name}-{}.vectors", info.dimensions));
        let known = match std::fs::File::open(&path) {
            Ok(f) => {
                let (known, whole) = read_entries(&mut BufReader::new(f), info.dimensions)?;
                // An entry cut short by a killed run is cut off, so what is
                // appended next starts on an entry's boundary.
                if std::fs::metadata(&path)?.len() > whole {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)?
                        .set_len(whole)?;
                }
                known
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => return Err(e.into()),
        };
        Ok(CachedEmbedder {
            inner,
            path,
            known: Mutex::new(known),
            fresh: Mutex::new(Vec::new()),
        })
    }

    /// Appends what was embedded since the last save to the file.
    pub fn save(&self) -> anyhow::Result<()> {
        let fresh = std::mem::take(&mut *self.fresh.lock().unwrap_or_else(|p| p.into_inner()));
        if fresh.is_empty() {
            return Ok(());
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut w = BufWriter::new(file);
        for ((kind, len, h1, h2), vectors) in &fresh {
            w.write_all(&[*kind])?;
            for n in [*len, *h1, *h2] {
                w.write_all(&n.to_le_bytes())?;
            }
            w.write_all(&(vectors.len() as u32).to_le_bytes())?;
            for v in vectors {
                for x in v {
                    w.write_all(&x.to_le_bytes())?;
                }
            }
        }
        w.flush()?;
        Ok(())
    }

    /// Each text's vectors, from the cache or from `embed` for the missing ones.
    fn lookup(
        &self,
        kind: Kind,
        texts: &[&str],
        embed: impl FnOnce(&[&str]) -> memloop::Result<Vec<Vec<Vec<f32>>>>,
    ) -> memloop::Result<Vec<Vec<Vec<f32>>>> {
        let keys: Vec<Key> = texts.iter().map(|t| key(kind, t)).collect();
        let mut out: Vec<Option<Vec<Vec<f32>>>> = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            keys.iter().map(|k| known.get(k).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let made = embed(&batch)?;
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let mut fresh = self.fresh.lock().unwrap_or_else(|p| p.into_inner());
            for (&i, vectors) in missing.iter().zip(made) {
                known.insert(keys[i], vectors.clone());
                fresh.push((keys[i], vectors.clone()));
                out[i] = Some(vectors);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

impl CachedEmbedder {
    /// One vector per text (a document's first, or a query's), from the
    /// cache or from `embed`.
    fn one_each(
        &self,
        kind: Kind,
        texts: &[&str],
        embed: impl FnOnce(&[&str]) -> memloop::Result<Vec<Vec<f32>>>,
    ) -> memloop::Result<Vec<Vec<f32>>> {
        let got = self.lookup(kind, texts, |t| {
            Ok(embed(t)?.into_iter().map(|v| vec![v]).collect())
        })?;
        Ok(got
            .into_iter()
            .map(|mut v| v.pop().unwrap_or_default())
            .collect())
    }
}

/// A text's key and its vectors.
type Entries = HashMap<Key, Vec<Vec<f32>>>;

/// The whole entries of a cache file, and the length they take.
fn read_entries(r: &mut impl Read, dim: usize) -> anyhow::Result<(Entries, u64)> {
    let mut map = HashMap::new();
    let mut whole = 0u64;
    let u64_at = |r: &mut dyn Read| -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        r.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    };
    loop {
        let entry = (|| -> std::io::Result<(Key, Vec<Vec<f32>>, u64)> {
            let mut kind = [0u8; 1];
            r.read_exact(&mut kind)?;
            let (len, h1, h2) = (u64_at(r)?, u64_at(r)?, u64_at(r)?);
            let mut n = [0u8; 4];
            r.read_exact(&mut n)?;
            // A text has at most 64 vectors (its first and 63 pieces): a
            // larger count is a damaged file, read no further.
            let count = u32::from_le_bytes(n) as usize;
            if count > 64 {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
            let mut bytes = vec![0u8; count * dim * 4];
            r.read_exact(&mut bytes)?;
            let floats: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let vectors = floats.chunks(dim.max(1)).map(<[f32]>::to_vec).collect();
            // Kind (1), length and hashes (24), count (4), the floats.
            Ok(((kind[0], len, h1, h2), vectors, 29 + bytes.len() as u64))
        })();
        match entry {
            Ok((k, v, size)) => {
                map.insert(k, v);
                whole += size;
            }
            // The end, or an entry cut short: what came before is whole.
            Err(_) => break,
        }
    }
    Ok((map, whole))
}

impl Embedder for CachedEmbedder {
    fn info(&self) -> EmbedderInfo {
        self.inner.info()
    }

    fn embed_batch(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<f32>>> {
        self.one_each(Kind::Document, texts, |t| self.inner.embed_batch(t))
    }

    fn embed_pieces(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<Vec<f32>>>> {
        self.lookup(Kind::Pieces, texts, |t| self.inner.embed_pieces(t))
    }

    fn embed_queries(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<f32>>> {
        self.one_each(Kind::Query, texts, |t| self.inner.embed_queries(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the texts it embeds; a text's vector is its length and first byte.
    struct Counting(AtomicUsize);

    impl Embedder for Counting {
        fn info(&self) -> EmbedderInfo {
            EmbedderInfo {
                model_id: "test/model".into(),
                dimensions: 2,
            }
        }
        fn embed_batch(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<f32>>> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
                .collect())
        }
        fn embed_pieces(&self, texts: &[&str]) -> memloop::Result<Vec<Vec<Vec<f32>>>> {
            Ok(texts
                .iter()
                .map(|t| {
                    if t.len() > 3 {
                        vec![vec![1.0, 2.0]; 2]
                    } else {
                        vec![]
                    }
                })
                .collect())
        }
    }

    #[test]
    fn a_second_run_reads_back_what_the_first_embedded() {
        let dir = tempfile::tempdir().unwrap();
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let first = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
        let a = first.embed_batch(&["ab", "xyz", "ab"]).unwrap();
        let pieces = first.embed_pieces(&["long text", "ab"]).unwrap();
        first.embed_queries(&["ab"]).unwrap();
        first.save().unwrap();
        let embedded = inner.0.load(Ordering::SeqCst);
        assert_eq!(
            embedded,
            3 + 1,
            "the repeated text in one batch is embedded with it"
        );

        let second = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
        assert_eq!(
            second.embed_batch(&["xyz", "ab"]).unwrap(),
            vec![a[1].clone(), a[0].clone()]
        );
        assert_eq!(second.embed_pieces(&["long text", "ab"]).unwrap(), pieces);
        second.embed_queries(&["ab"]).unwrap();
        assert_eq!(
            inner.0.load(Ordering::SeqCst),
            embedded,
            "nothing embedded again"
        );
        // A new text is embedded, and a query is not a document.
        second.embed_batch(&["new"]).unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), embedded + 1);
    }

    #[test]
    fn a_file_cut_short_keeps_its_whole_entries() {
        let dir = tempfile::tempdir().unwrap();
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let c = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
        c.embed_batch(&["one", "two"]).unwrap();
        c.save().unwrap();
        let path = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let again = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
        let before = inner.0.load(Ordering::SeqCst);
        let vectors = again.embed_batch(&["one", "two"]).unwrap();
        assert_eq!(
            inner.0.load(Ordering::SeqCst),
            before + 1,
            "only the cut entry is embedded again"
        );
        // Saved after the cut, the file reads back whole: nothing appended
        // lands inside the cut entry.
        again.save().unwrap();
        let third = CachedEmbedder::open(inner.clone(), dir.path()).unwrap();
        let before = inner.0.load(Ordering::SeqCst);
        assert_eq!(third.embed_batch(&["one", "two"]).unwrap(), vectors);
        assert_eq!(inner.0.load(Ordering::SeqCst), before, "both read back");
    }
}
