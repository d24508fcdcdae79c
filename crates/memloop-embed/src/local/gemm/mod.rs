//! Matrix products, and the one place with `unsafe` in the embedder. Four
//! paths, chosen once per loaded model ([`GemmPath`]):
//! - `portable`: matrixmultiply's strided GEMM (raw pointers behind a bounds check);
//! - `avx512`: weights packed at load into 48-column panels for an AVX-512 FMA kernel;
//! - `avx2`: the same in 16-column panels for an AVX2 FMA kernel (CPUs without AVX-512);
//! - `avx512bf16`: the same panels in bfloat16 pairs for AVX512-BF16 dot products;
//! - `avx512vnni`: the same panels in int8 quads (a scale per column) for
//!   AVX512-VNNI dot products, activations rounded to int8 per row;
//! - `amx`: weights re-laid at load into bfloat16 tiles for the AMX tile unit.
//!
//! Which of them a model runs on is timed at load ([`calibrate`]).
//!
//! Attention's small per-sentence products always take the portable path;
//! the element-wise loops run through [`vectorised`].
#![allow(unsafe_code)]

mod amx;
mod avx2;
mod avx512;
mod bf16;
mod calibrate;
mod int8;
mod panels;
mod vector;

pub use calibrate::{calibrate, Calibration, Timing};
pub use vector::{gelu_in_place, vectorised};

use rayon::prelude::*;

/// Which kernel runs the dense layers' products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmPath {
    /// AMX tiles (`tdpbf16ps`): bfloat16 inputs, f32 accumulation.
    Amx,
    /// AVX512-BF16 dot products (`vdpbf16ps`): bfloat16 inputs, f32 accumulation.
    Bf16,
    /// AVX512-VNNI dot products (`vpdpbusd`): int8 inputs, i32 accumulation.
    Int8,
    /// AVX-512 FMAs on f32 (bfloat16 weights for products of few rows).
    Avx512,
    /// AVX2 FMAs on f32 (bfloat16 weights for products of few rows).
    Avx2,
    /// matrixmultiply, on any CPU.
    Portable,
}

/// The environment variable that picks a path (`amx`, `avx512bf16`, `avx512`, `avx2`, `portable`)
/// instead of the one timed fastest at load: for A/B runs.
pub const GEMM_ENV: &str = "MEMLOOP_GEMM";

