//! A reader for GGUF files (version 2 and 3), enough to load an encoder:
//! the metadata's numbers, strings and arrays, and F32 / F16 tensors as
//! f32. Every length and offset is checked against the file, so a cut or
//! corrupt file is an error, never a panic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use memloop_core::{Error, Result};

/// A metadata value.
#[derive(Debug, Clone)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    Array(Vec<Value>),
}

/// A tensor's place in the file.
struct TensorInfo {
    /// Dimensions innermost first, as GGUF lists them.
    dims: Vec<usize>,
    kind: u32,
    offset: usize,
}

pub struct Gguf {
    path: PathBuf,
    bytes: Vec<u8>,
    pub metadata: HashMap<String, Value>,
    tensors: HashMap<String, TensorInfo>,
    data_start: usize,
}

const F32: u32 = 0;
const F16: u32 = 1;

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("the file ends inside its header (at byte {})", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn len(&mut self) -> std::result::Result<usize, String> {
        let n = self.u64()?;
        // No count can exceed the file's bytes: a larger one is corrupt.
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len())
            .ok_or_else(|| format!("a length of {n} does not fit the file"))
    }

    fn text(&mut self) -> std::result::Result<String, String> {
        let n = self.len()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
    }

    fn value(&mut self, kind: u32) -> std::result::Result<Value, String> {
        let le = |b: &[u8]| {
            let mut a = [0u8; 8];
            a[..b.len()].copy_from_slice(b);
            a
        };
        Ok(match kind {
            0 => Value::Int(i64::from(self.take(1)?[0])),
            1 => Value::Int(i64::from(self.take(1)?[0] as i8)),
            2 => {
                let b = self.take(2)?;
                Value::Int(i64::from(u16::from_le_bytes([b[0], b[1]])))
            }
            3 => {
                let b = self.take(2)?;
                Value::Int(i64::from(i16::from_le_bytes([b[0], b[1]])))
            }
            4 => Value::Int(i64::from(self.u32()?)),
            5 => Value::Int(i64::from(self.u32()? as i32)),
            6 => Value::Float(f64::from(f32::from_bits(self.u32()?))),
            7 => Value::Bool(self.take(1)?[0] != 0),
            8 => Value::Text(self.text()?),
            9 => {
                let item = self.u32()?;
                let n = self.len()?;
                let mut items = Vec::with_capacity(n.min(1 << 20));
                for _ in 0..n {
                    items.push(self.value(item)?);
                }
                Value::Array(items)
            }
            10 => Value::Int(i64::from_le_bytes(le(self.take(8)?))),
            11 => Value::Int(i64::from_le_bytes(le(self.take(8)?))),
            12 => Value::Float(f64::from_le_bytes(le(self.take(8)?))),
            other => return Err(format!("unknown metadata type {other}")),
        })
    }
}

impl Gguf {
    pub fn open(path: &Path) -> Result<Gguf> {
        let bytes = std::fs::read(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        Self::parse(path, bytes).map_err(|reason| Error::ModelInvalid {
            path: path.to_path_buf(),
            reason,
        })
    }

    fn parse(path: &Path, bytes: Vec<u8>) -> std::result::Result<Gguf, String> {
        let mut c = Cursor {
            bytes: &bytes,
            at: 0,
        };
        if c.take(4)? != b"GGUF" {
            return Err("not a GGUF file".into());
        }
        let version = c.u32()?;
        if !(2..=3).contains(&version) {
            return Err(format!("GGUF version {version} (this reads 2 and 3)"));
        }
        let tensor_count = c.len()?;
        let kv_count = c.len()?;
        let mut metadata = HashMap::new();
        for _ in 0..kv_count {
            let key = c.text()?;
            let kind = c.u32()?;
            metadata.insert(key, c.value(kind)?);
        }
        let mut tensors = HashMap::new();
        for _ in 0..tensor_count {
            let name = c.text()?;
            let n_dims = c.u32()? as usize;
            if n_dims > 4 {
                return Err(format!("tensor {name} has {n_dims} dimensions"));
            }
            let dims = (0..n_dims)
                .map(|_| c.len())
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let kind = c.u32()?;
            let offset = c.len()?;
            tensors.insert(name, TensorInfo { dims, kind, offset });
        }
        let align = match metadata.get("general.alignment") {
            Some(Value::Int(a)) if *a > 0 => *a as usize,
            _ => 32,
        };
        let data_start = c.at.div_ceil(align) * align;
        Ok(Gguf {
            path: path.to_path_buf(),
            bytes,
            metadata,
            tensors,
            data_start,
        })
    }

    /// The file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn invalid(&self, reason: String) -> Error {
        Error::ModelInvalid {
            path: self.path.clone(),
            reason,
        }
    }

    /// A metadata number.
    pub fn number(&self, key: &str) -> Result<f64> {
        match self.metadata.get(key) {
            Some(Value::Int(i)) => Ok(*i as f64),
            Some(Value::Float(f)) => Ok(*f),
            _ => Err(self.invalid(format!("metadata {key} is missing or not a number"))),
        }
    }

    /// A metadata string.
    pub fn text(&self, key: &str) -> Result<&str> {
        match self.metadata.get(key) {
            Some(Value::Text(t)) => Ok(t),
            _ => Err(self.invalid(format!("metadata {key} is missing or not a string"))),
        }
    }

