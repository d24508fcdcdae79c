//! The fields of the index files saved beside the database
//! (`keyword_file`, `removed_file`): little-endian 8-byte words and
//! length-prefixed strings, with a checksum over every byte, so a damaged
//! file is recognised and ignored.

use std::io::{Read, Write};

/// Little-endian 8-byte fields and length-prefixed strings, hashed field
/// by field as they are written or read: a checksum over every byte.
pub(crate) struct Fields<T> {
    pub inner: T,
    pub sum: u64,
}

impl<T> Fields<T> {
    pub fn new(inner: T) -> Fields<T> {
        Fields {
            inner,
            sum: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn mix(&mut self, word: u64) {
        self.sum = (self.sum ^ word)
            .wrapping_mul(0x0000_0100_0000_01B3)
            .rotate_left(29);
    }

    /// Hashes a string's bytes, eight at a time, the last word zero-padded.
    fn mix_bytes(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut a = [0u8; 8];
            a[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(a));
        }
    }
}

impl<W: Write> Fields<W> {
    pub fn put(&mut self, v: u64) -> std::io::Result<()> {
        self.mix(v);
        self.inner.write_all(&v.to_le_bytes())
    }

    pub fn put_str(&mut self, s: &str) -> std::io::Result<()> {
        self.put(s.len() as u64)?;
        self.mix_bytes(s.as_bytes());
        self.inner.write_all(s.as_bytes())
    }
}

impl<R: Read> Fields<R> {
    pub fn get(&mut self) -> Option<u64> {
        let mut a = [0u8; 8];
        self.inner.read_exact(&mut a).ok()?;
        let v = u64::from_le_bytes(a);
        self.mix(v);
        Some(v)
    }

    pub fn get_str(&mut self, limit: u64) -> Option<String> {
        let n = self.get()?;
        if n > limit {
            return None;
        }
        let mut b = vec![0u8; n as usize];
        self.inner.read_exact(&mut b).ok()?;
        self.mix_bytes(&b);
        String::from_utf8(b).ok()
    }
}