impl GemmPath {
    pub fn name(self) -> &'static str {
        match self {
            GemmPath::Amx => "amx",
            GemmPath::Bf16 => "avx512bf16",
            GemmPath::Int8 => "avx512vnni",
            GemmPath::Avx512 => "avx512",
            GemmPath::Avx2 => "avx2",
            GemmPath::Portable => "portable",
        }
    }

    /// True when this CPU (and, for AMX, the kernel) runs the path.
    pub fn available(self) -> bool {
        match self {
            GemmPath::Amx => amx::available(),
            GemmPath::Bf16 => bf16::available(),
            GemmPath::Int8 => int8::available(),
            GemmPath::Avx512 => avx512::available(),
            GemmPath::Avx2 => avx2::available(),
            GemmPath::Portable => true,
        }
    }

    /// Every path this machine runs, in the fixed order (usually fastest first; see [`calibrate`]).
    pub fn all_available() -> Vec<GemmPath> {
        [
            GemmPath::Amx,
            GemmPath::Bf16,
            GemmPath::Int8,
            GemmPath::Avx512,
            GemmPath::Avx2,
            GemmPath::Portable,
        ]
        .into_iter()
        .filter(|p| p.available())
        .collect()
    }

    /// The path named by `MEMLOOP_GEMM`, None when unset (see [`calibrate`]).
    pub fn from_env() -> std::result::Result<Option<GemmPath>, String> {
        match std::env::var_os(GEMM_ENV) {
            Some(v) => GemmPath::parse(&v.to_string_lossy()),
            None => Ok(None),
        }
    }

    /// The path for attention's product of queries, keys and values, whose
    /// errors the scores multiply and the softmax sharpens. Taken to int8
    /// they moved nomic-embed-text-v1.5's vectors to a cosine of 0.9986 from
    /// the reference (the values alone: 0.9988), against 0.9995 with this
    /// product in bfloat16 and every other in int8; so the int8 path hands
    /// it to the best path that reads wider weights.
    pub fn for_attention_scores(self) -> GemmPath {
        match self {
            GemmPath::Int8 => [GemmPath::Bf16, GemmPath::Avx512, GemmPath::Avx2]
                .into_iter()
                .find(|p| p.available())
                .unwrap_or(GemmPath::Portable),
            other => other,
        }
    }

    /// The path a fixed order picks for a model, where `int8` says
    /// whether the int8 path keeps that model's vectors within a cosine of
    /// 0.999 of the f32 ones (nomic-embed-text-v1.5: 0.9995;
    /// all-MiniLM-L6-v2: 0.9968, so it keeps bfloat16). AMX, where the CPU
    /// has it, stays first: its bfloat16 tiles outrun int8 dot products on
    /// batches. Loading starts from this pick and keeps it unless timing
    /// finds another clearly faster on this core ([`calibrate`]).
    pub fn best(int8: bool) -> GemmPath {
        let paths = GemmPath::all_available();
        if int8 && paths.contains(&GemmPath::Int8) && !paths.contains(&GemmPath::Amx) {
            return GemmPath::Int8;
        }
        paths
            .into_iter()
            .find(|p| *p != GemmPath::Int8)
            .unwrap_or(GemmPath::Portable)
    }

    /// A value of `MEMLOOP_GEMM`: None when blank (the path timed fastest); an
    /// error saying which paths this machine runs for an unknown name or a
    /// path it cannot run.
    pub fn parse(value: &str) -> std::result::Result<Option<GemmPath>, String> {
        let names = || {
            GemmPath::all_available()
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let path = match value.trim() {
            "" => return Ok(None),
            "amx" => GemmPath::Amx,
            "avx512bf16" => GemmPath::Bf16,
            "avx512vnni" => GemmPath::Int8,
            "avx512" => GemmPath::Avx512,
            "avx2" => GemmPath::Avx2,
            "portable" => GemmPath::Portable,
            other => {
                return Err(format!(
                    "{GEMM_ENV}={other} is not a kernel; use one of: {} (or unset it)",
                    names()
                ))
            }
        };
        if !path.available() {
            return Err(format!(
                "{GEMM_ENV}={} but this machine cannot run it; use one of: {} (or unset it)",
                path.name(),
                names()
            ));
        }
        Ok(Some(path))
    }
}

/// A weight matrix (`k × n`) laid out once at load for one path.
pub enum Weights {
    Portable { w: Vec<f32>, k: usize, n: usize },
    Avx512(panels::Packed),
    Avx2(panels::Packed),
    Bf16(bf16::Pairs),
    Int8(int8::Quads),
    Amx(amx::Tiles),
}

impl Weights {
    /// Lays out `w` (`k × n`, row-major) for `path`; a shape that path's
    /// kernel does not take falls back to the portable layout.
    pub fn new(path: GemmPath, w: Vec<f32>, k: usize, n: usize) -> Weights {
        let laid = match path {
            GemmPath::Amx if path.available() => amx::Tiles::new(&w, k, n).map(Weights::Amx),
            GemmPath::Bf16 if path.available() => bf16::Pairs::new(&w, k, n).map(Weights::Bf16),
            GemmPath::Int8 if path.available() => int8::Quads::new(&w, k, n).map(Weights::Int8),
            GemmPath::Avx512 if path.available() => {
                avx512::KERNEL.pack(&w, k, n).map(Weights::Avx512)
            }
            GemmPath::Avx2 if path.available() => avx2::KERNEL.pack(&w, k, n).map(Weights::Avx2),
            _ => None,
        };
        laid.unwrap_or(Weights::Portable { w, k, n })
    }

