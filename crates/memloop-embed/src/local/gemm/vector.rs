//! The forward pass's element-wise loops (GELU, layer norm, softmax,
//! residual adds), compiled a second time for AVX-512 and FMA and chosen at
//! run time. The crate is built for baseline x86-64, where these loops run
//! four lanes wide; once the matrix products run on AMX they are a fifth of
//! a batch's time unless they run sixteen wide.

/// Runs `f` compiled for AVX-512 when the CPU has it, else as built.
/// `f`'s body (and whatever it inlines: the loops below are
/// `#[inline(always)]`) is what gets the wider instructions.
#[inline(always)]
pub fn vectorised<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if super::avx512::available() {
        // SAFETY: the CPU has AVX-512F (checked just above), the only
        // feature the wrapper enables.
        return unsafe { avx512(f) };
    }
    f()
}

/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}
