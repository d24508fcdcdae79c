//! The AVX2 path, for x86-64 CPUs without AVX-512: weights packed once at
//! load into 16-column panels (`panels.rs`), a 6-row × 16-column register
//! kernel of f32 FMAs. Against matrixmultiply's own AVX2 kernel (the
//! portable path) it saves repacking the weights at every product.

use super::panels::Kernel;

/// Columns per packed panel: two 256-bit vectors of f32. (With 6 rows that
/// is 12 accumulators, two panel values and a broadcast: 15 of AVX2's 16
/// registers.)
pub const PANEL: usize = 16;

/// True when this CPU runs the AVX2 kernel (AVX2 and FMA).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
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

    /// Inner values per pass: 6 rows and 16 columns of 256 f32s are 6 KiB
    /// and 16 KiB, within L1 together.
    const KC: usize = 256;
    /// Tiles per group: 32 tiles of 6 rows are 192 KiB of `a` per slice of
    /// KC, within the L2 of the smallest cores that run this path.
    const TILES: usize = 32;

    /// All panels over `rows` rows of `a`, in tiles of 6 rows, then 4, 2, 1,
    /// reading the bfloat16 copy of the weights when `half`.
    ///
    /// # Safety
    /// As `panels::Block`, the CPU supporting AVX2 and FMA and b's panels
    /// being 16 columns wide.
    #[target_feature(enable = "avx2,fma")]
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
        let tiles = k_major_tiles(a, rows, k, &[6, 4, 2, 1]);
        // k in slices of KC, so the panel's slice (KC × 16) stays in L1
        // while the tiles pass, and tiles in groups whose slices of `a`
        // (TILES × 6 × KC) stay in L2 while the panels pass.
        for group in tiles.chunks(TILES) {
            for k0 in (0..k).step_by(KC) {
                let kc = KC.min(k - k0);
                for (i, p) in panels.clone().enumerate() {
                    let at = p * k * PANEL + k0 * PANEL;
                    for (r, mr, t) in group {
                        let t = &t[k0 * mr..];
                        let cr = &mut c[r * ldc + i * PANEL..];
                        if half {
                            let panel = b.half[at..at + kc * PANEL].as_ptr();
                            let load = |kk: usize, j: usize| widen(panel.add(kk * PANEL + 8 * j));
                            match mr {
                                6 => tile::<6, _>(t, kc, cr, ldc, load),
                                4 => tile::<4, _>(t, kc, cr, ldc, load),
                                2 => tile::<2, _>(t, kc, cr, ldc, load),
                                _ => tile::<1, _>(t, kc, cr, ldc, load),
                            }
                        } else {
                            let panel = b.data[at..at + kc * PANEL].as_ptr();
                            let load = |kk: usize, j: usize| {
                                _mm256_loadu_ps(panel.add(kk * PANEL + 8 * j))
                            };
                            match mr {
                                6 => tile::<6, _>(t, kc, cr, ldc, load),
                                4 => tile::<4, _>(t, kc, cr, ldc, load),
                                2 => tile::<2, _>(t, kc, cr, ldc, load),
                                _ => tile::<1, _>(t, kc, cr, ldc, load),
                            }
                        }
                    }
                }
            }
        }
    }

    /// 8 bfloat16 values widened to f32 (a bfloat16 is an f32's upper half).
    ///
    /// # Safety
    /// The CPU must support AVX2 and `p` must point to 8 readable `u16`s.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn widen(p: *const u16) -> __m256 {
        let h = _mm_loadu_si128(p as *const __m128i);
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
    }

    /// MR rows × 16 columns, accumulated over k in 2·MR registers; `a` is
    /// k-major; `load(kk, j)` reads the panel's 8 values `8j..8j + 8` of row kk.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA; `a` must hold `k · MR` values,
    /// `load` must read inside a panel of `k · 16` values, and `c` must hold
    /// `(MR - 1) · ldc + 16`: the kernel reads and writes through raw
    /// pointers without bounds checks.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn tile<const MR: usize, L: Fn(usize, usize) -> __m256>(
        a: &[f32],
        k: usize,
        c: &mut [f32],
        ldc: usize,
        load: L,
    ) {
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        let ap = a.as_ptr();
        for kk in 0..k {
            let b0 = load(kk, 0);
            let b1 = load(kk, 1);
            for (r, row) in acc.iter_mut().enumerate() {
                let av = _mm256_set1_ps(*ap.add(kk * MR + r));
                row[0] = _mm256_fmadd_ps(av, b0, row[0]);
                row[1] = _mm256_fmadd_ps(av, b1, row[1]);
            }
        }
        let cp = c.as_mut_ptr();
        for (r, row) in acc.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let dst = cp.add(r * ldc + 8 * j);
                _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_loadu_ps(dst), *v));
            }
        }
    }
}