    /// The path this layout runs on.
    #[cfg(test)]
    pub fn path(&self) -> GemmPath {
        match self {
            Weights::Portable { .. } => GemmPath::Portable,
            Weights::Avx512(_) => GemmPath::Avx512,
            Weights::Avx2(_) => GemmPath::Avx2,
            Weights::Bf16(_) => GemmPath::Bf16,
            Weights::Int8(_) => GemmPath::Int8,
            Weights::Amx(_) => GemmPath::Amx,
        }
    }

    /// The weight matrix's columns (n).
    fn outputs(&self) -> usize {
        match self {
            Weights::Portable { n, .. } => *n,
            Weights::Avx512(p) | Weights::Avx2(p) => p.n,
            Weights::Bf16(p) => p.n,
            Weights::Int8(q) => q.n,
            Weights::Amx(t) => t.n,
        }
    }

    /// c[m × n] = a[m × k] · W + bias (added to every row), c at stride n:
    /// a dense layer. The AMX path starts its accumulators from the bias
    /// (a tile load whose rows all read the same 64 bytes) instead of
    /// copying it into every row of c first, which was 7% of an import's
    /// time; the others copy, then add the product. False (doing nothing)
    /// when the slices do not fit.
    pub fn product_with_bias(
        &self,
        a: &[f32],
        m: usize,
        bias: &[f32],
        c: &mut [f32],
        threads: usize,
    ) -> bool {
        let n = self.outputs();
        if bias.len() != n || c.len() < m * n {
            return false;
        }
        if let Weights::Amx(t) = self {
            return amx::product(a, m, t, Some(bias), c, threads);
        }
        for row in c[..m * n].chunks_exact_mut(n.max(1)) {
            row.copy_from_slice(bias);
        }
        self.product(a, m, c, threads)
    }

    /// c[m × n] += a[m × k] · W, with a row-major at stride k and c at stride
    /// n. `threads` > 1 shares the columns among threads (worth it for few
    /// rows). False (doing nothing) when the slices do not fit.
    pub fn product(&self, a: &[f32], m: usize, c: &mut [f32], threads: usize) -> bool {
        match self {
            Weights::Portable { w, k, n } => {
                let av = View {
                    data: a,
                    rows: m,
                    cols: *k,
                    row_stride: *k,
                    col_stride: 1,
                };
                let bv = View {
                    data: w,
                    rows: *k,
                    cols: *n,
                    row_stride: *n,
                    col_stride: 1,
                };
                sgemm(1.0, av, bv, 1.0, c, *n)
            }
            Weights::Avx512(p) => avx512::KERNEL.product(a, m, p, c, threads),
            Weights::Avx2(p) => avx2::KERNEL.product(a, m, p, c, threads),
            Weights::Bf16(p) => bf16::product(a, m, p, c, threads),
            Weights::Int8(q) => int8::product(a, m, q, c, threads),
            Weights::Amx(t) => amx::product(a, m, t, None, c, threads),
        }
    }
}

/// Runs `run(units, part, width)` over `units` column groups of `unit`
/// columns of c (`m × n`, stride n), shared among `threads` rayon threads
/// (persistent, so a product of a few rows does not pay for starting threads).
/// Each thread writes a private copy of its columns, copied back after.
fn split_columns(
    m: usize,
    n: usize,
    unit: usize,
    units: usize,
    threads: usize,
    c: &mut [f32],
    run: impl Fn(std::ops::Range<usize>, &mut [f32], usize) + Sync,
) -> bool {
    let threads = threads.clamp(1, units.max(1));
    if threads == 1 {
        run(0..units, c, n);
        return true;
    }
    let per = units.div_ceil(threads);
    let ranges: Vec<std::ops::Range<usize>> = (0..threads)
        .map(|t| t * per..((t + 1) * per).min(units))
        .filter(|r| !r.is_empty())
        .collect();
    let c_ref = &*c;
    let parts: Vec<Vec<f32>> = ranges
        .par_iter()
        .map(|r| {
            let (lo, hi) = (r.start * unit, r.end * unit);
            let width = hi - lo;
            // Filled row by row from c, so never zeroed first.
            let mut part = Vec::with_capacity(m * width);
            for row in 0..m {
                part.extend_from_slice(&c_ref[row * n + lo..row * n + hi]);
            }
            run(r.clone(), &mut part, width);
            part
        })
        .collect();
    for (r, part) in ranges.iter().zip(parts) {
        let (lo, hi) = (r.start * unit, r.end * unit);
        let width = hi - lo;
        if part.len() != m * width {
            return false;
        }
        for row in 0..m {
            c[row * n + lo..row * n + hi].copy_from_slice(&part[row * width..(row + 1) * width]);
        }
    }
    true
}

