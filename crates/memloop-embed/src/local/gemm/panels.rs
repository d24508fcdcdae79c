//! Weights packed once at load into column panels, and the driver the
//! panel kernels (AVX-512, AVX2) share: columns split among threads, rows
//! in blocks that stay in cache, each block's rows copied k-major.

use super::{row_blocks, rows_in_cache, split_columns, to_bf16};

/// A weight matrix (`k × n`, row-major, n a multiple of `panel`) packed
/// into column panels: panel p holds, for each of the k rows, its `panel`
/// values contiguously, so a kernel streams it without repacking (the
/// portable path repacks the whole matrix at every product: a quarter of
/// a single text's time).
pub struct Packed {
    pub k: usize,
    pub n: usize,
    pub panel: usize,
    pub data: Vec<f32>,
    /// The same panels in bfloat16 (the upper half of each f32, rounded to
    /// nearest even), for products of few rows: see [`HALF_MAX_ROWS`].
    pub half: Vec<u16>,
}

/// Products of at most this many rows (one short text: a query) read the
/// bfloat16 copy of the weights. With few rows a product is bound by reading
/// the weights from memory, not by arithmetic, so half the bytes is nearly
/// half the time; each value is widened back to f32 before the same FMAs, so
/// only the weights' last 16 mantissa bits are lost (vectors agree with the
/// f32 path to a cosine of 0.9999). Batches keep reading f32, which is
/// faster when arithmetic is the bound.
pub const HALF_MAX_ROWS: usize = 32;

/// False when `MEMLOOP_NO_BF16` is set: every product then reads f32, to
/// compare the two.
pub(super) fn half_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("MEMLOOP_NO_BF16").is_none())
}

impl Packed {
    /// Packs `w` (k × n, row-major); None if n is not a multiple of `panel`.
    pub fn new(w: &[f32], k: usize, n: usize, panel: usize) -> Option<Packed> {
        if panel == 0 || !n.is_multiple_of(panel) || w.len() != k * n {
            return None;
        }
        let mut data = Vec::with_capacity(k * n);
        for p in 0..n / panel {
            for row in 0..k {
                data.extend_from_slice(&w[row * n + p * panel..row * n + (p + 1) * panel]);
            }
        }
        let half = data.iter().map(|&x| to_bf16(x)).collect();
        Some(Packed {
            k,
            n,
            panel,
            data,
            half,
        })
    }
}

/// One path's kernel: every panel in `panels` over `rows` rows of `a`
/// (row-major at stride `b.k`), added into c (stride `ldc`, whose column 0
/// is panel `panels.start`), reading `b.half` when `half`.
///
/// # Safety
/// The CPU must run the kernel's instructions; `a` must hold `rows × b.k`
/// values, `c` `(rows - 1) · ldc + b.panel · panels.len()` with `ldc >=
/// b.panel · panels.len()`, and `panels` must lie within b's.
pub type Block = unsafe fn(&[f32], usize, bool, &Packed, std::ops::Range<usize>, &mut [f32], usize);

/// A panel kernel: its panel width, whether this CPU runs it, and its
/// block (None where it is not compiled: off x86-64).
pub struct Kernel {
    pub panel: usize,
    pub available: fn() -> bool,
    pub block: Option<Block>,
}

impl Kernel {
    /// Packs `w` (k × n) for this kernel; None if n is not a multiple of
    /// its panel.
    pub fn pack(&self, w: &[f32], k: usize, n: usize) -> Option<Packed> {
        Packed::new(w, k, n, self.panel)
    }

    /// c[m × n] += a[m × k] · b, with a row-major at stride k and c at
    /// stride n, the panels shared among `threads`. False (doing nothing)
    /// when shapes do not fit, b was packed for another kernel, or the CPU
    /// lacks the kernel's instructions.
    pub fn product(&self, a: &[f32], m: usize, b: &Packed, c: &mut [f32], threads: usize) -> bool {
        match self.block {
            Some(block) if b.panel == self.panel && (self.available)() => {
                product(a, m, b, c, threads, block)
            }
            _ => false,
        }
    }
}

/// `Kernel::product`, once the kernel is known to run here.
fn product(a: &[f32], m: usize, b: &Packed, c: &mut [f32], threads: usize, block: Block) -> bool {
    if a.len() < m * b.k || c.len() < m * b.n || b.panel == 0 {
        return false;
    }
    let half = m <= HALF_MAX_ROWS && half_enabled();
    split_columns(
        m,
        b.n,
        b.panel,
        b.n / b.panel,
        threads,
        c,
        |panels, part, ldc| {
            for rows in row_blocks(m, rows_in_cache(4 * b.k)) {
                let (r0, rows) = (rows.start, rows.len());
                // SAFETY: `Kernel::product` checked that this CPU has the
                // kernel's instructions; the sizes were checked above and
                // `split_columns` hands each part `m` rows at stride `ldc`
                // of whole panels.
                unsafe {
                    block(
                        &a[r0 * b.k..],
                        rows,
                        half,
                        b,
                        panels.clone(),
                        &mut part[r0 * ldc..],
                        ldc,
                    )
                };
            }
        },
    )
}

/// The first `rows` rows of `a` (stride k) in tiles of the largest of
/// `sizes` (descending, ending in 1) that fits what is left, each tile
/// copied k-major so a kernel's broadcasts read one contiguous stream:
/// (first row, rows, values).
pub fn k_major_tiles(
    a: &[f32],
    rows: usize,
    k: usize,
    sizes: &[usize],
) -> Vec<(usize, usize, Vec<f32>)> {
    let mut tiles = Vec::new();
    let mut r = 0;
    while r < rows {
        let mr = sizes.iter().copied().find(|&s| s <= rows - r).unwrap_or(1);
        let mut t = vec![0.0f32; k * mr];
        for kk in 0..k {
            for i in 0..mr {
                t[kk * mr + i] = a[(r + i) * k + kk];
            }
        }
        tiles.push((r, mr, t));
        r += mr;
    }
    tiles
}

/// The panel after `p` among `panels` (each `len` values of `data`), or
/// `p` itself when it is the last: what a product's first row tile fetches
/// while it multiplies `p` (see [`fetch_ahead`]).
pub(super) fn ahead_of<'a>(
    data: &'a [u32],
    p: usize,
    len: usize,
    panels: &std::ops::Range<usize>,
) -> &'a [u32] {
    let next = if p + 1 < panels.end { p + 1 } else { p };
    data.get(next * len..(next + 1) * len).unwrap_or(&[])
}

/// Asks for the 192 bytes (one row of a 48-column int8 or bfloat16 panel)
/// at `at` to be brought into the L2 cache, without waiting. A product of
/// few rows (a query) is bound by reading its weights from memory: its
/// first row tile would otherwise wait on each line and its second find
/// them cached, leaving memory idle half the time. The address may lie
/// past the panel (a prefetch never faults), so it is never read through.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn fetch_ahead(at: *const u32) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    let at = at as *const i8;
    // SAFETY: a prefetch reads nothing the program sees and cannot fault.
    unsafe {
        _mm_prefetch::<_MM_HINT_T1>(at);
        _mm_prefetch::<_MM_HINT_T1>(at.wrapping_add(64));
        _mm_prefetch::<_MM_HINT_T1>(at.wrapping_add(128));
    }
}
