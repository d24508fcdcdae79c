//! The AVX512-BF16 path: weights stored once at load in bfloat16, k-pairs
//! interleaved, activations rounded to bfloat16 at each product, and
//! `vdpbf16ps` accumulating in f32.
//!
//! One `vdpbf16ps` does 32 multiply-adds where an f32 FMA does 16, at the
//! same rate on the CPUs measured (docs/benchmarks.md), so a product runs
//! on half the instructions; and the weights are half the bytes, which is
//! what bounds a product of few rows. The rounding is the AMX path's:
//! bfloat16 inputs, f32 sums.

use super::avx512::PANEL;
use super::panels::ahead_of;
use super::{row_blocks, row_tiles, rows_in_cache, split_columns, to_bf16, vectorised, KEEP_BYTES};

/// A weight matrix (`k × n`, k even, n a multiple of PANEL) in bfloat16:
/// for each panel of 48 columns, for each pair of rows (2i, 2i + 1), 48
/// u32s, each holding its column's value at row 2i (low half) and 2i + 1
/// (high half): the operand order `vdpbf16ps` multiplies in.
pub struct Pairs {
    pub k: usize,
    pub n: usize,
    data: Vec<u32>,
}

impl Pairs {
    /// Lays out `w` (k × n, row-major); None unless k is even and n a
    /// multiple of PANEL.
    pub fn new(w: &[f32], k: usize, n: usize) -> Option<Pairs> {
        if k == 0 || !k.is_multiple_of(2) || !n.is_multiple_of(PANEL) || w.len() != k * n {
            return None;
        }
        let mut data = Vec::with_capacity(k / 2 * n);
        for p in 0..n / PANEL {
            for pair in 0..k / 2 {
                let (even, odd) = (&w[2 * pair * n..], &w[(2 * pair + 1) * n..]);
                for col in p * PANEL..(p + 1) * PANEL {
                    data.push(pack(even[col], odd[col]));
                }
            }
        }
        Some(Pairs { k, n, data })
    }
}

/// Two values as one bfloat16 pair, the first in the low half.
#[inline(always)]
fn pack(lo: f32, hi: f32) -> u32 {
    u32::from(to_bf16(lo)) | (u32::from(to_bf16(hi)) << 16)
}

/// True when this CPU runs the path (AVX-512F and AVX512-BF16).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::avx512::available() && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// c[m × n] += a[m × k] · b, with a row-major at stride k and c at stride n,
/// the panels shared among `threads`. False (doing nothing) when shapes do
/// not fit or the CPU lacks the path.
pub fn product(a: &[f32], m: usize, b: &Pairs, c: &mut [f32], threads: usize) -> bool {
    if a.len() < m * b.k || c.len() < m * b.n || !available() {
        return false;
    }
    if m == 0 {
        return true;
    }
    // Rounded once per product, row-major: row r's pair i is u32 i of its row.
    // Every value is written below, so old contents may stay.
    let mut pairs = A_PAIRS.take();
    pairs.resize(m * b.k / 2, 0);
    vectorised(
        #[inline(always)]
        || {
            for (p, two) in pairs.iter_mut().zip(a[..m * b.k].chunks_exact(2)) {
                *p = pack(two[0], two[1]);
            }
        },
    );
    let a2 = &pairs;
    let done = split_columns(
        m,
        b.n,
        PANEL,
        b.n / PANEL,
        threads,
        c,
        |panels, part, ldc| run_panels(a2, m, b, panels, part, ldc),
    );
    if pairs.capacity() * 4 <= KEEP_BYTES {
        A_PAIRS.set(pairs);
    }
    done
}

thread_local! {
    static A_PAIRS: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Panels `panels` of b over all rows, into c (whose column 0 is panel
/// `panels.start`): for each panel, every tile of 8 rows (then 4, 2, 1).
fn run_panels(
    a: &[u32],
    m: usize,
    b: &Pairs,
    panels: std::ops::Range<usize>,
    c: &mut [f32],
    ldc: usize,
) {
    let kp = b.k / 2;
    for block in row_blocks(m, rows_in_cache(4 * kp)) {
        for (i, p) in panels.clone().enumerate() {
            let panel = &b.data[p * kp * PANEL..(p + 1) * kp * PANEL];
            let ahead = ahead_of(&b.data, p, kp * PANEL, &panels);
            for (r, mr) in row_tiles(block.clone()) {
                // The first tile of a panel fetches the next one meanwhile.
                let ahead = if r == block.start { ahead } else { panel };
                let (ar, cr) = (&a[r * kp..], &mut c[r * ldc + i * PANEL..]);
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `product` checked the CPU's features; `ar` holds
                // at least `mr` rows of `kp` pairs (r + mr ≤ m), `panel` kp
                // · 48 values, and `cr` (mr - 1) · ldc + 48 values (`part`
                // is m rows of ldc ≥ 48 · panels.len() columns).
                unsafe {
                    match mr {
                        8 => kernel::tile::<8>(ar, kp, panel, ahead, cr, ldc),
                        4 => kernel::tile::<4>(ar, kp, panel, ahead, cr, ldc),
                        2 => kernel::tile::<2>(ar, kp, panel, ahead, cr, ldc),
                        _ => kernel::tile::<1>(ar, kp, panel, ahead, cr, ldc),
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (ar, cr, panel, ahead);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use std::arch::x86_64::*;

    use super::super::panels::fetch_ahead;
    use super::PANEL;

    /// MR rows × 48 columns, accumulated over the kp pairs in 3·MR
    /// registers; row r's pairs are `a[r·kp..(r + 1)·kp]`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX512-BF16; `a` must hold `MR ·
    /// kp` values, `panel` `kp · 48`, and `c` `(MR - 1) · ldc + 48`: the
    /// kernel reads and writes through raw pointers without bounds checks.
    /// `ahead` (the next panel) is only prefetched, never read.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[inline]
    pub unsafe fn tile<const MR: usize>(
        a: &[u32],
        kp: usize,
        panel: &[u32],
        ahead: &[u32],
        c: &mut [f32],
        ldc: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 3]; MR];
        let (ap, bp, next) = (a.as_ptr(), panel.as_ptr(), ahead.as_ptr());
        for i in 0..kp {
            fetch_ahead(next.wrapping_add(i * PANEL));
            let b = bp.add(i * PANEL);
            // SAFETY (all transmutes): __m512i and __m512bh are the same 64
            // bytes; a bfloat16 vector is read as the bits it holds.
            let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b as *const __m512i));
            let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(16) as *const __m512i));
            let b2: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(32) as *const __m512i));
            for (r, row) in acc.iter_mut().enumerate() {
                let av: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*ap.add(r * kp + i) as i32));
                row[0] = _mm512_dpbf16_ps(row[0], av, b0);
                row[1] = _mm512_dpbf16_ps(row[1], av, b1);
                row[2] = _mm512_dpbf16_ps(row[2], av, b2);
            }
        }
        let cp = c.as_mut_ptr();
        for (r, row) in acc.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let dst = cp.add(r * ldc + 16 * j);
                _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), *v));
            }
        }
    }
}
