//! The AVX-512 path: weights packed once at load into column panels, an
//! 8-row × 48-column register kernel of f32 FMAs.

use super::{rows_in_cache, split_columns, to_bf16};

/// Columns per packed panel: three 512-bit vectors of f32. (With 8 rows that
/// is 24 accumulators: enough independent FMAs per loaded value to keep both
/// FMA ports busy, and within AVX-512's 32 registers.)
pub const PANEL: usize = 48;

/// A weight matrix (`k × n`, row-major, n a multiple of PANEL) packed once at
/// load into column panels: panel p holds, for each of the k rows, its PANEL
/// values contiguously. The AVX-512 kernel then streams it without repacking.
pub struct Packed {
    pub k: usize,
    pub n: usize,
    data: Vec<f32>,
    /// The same panels in bfloat16 (the upper half of each f32, rounded to
    /// nearest even), for products of few rows: see [`HALF_MAX_ROWS`].
    half: Vec<u16>,
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
    /// Packs `w` (k × n, row-major); None if n is not a multiple of PANEL.
    pub fn new(w: &[f32], k: usize, n: usize) -> Option<Packed> {
        if !n.is_multiple_of(PANEL) || w.len() != k * n {
            return None;
        }
        let mut data = Vec::with_capacity(k * n);
        for p in 0..n / PANEL {
            for row in 0..k {
                data.extend_from_slice(&w[row * n + p * PANEL..row * n + (p + 1) * PANEL]);
            }
        }
        let half = data.iter().map(|&x| to_bf16(x)).collect();
        Some(Packed { k, n, data, half })
    }
}

/// True when this CPU runs the AVX-512 kernel.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// c[m × n] += a[m × k] · b, with a row-major at stride k and c at stride n,
/// the panels shared among `threads`. False (doing nothing) when shapes do
/// not fit or AVX-512 is missing.
pub fn product(a: &[f32], m: usize, b: &Packed, c: &mut [f32], threads: usize) -> bool {
    if a.len() < m * b.k || c.len() < m * b.n || !available() {
        return false;
    }
    split_columns(
        m,
        b.n,
        PANEL,
        b.n / PANEL,
        threads,
        c,
        |panels, part, ldc| run_panels(a, m, b, panels, part, ldc),
    )
}