    /// A metadata array.
    pub fn array(&self, key: &str) -> Result<&[Value]> {
        match self.metadata.get(key) {
            Some(Value::Array(a)) => Ok(a),
            _ => Err(self.invalid(format!("metadata {key} is missing or not an array"))),
        }
    }

    /// A tensor as f32, row-major, checked to have `shape` (outermost
    /// first, as PyTorch writes it: GGUF's dimensions reversed).
    pub fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| self.invalid(format!("tensor {name} is missing")))?;
        let reversed: Vec<usize> = t.dims.iter().rev().copied().collect();
        if reversed != shape {
            return Err(self.invalid(format!(
                "tensor {name} has shape {reversed:?}, expected {shape:?}"
            )));
        }
        let n: usize = shape.iter().product();
        let width = match t.kind {
            F32 => 4,
            F16 => 2,
            other => {
                return Err(self.invalid(format!(
                    "tensor {name} has type {other} (this reads F32 and F16)"
                )))
            }
        };
        let start = self.data_start.checked_add(t.offset);
        let bytes = start
            .and_then(|s| Some((s, s.checked_add(n.checked_mul(width)?)?)))
            .and_then(|(s, e)| self.bytes.get(s..e))
            .ok_or_else(|| self.invalid(format!("tensor {name} runs past the file's end")))?;
        Ok(match t.kind {
            F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            _ => bytes
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
        })
    }
}

/// IEEE half to single precision, subnormals and infinities included.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // Subnormal: normalise the fraction.
            let shift = f.leading_zeros() - 21;
            let f = (f << shift) & 0x3ff;
            sign | ((113 - shift) << 23) | (f << 13)
        }
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 112) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn halves_convert_exactly() {
        for (h, f) in [
            (0x0000u16, 0.0f32),
            (0x3c00, 1.0),
            (0xc000, -2.0),
            (0x3555, 0.333_251_95),
            (0x7bff, 65504.0),
            (0x0001, 1.0 / 16_777_216.0),
            (0x03ff, 1023.0 / 16_777_216.0),
            (0x0400, 1.0 / 16_384.0),
        ] {
            assert_eq!(f16_to_f32(h), f, "{h:#06x}");
        }
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    /// A file written here, by the format's rules: metadata of each kind
    /// read back, tensors of both types, and every cut of it refused.
    #[test]
    fn reads_metadata_and_tensors_and_refuses_a_cut_file() {
        let mut f = Vec::new();
        let text = |f: &mut Vec<u8>, s: &str| {
            f.extend((s.len() as u64).to_le_bytes());
            f.extend(s.as_bytes());
        };
        f.extend(b"GGUF");
        f.extend(3u32.to_le_bytes());
        f.extend(2u64.to_le_bytes()); // tensors
        f.extend(3u64.to_le_bytes()); // metadata
        text(&mut f, "a.count");
        f.extend(4u32.to_le_bytes());
        f.extend(12u32.to_le_bytes());
        text(&mut f, "a.name");
        f.extend(8u32.to_le_bytes());
        text(&mut f, "nomic");
        text(&mut f, "a.list");
        f.extend(9u32.to_le_bytes());
        f.extend(5u32.to_le_bytes());
        f.extend(2u64.to_le_bytes());
        f.extend((-1i32).to_le_bytes());
        f.extend(3i32.to_le_bytes());
        // A 2 × 3 F32 tensor at 0, and a 2-value F16 one after it.
        text(&mut f, "w");
        f.extend(2u32.to_le_bytes());
        f.extend(3u64.to_le_bytes());
        f.extend(2u64.to_le_bytes());
        f.extend(F32.to_le_bytes());
        f.extend(0u64.to_le_bytes());
        text(&mut f, "h");
        f.extend(1u32.to_le_bytes());
        f.extend(2u64.to_le_bytes());
        f.extend(F16.to_le_bytes());
        f.extend(32u64.to_le_bytes());
        while f.len() % 32 != 0 {
            f.push(0);
        }
        for v in [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0] {
            f.extend(v.to_le_bytes());
        }
        f.extend([0u8; 8]);
        f.extend(0x3c00u16.to_le_bytes());
        f.extend(0xc000u16.to_le_bytes());

        let path = Path::new("test.gguf");
        let g = Gguf::parse(path, f.clone()).unwrap();
        assert_eq!(g.number("a.count").unwrap(), 12.0);
        assert_eq!(g.text("a.name").unwrap(), "nomic");
        assert!(matches!(
            g.array("a.list").unwrap(),
            [Value::Int(-1), Value::Int(3)]
        ));
        assert_eq!(
            g.tensor("w", &[2, 3]).unwrap(),
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        assert_eq!(g.tensor("h", &[2]).unwrap(), [1.0, -2.0]);
        assert!(g.tensor("w", &[3, 2]).is_err(), "wrong shape");
        assert!(g.tensor("missing", &[1]).is_err());
        assert!(g.number("a.name").is_err());
        for cut in [3, 10, 30, 100, f.len() - 1] {
            let short = Gguf::parse(path, f[..cut].to_vec());
            let read_all = short.and_then(|g| {
                g.tensor("w", &[2, 3]).map_err(|e| e.to_string())?;
                g.tensor("h", &[2]).map_err(|e| e.to_string())
            });
            assert!(read_all.is_err(), "a file cut at {cut} bytes was read");
        }
    }
}
