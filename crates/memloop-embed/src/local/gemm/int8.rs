//! The int8 path (AVX512-VNNI): weights stored once at load in int8, one
//! scale per output column; activations rounded to 8 bits at each product,
//! one scale and zero point per row; `vpdpbusd` accumulating four products
//! per 32-bit lane in i32, scaled back to f32 once per output.
//!
//! A product of few rows (one query) is bound by reading the weights from
//! memory: int8 is half bfloat16's bytes. A batch is bound by arithmetic:
//! one `vpdpbusd` does 64 multiply-adds where `vdpbf16ps` does 32.
//!
//! `vpdpbusd` multiplies unsigned activations by signed weights. A row's
//! values in [lo, hi] (0 always inside) map onto 0..=255 with its zero at z,
//! so a one-sided row (after GELU: all-MiniLM-L6-v2's feed-forward output
//! fell to a cosine of 0.9966 with symmetric rounding) keeps all 8 bits;
//! each output then subtracts z · (its column's sum of weights), which is
//! computed at load.

use super::avx512::PANEL;
use super::panels::ahead_of;
use super::{row_blocks, row_tiles, rows_in_cache, split_columns, vectorised, KEEP_BYTES};

/// A weight matrix (`k × n`, k a multiple of 4, n of PANEL) in int8: for
/// each panel of 48 columns, for each quad of rows (4i … 4i + 3), 48 u32s,
/// each holding its column's four values (row 4i in the low byte): the
/// operand order `vpdpbusd` multiplies in.
pub struct Quads {
    pub k: usize,
    pub n: usize,
    data: Vec<u32>,
    /// Column j's weights are `scale[j] · q`.
    scale: Vec<f32>,
    /// Σ q over column j: what a row's zero point multiplies.
    sums: Vec<i32>,
}

/// The largest magnitude a weight takes here: symmetric, so -128 is never
/// used and a value's negation is representable.
const QMAX: f32 = 127.0;

impl Quads {
    /// Lays out `w` (k × n, row-major); None unless k is a multiple of 4 and
    /// n of PANEL, or when a weight is not finite.
    pub fn new(w: &[f32], k: usize, n: usize) -> Option<Quads> {
        if k == 0 || !k.is_multiple_of(4) || !n.is_multiple_of(PANEL) || w.len() != k * n {
            return None;
        }
        if w.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut amax = vec![0.0f32; n];
        for row in w.chunks_exact(n) {
            for (m, &x) in amax.iter_mut().zip(row) {
                *m = m.max(x.abs());
            }
        }
        let scale: Vec<f32> = amax.iter().map(|&m| m / QMAX).collect();
        let quantise = |x: f32, s: f32| -> i8 {
            if s > 0.0 {
                (x / s).round_ties_even().clamp(-QMAX, QMAX) as i8
            } else {
                0
            }
        };
        let mut sums = vec![0i32; n];
        let mut data = Vec::with_capacity(k / 4 * n);
        for p in 0..n / PANEL {
            for quad in 0..k / 4 {
                for col in p * PANEL..(p + 1) * PANEL {
                    let mut packed = 0u32;
                    for i in 0..4 {
                        let q = quantise(w[(4 * quad + i) * n + col], scale[col]);
                        sums[col] += i32::from(q);
                        packed |= u32::from(q as u8) << (8 * i);
                    }
                    data.push(packed);
                }
            }
        }
        Some(Quads {
            k,
            n,
            data,
            scale,
            sums,
        })
    }
}

/// True when this CPU runs the path (AVX-512F, BW and VNNI).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::avx512::available()
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A channel whose largest magnitude in a product's rows is above this
/// many times the channels' mean is an outlier (see [`outliers`]).
const OUTLIER_RATIO: f32 = 6.0;
/// At most this many channels of a product are outliers: the cost of
/// theirs stays a few percent of the product's.
const MAX_OUTLIERS: usize = 8;