/// Panels `panels` of b over all rows, into c (whose column 0 is panel `panels.start`).
fn run_panels(
    a: &[f32],
    m: usize,
    b: &Packed,
    panels: std::ops::Range<usize>,
    c: &mut [f32],
    ldc: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        let row_block = rows_in_cache(4 * b.k);
        let mut r0 = 0;
        while r0 < m {
            let rows = row_block.min(m - r0);
            // SAFETY: callers checked AVX-512F and the slice sizes; every
            // offset the kernel touches is inside them.
            unsafe {
                kernel::block(
                    &a[r0 * b.k..],
                    rows,
                    m <= HALF_MAX_ROWS && half_enabled(),
                    b,
                    panels.clone(),
                    &mut c[r0 * ldc..],
                    ldc,
                )
            };
            r0 += rows;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, m, b, panels, c, ldc);
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use std::arch::x86_64::*;

    use super::{Packed, PANEL};

    /// All panels over `rows` rows of `a`, in tiles of 8 rows, then 4, 2, 1,
    /// reading the bfloat16 copy of the weights when `half`.
    /// Each tile of `a` is first copied k-major, so the kernel's broadcasts
    /// read one contiguous stream.
    ///
    /// # Safety
    /// The CPU must support AVX-512F. `a` must hold `rows × b.k` values; `c`
    /// must hold `(rows - 1) · ldc + 48 · panels.len()` values with
    /// `ldc >= 48 · panels.len()`; `panels` must lie within `b`'s panels, and
    /// with `half`, `b.half` must be filled like `b.data`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn block(
        a: &[f32],
        rows: usize,
        half: bool,
        b: &Packed,
        panels: std::ops::Range<usize>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let k = b.k;
        let mut tiles: Vec<(usize, usize, Vec<f32>)> = Vec::new();
        let mut r = 0;
        while r < rows {
            let mr = match rows - r {
                8.. => 8,
                4..=7 => 4,
                2..=3 => 2,
                _ => 1,
            };
            let mut t = vec![0.0f32; k * mr];
            for kk in 0..k {
                for i in 0..mr {
                    t[kk * mr + i] = a[(r + i) * k + kk];
                }
            }
            tiles.push((r, mr, t));
            r += mr;
        }
        for (i, p) in panels.enumerate() {
            let span = p * k * PANEL..(p + 1) * k * PANEL;
            for (r, mr, t) in &tiles {
                let cr = &mut c[r * ldc + i * PANEL..];
                if half {
                    let panel = &b.half[span.clone()];
                    match mr {
                        8 => tile_half::<8>(t, panel, k, cr, ldc),
                        4 => tile_half::<4>(t, panel, k, cr, ldc),
                        2 => tile_half::<2>(t, panel, k, cr, ldc),
                        _ => tile_half::<1>(t, panel, k, cr, ldc),
                    }
                } else {
                    let panel = &b.data[span.clone()];
                    match mr {
                        8 => tile::<8>(t, panel, k, cr, ldc),
                        4 => tile::<4>(t, panel, k, cr, ldc),
                        2 => tile::<2>(t, panel, k, cr, ldc),
                        _ => tile::<1>(t, panel, k, cr, ldc),
                    }
                }
            }
        }
    }

    /// 16 bfloat16 values widened to f32 (a bfloat16 is an f32's upper half).
    ///
    /// # Safety
    /// The CPU must support AVX-512F and `p` must point to 16 readable `u16`s.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn widen(p: *const u16) -> __m512 {
        let h = _mm256_loadu_si256(p as *const __m256i);
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
    }

    /// `tile` over a bfloat16 panel.
    ///
    /// # Safety
    /// As [`tile`], with `panel` holding `k · 48` bfloat16 values.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tile_half<const MR: usize>(
        a: &[f32],
        panel: &[u16],
        k: usize,
        c: &mut [f32],
        ldc: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 3]; MR];
        let (ap, bp) = (a.as_ptr(), panel.as_ptr());
        for kk in 0..k {
            let b0 = widen(bp.add(kk * PANEL));
            let b1 = widen(bp.add(kk * PANEL + 16));
            let b2 = widen(bp.add(kk * PANEL + 32));
            for (r, row) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*ap.add(kk * MR + r));
                row[0] = _mm512_fmadd_ps(av, b0, row[0]);
                row[1] = _mm512_fmadd_ps(av, b1, row[1]);
                row[2] = _mm512_fmadd_ps(av, b2, row[2]);
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

    /// MR rows × 48 columns, accumulated over k in 3·MR registers; `a` is k-major.
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `a` must hold `k · MR` values, `panel`
    /// `k · 48`, and `c` `(MR - 1) · ldc + 48`: the kernel reads and writes
    /// through raw pointers without bounds checks.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tile<const MR: usize>(a: &[f32], panel: &[f32], k: usize, c: &mut [f32], ldc: usize) {
        let mut acc = [[_mm512_setzero_ps(); 3]; MR];
        let (ap, bp) = (a.as_ptr(), panel.as_ptr());
        for kk in 0..k {
            let b0 = _mm512_loadu_ps(bp.add(kk * PANEL));
            let b1 = _mm512_loadu_ps(bp.add(kk * PANEL + 16));
            let b2 = _mm512_loadu_ps(bp.add(kk * PANEL + 32));
            for (r, row) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*ap.add(kk * MR + r));
                row[0] = _mm512_fmadd_ps(av, b0, row[0]);
                row[1] = _mm512_fmadd_ps(av, b1, row[1]);
                row[2] = _mm512_fmadd_ps(av, b2, row[2]);
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