/// A product's rounded or reordered activations are kept per thread up
/// to this size: allocating (and faulting in) a fresh buffer at each of a
/// batch's 24 products cost a few percent of its time.
const KEEP_BYTES: usize = 4 << 20;

/// Rows of activations, `row_bytes` each, in about 1 MiB (a multiple of 8,
/// at least 8): the block that stays in cache while every panel of the
/// weights streams past it, so the weights are read once per block.
fn rows_in_cache(row_bytes: usize) -> usize {
    ((1 << 20) / row_bytes.max(1)).max(8) / 8 * 8
}

/// `0..m` in blocks of at most `block` rows (see [`rows_in_cache`]).
fn row_blocks(m: usize, block: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let block = block.max(1);
    (0..m).step_by(block).map(move |r0| r0..(r0 + block).min(m))
}

/// The rows of `block` in register tiles of 8, then 4, 2 and 1 rows: (first
/// row, rows), as the bfloat16 and int8 kernels take them.
fn row_tiles(block: std::ops::Range<usize>) -> impl Iterator<Item = (usize, usize)> {
    let end = block.end;
    let tile = move |r: usize| {
        let mr = match end - r {
            8.. => 8,
            4..=7 => 4,
            2..=3 => 2,
            _ => 1,
        };
        (r, mr)
    };
    std::iter::successors(
        (block.start < end).then(|| tile(block.start)),
        move |&(r, mr)| (r + mr < end).then(|| tile(r + mr)),
    )
}

/// f32 to bfloat16, rounding to nearest even.
#[inline(always)]
fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1));
    (rounded >> 16) as u16
}

/// A row-major-or-strided view of a matrix inside a slice.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl View<'_> {
    /// Largest index touched plus one; 0 for an empty matrix.
    fn extent(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
        if rows == 0 || cols == 0 {
            0
        } else {
            (rows - 1) * rs + (cols - 1) * cs + 1
        }
    }
}

/// c = alpha·a·b + beta·c, where c is `a.rows × b.cols` at `c_row_stride` (column stride 1).
/// Returns false (and does nothing) when the shapes or slices do not fit.
pub fn sgemm(
    alpha: f32,
    a: View<'_>,
    b: View<'_>,
    beta: f32,
    c: &mut [f32],
    c_row_stride: usize,
) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let fits = a.cols == b.rows
        && View::extent(m, k, a.row_stride, a.col_stride) <= a.data.len()
        && View::extent(k, n, b.row_stride, b.col_stride) <= b.data.len()
        && View::extent(m, n, c_row_stride, 1) <= c.len()
        && c_row_stride >= n;
    if !fits {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    let to_isize = |x: usize| isize::try_from(x).unwrap_or(isize::MAX);
    // SAFETY: every index the kernel reads or writes is below the extents checked above.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr(),
            to_isize(a.row_stride),
            to_isize(a.col_stride),
            b.data.as_ptr(),
            to_isize(b.row_stride),
            to_isize(b.col_stride),
            beta,
            c.as_mut_ptr(),
            to_isize(c_row_stride),
            1,
        );
    }
    true
}

#[cfg(test)]
mod tests;