/// The input channels of `a` (m rows of k) to take out of the int8 product,
/// largest first. A transformer's hidden state carries a few channels
/// (nomic-embed-text-v1.5: 2 of 768, in every layer) 10 to 30 times larger
/// than the rest; one scale per row would then round every other channel
/// to a handful of levels (a cosine of 0.981 to the f32 vectors). Those
/// channels are multiplied in f32 instead, against the same int8 weights.
fn outliers(a: &[f32], m: usize, k: usize) -> Vec<usize> {
    let mut peak = vec![0.0f32; k];
    vectorised(
        #[inline(always)]
        || {
            for row in a[..m * k].chunks_exact(k) {
                for (p, x) in peak.iter_mut().zip(row) {
                    *p = p.max(x.abs());
                }
            }
        },
    );
    let bound = OUTLIER_RATIO * peak.iter().sum::<f32>() / k.max(1) as f32;
    let mut found: Vec<usize> = (0..k).filter(|&i| peak[i] > bound).collect();
    found.sort_by(|&x, &y| peak[y].total_cmp(&peak[x]));
    found.truncate(MAX_OUTLIERS);
    found
}

/// c[m × n] += a[m × k] · b, with a row-major at stride k and c at stride n,
/// the panels shared among `threads`. False (doing nothing) when shapes do
/// not fit or the CPU lacks the path.
pub fn product(a: &[f32], m: usize, b: &Quads, c: &mut [f32], threads: usize) -> bool {
    if a.len() < m * b.k || c.len() < m * b.n || !available() {
        return false;
    }
    if m == 0 {
        return true;
    }
    let (k, kq) = (b.k, b.k / 4);
    let outliers = outliers(a, m, k);
    // Rounded once per product, row-major: row r's quad i is u32 i of its
    // row. Every value is written below, so old contents may stay.
    let mut quads = A_QUADS.take();
    quads.resize(m * kq, 0);
    let mut scales = vec![(0.0f32, 0i32); m];
    let mut without = vec![0.0f32; if outliers.is_empty() { 0 } else { k }];
    for ((row, out), s) in a[..m * k]
        .chunks_exact(k)
        .zip(quads.chunks_exact_mut(kq))
        .zip(scales.iter_mut())
    {
        let row = if outliers.is_empty() {
            row
        } else {
            without.copy_from_slice(row);
            outliers.iter().for_each(|&i| without[i] = 0.0);
            &without[..]
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `available()` checked AVX-512F and BW above; `out` holds
        // k / 4 values for the row's k (a multiple of 4).
        unsafe {
            *s = kernel::quantise_row(row, out);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (row, out, s);
    }
    let rows = Rows {
        quads: &quads,
        scales: &scales,
        f32s: a,
        outliers: &outliers,
    };
    let done = split_columns(
        m,
        b.n,
        PANEL,
        b.n / PANEL,
        threads,
        c,
        |panels, part, ldc| run_panels(&rows, m, b, panels, part, ldc),
    );
    if quads.capacity() * 4 <= KEEP_BYTES {
        A_QUADS.set(quads);
    }
    done
}

thread_local! {
    static A_QUADS: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A product's activations: rounded to int8 (without the outlier
/// channels), and as they came, for the outliers.
struct Rows<'a> {
    /// Row r's quads at `r · k / 4`.
    quads: &'a [u32],
    /// Row r's scale and zero point.
    scales: &'a [(f32, i32)],
    f32s: &'a [f32],
    outliers: &'a [usize],
}

/// Panels `panels` of b over all rows, into c (whose column 0 is panel
/// `panels.start`): for each panel, every tile of 8 rows (then 4, 2, 1),
/// then the outlier channels' products.
fn run_panels(
    a: &Rows<'_>,
    m: usize,
    b: &Quads,
    panels: std::ops::Range<usize>,
    c: &mut [f32],
    ldc: usize,
) {
    let kq = b.k / 4;
    for block in row_blocks(m, rows_in_cache(4 * kq)) {
        for (i, p) in panels.clone().enumerate() {
            let panel = &b.data[p * kq * PANEL..(p + 1) * kq * PANEL];
            let cols = p * PANEL..(p + 1) * PANEL;
            let (scale, sums) = (&b.scale[cols.clone()], &b.sums[cols]);
            let ahead = ahead_of(&b.data, p, kq * PANEL, &panels);
            for (r, mr) in row_tiles(block.clone()) {
                // The first tile of a panel fetches the next one meanwhile.
                let ahead = if r == block.start { ahead } else { panel };
                let (ar, cr) = (&a.quads[r * kq..], &mut c[r * ldc + i * PANEL..]);
                let out = kernel::Out {
                    rows: &a.scales[r..r + mr],
                    col_scale: scale,
                    sums,
                };
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `product` checked the CPU's features; `ar` holds
                // at least `mr` rows of `kq` quads (r + mr ≤ m), `panel` kq
                // · 48 values, `out` mr rows' scales and 48 columns' scales
                // and sums, and `cr` (mr - 1) · ldc + 48 values (`part` is m
                // rows of ldc ≥ 48 · panels.len() columns).
                unsafe {
                    match mr {
                        8 => kernel::tile::<8>(ar, kq, panel, ahead, &out, cr, ldc),
                        4 => kernel::tile::<4>(ar, kq, panel, ahead, &out, cr, ldc),
                        2 => kernel::tile::<2>(ar, kq, panel, ahead, &out, cr, ldc),
                        _ => kernel::tile::<1>(ar, kq, panel, ahead, &out, cr, ldc),
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (ar, cr, panel, ahead, out);
            }
            for &ch in a.outliers {
                // The channel's row of this panel's weights, scaled back to f32.
                let mut w = [0.0f32; PANEL];
                let quads = &panel[ch / 4 * PANEL..(ch / 4 + 1) * PANEL];
                for ((w, &q), &s) in w.iter_mut().zip(quads).zip(scale) {
                    *w = f32::from((q >> (8 * (ch % 4))) as u8 as i8) * s;
                }
                for row in block.clone() {
                    let x = a.f32s[row * b.k + ch];
                    let cr = &mut c[row * ldc + i * PANEL..row * ldc + (i + 1) * PANEL];
                    vectorised(
                        #[inline(always)]
                        || cr.iter_mut().zip(&w).for_each(|(c, w)| *c += x * w),
                    );
                }
            }
        }
    }
}

mod kernel {
    /// How a tile's i32 sums become f32: `(acc - z[r] · sums[j]) · s[r] ·
    /// col_scale[j]`, where `rows[r]` is (s, z).
    pub struct Out<'a> {
        pub rows: &'a [(f32, i32)],
        pub col_scale: &'a [f32],
        pub sums: &'a [i32],
    }

    #[cfg(target_arch = "x86_64")]
    pub use simd::{quantise_row, tile};

    #[cfg(target_arch = "x86_64")]
    mod simd {
        use std::arch::x86_64::*;

        use super::super::super::panels::fetch_ahead;
        use super::super::PANEL;
        use super::Out;

        /// Row `a` rounded to 8 bits: [lo, hi] (widened to hold 0) onto
        /// 0..=255, rounding to nearest even, four values to a u32 in order;
        /// returns the scale and the zero point (a = scale · (u - zero)).
        ///
        /// # Safety
        /// The CPU must support AVX-512F and BW; `out` must hold `a.len() /
        /// 4` values and `a.len()` be a multiple of 4.
        #[target_feature(enable = "avx512f,avx512bw")]
        pub unsafe fn quantise_row(a: &[f32], out: &mut [u32]) -> (f32, i32) {
            let whole = a.len() / 16 * 16;
            let (mut vlo, mut vhi) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            for i in (0..whole).step_by(16) {
                let v = _mm512_loadu_ps(a.as_ptr().add(i));
                vlo = _mm512_min_ps(vlo, v);
                vhi = _mm512_max_ps(vhi, v);
            }
            let (mut lo, mut hi) = (_mm512_reduce_min_ps(vlo), _mm512_reduce_max_ps(vhi));
            for &x in &a[whole..] {
                (lo, hi) = (lo.min(x), hi.max(x));
            }
            let scale = (hi - lo) / 255.0;
            if !(scale > 0.0 && scale.is_finite()) {
                // All zero (or not finite): every value reads as 0.
                out.fill(0);
                return (0.0, 0);
            }
            let inv = 1.0 / scale;
            let zero = (-lo * inv).round_ties_even().clamp(0.0, 255.0);
            let (vinv, vzero, top) = (
                _mm512_set1_ps(inv),
                _mm512_set1_ps(zero),
                _mm512_set1_ps(255.0),
            );
            let op = out.as_mut_ptr() as *mut u8;
            for i in (0..whole).step_by(16) {
                let v = _mm512_fmadd_ps(_mm512_loadu_ps(a.as_ptr().add(i)), vinv, vzero);
                let v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), top);
                let q = _mm512_cvtps_epi32(v);
                _mm_storeu_si128(op.add(i) as *mut __m128i, _mm512_cvtepi32_epi8(q));
            }
            for (i, &x) in a.iter().enumerate().skip(whole) {
                *op.add(i) = x.mul_add(inv, zero).clamp(0.0, 255.0).round_ties_even() as u8;
            }
            (scale, zero as i32)
        }

        /// MR rows × 48 columns, accumulated over the kq quads in 3·MR
        /// registers; row r's quads are `a[r·kq..(r + 1)·kq]`.
        ///
        /// # Safety
        /// The CPU must support AVX-512F and AVX512-VNNI; `a` must hold `MR ·
        /// kq` values, `panel` `kq · 48`, `out` MR row scales and 48 column
        /// scales and offsets, and `c` `(MR - 1) · ldc + 48`: the kernel
        /// reads and writes through raw pointers without bounds checks.
        /// `ahead` (the next panel) is only prefetched, never read.
        #[target_feature(enable = "avx512f,avx512vnni")]
        #[inline]
        pub unsafe fn tile<const MR: usize>(
            a: &[u32],
            kq: usize,
            panel: &[u32],
            ahead: &[u32],
            out: &Out<'_>,
            c: &mut [f32],
            ldc: usize,
        ) {
            let mut acc = [[_mm512_setzero_si512(); 3]; MR];
            let (ap, bp, next) = (a.as_ptr(), panel.as_ptr(), ahead.as_ptr());
            for i in 0..kq {
                fetch_ahead(next.wrapping_add(i * PANEL));
                let b = bp.add(i * PANEL) as *const __m512i;
                let b0 = _mm512_loadu_si512(b);
                let b1 = _mm512_loadu_si512(b.add(1));
                let b2 = _mm512_loadu_si512(b.add(2));
                for (r, row) in acc.iter_mut().enumerate() {
                    let av = _mm512_set1_epi32(*ap.add(r * kq + i) as i32);
                    row[0] = _mm512_dpbusd_epi32(row[0], av, b0);
                    row[1] = _mm512_dpbusd_epi32(row[1], av, b1);
                    row[2] = _mm512_dpbusd_epi32(row[2], av, b2);
                }
            }
            let cp = c.as_mut_ptr();
            let (cs, sums) = (out.col_scale.as_ptr(), out.sums.as_ptr());
            for (r, row) in acc.iter().enumerate() {
                let (s, z) = *out.rows.as_ptr().add(r);
                let (rs, rz) = (_mm512_set1_ps(s), _mm512_set1_epi32(z));
                for (j, v) in row.iter().enumerate() {
                    let w = _mm512_loadu_si512(sums.add(16 * j) as *const __m512i);
                    let sum = _mm512_cvtepi32_ps(_mm512_sub_epi32(*v, _mm512_mullo_epi32(rz, w)));
                    let scale = _mm512_mul_ps(rs, _mm512_loadu_ps(cs.add(16 * j)));
                    let dst = cp.add(r * ldc + 16 * j);
                    _mm512_storeu_ps(dst, _mm512_fmadd_ps(sum, scale, _mm512_loadu_ps(dst)));
                }
            }
        }
    }
}
