//! The AVX-512 path: weights packed once at load into 48-column panels
//! (`panels.rs`), an 8-row × 48-column register kernel of f32 FMAs.

use super::panels::Kernel;

/// Columns per packed panel: three 512-bit vectors of f32. (With 8 rows that
/// is 24 accumulators: enough independent FMAs per loaded value to keep both
/// FMA ports busy, and within AVX-512's 32 registers.)
pub const PANEL: usize = 48;

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

/// The kernel, for `Weights` (see `panels::Kernel`).
pub const KERNEL: Kernel = Kernel {
    panel: PANEL,
    available,
    #[cfg(target_arch = "x86_64")]
    block: Some(kernel::block),
    #[cfg(not(target_arch = "x86_64"))]
    block: None,
};

#[cfg(target_arch = "x86_64")]
mod kernel {
    use std::arch::x86_64::*;

    use super::super::panels::{k_major_tiles, Packed};
    use super::PANEL;

    /// All panels over `rows` rows of `a`, in tiles of 8 rows, then 4, 2, 1,
    /// reading the bfloat16 copy of the weights when `half`.
    ///
    /// # Safety
    /// As `panels::Block`, the CPU supporting AVX-512F and b's panels being
    /// 48 columns wide.
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
        let tiles = k_major_tiles(a, rows, k, &[8, 4, 2, 1]);
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
