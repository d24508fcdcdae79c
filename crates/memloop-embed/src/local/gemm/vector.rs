//! The forward pass's element-wise loops (GELU, layer norm, softmax,
//! residual adds), compiled again for AVX-512 and for AVX2 with FMA and
//! chosen at run time. The crate is built for baseline x86-64, where these loops run
//! four lanes wide; once the matrix products run on AMX they are a fifth of
//! a batch's time unless they run sixteen wide.

use super::super::math::{gelu, ERF_P, ERF_Q};

/// Runs `f` compiled for AVX-512 when the CPU has it, else for AVX2 with
/// FMA when it has those, else as built.
/// `f`'s body (and whatever it inlines: `math`'s loops are
/// `#[inline(always)]`, and so must the closure be) is what gets the wider
/// instructions.
#[inline(always)]
pub fn vectorised<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if super::avx512::available() {
        // SAFETY: the CPU has AVX-512F (checked just above), the only
        // feature the wrapper enables.
        return unsafe { avx512(f) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above), the
        // features the wrapper enables.
        return unsafe { avx2(f) };
    }
    f()
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// GELU (`math::gelu`) of every value in place. On AVX-512, sixteen lanes
/// with FMAs, and erf's division replaced by a reciprocal estimate refined
/// once by Newton's method: a vector division's throughput alone made GELU
/// a tenth of a batch's time.
pub fn gelu_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx512::available() {
        // SAFETY: the CPU has AVX-512F, checked just above.
        unsafe { gelu_avx512(xs) };
        return;
    }
    // Elsewhere the scalar loop, eight lanes wide where AVX2 runs.
    vectorised(
        #[inline(always)]
        || {
            for v in xs.iter_mut() {
                *v = gelu(*v);
            }
        },
    );
}

/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gelu_avx512(xs: &mut [f32]) {
    use std::arch::x86_64::*;
    let splat = _mm512_set1_ps;
    let mut chunks = xs.chunks_exact_mut(16);
    for chunk in &mut chunks {
        // SAFETY: `chunk` is 16 f32, read and written whole.
        let x = unsafe { _mm512_loadu_ps(chunk.as_ptr()) };
        let z = _mm512_mul_ps(x, splat(std::f32::consts::FRAC_1_SQRT_2));
        let z = _mm512_min_ps(_mm512_max_ps(z, splat(-4.0)), splat(4.0));
        let z2 = _mm512_mul_ps(z, z);
        let mut p = splat(ERF_P[0]);
        for &c in &ERF_P[1..] {
            p = _mm512_fmadd_ps(p, z2, splat(c));
        }
        let p = _mm512_mul_ps(p, z);
        let mut q = splat(ERF_Q[0]);
        for &c in &ERF_Q[1..] {
            q = _mm512_fmadd_ps(q, z2, splat(c));
        }
        // 1/q: a 14-bit estimate, then r·(2 − q·r), good to f32's precision.
        let r = _mm512_rcp14_ps(q);
        let r = _mm512_mul_ps(r, _mm512_fnmadd_ps(q, r, splat(2.0)));
        let erf = _mm512_mul_ps(p, r);
        let y = _mm512_mul_ps(_mm512_mul_ps(splat(0.5), x), _mm512_add_ps(splat(1.0), erf));
        // SAFETY: as the load above.
        unsafe { _mm512_storeu_ps(chunk.as_mut_ptr(), y) };
    }
    for v in chunks.into_remainder() {
        *v = gelu(*v);
    }
}
