//! The forward pass's element-wise math, written so that it vectorises:
//! multiplies, adds and comparisons only (no libm calls, no f32::max or
//! clamp, whose NaN rules cost a blend per vector), reductions in LANES
//! running values. Callers run these inside `gemm::vectorised`, which is
//! where they get sixteen lanes instead of baseline x86-64's four.

/// Lanes of the reductions below: one 512-bit vector of f32.
const LANES: usize = 16;

/// The sum of f(v) over xs, in LANES running sums (a single running sum is
/// one dependent add per value, which no compiler may reorder into vectors).
#[inline(always)]
pub fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder().iter().map(|&v| f(v)).sum::<f32>();
    for chunk in chunks {
        for (a, &v) in acc.iter_mut().zip(chunk) {
            *a += f(v);
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// The largest value of xs, in LANES running maxima.
#[inline(always)]
fn lane_max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks
        .remainder()
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    for chunk in chunks {
        for (a, &v) in acc.iter_mut().zip(chunk) {
            if v > *a {
                *a = v;
            }
        }
    }
    acc.iter().copied().fold(rest, f32::max)
}

#[inline(always)]
pub fn softmax(row: &mut [f32]) {
    // Plain loops: an iterator's for_each is a fold the compiler may leave
    // out of line, and then built for baseline x86-64 (see `vectorised`).
    let max = lane_max(row);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / lane_sum(row, |v| v);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// e^x for x ≤ 0 (softmax's inputs less their maximum) in multiplies and
/// adds only, so that the loop vectorises (libm's expf is a call per value):
/// x = n·ln 2 + r with |r| ≤ ln 2 / 2, e^r by its Taylor series to r^7
/// (relative error below 4e-7), times 2^n built in the exponent bits.
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Below -87, e^x is under f32's smallest normal: 0 as far as softmax cares.
    // (A comparison, not f32::max, whose NaN rule costs a blend per vector.)
    let x = if x < -87.0 { -87.0 } else { x };
    // Rounds x·log2(e) to the nearest integer by adding and taking away
    // 1.5·2^23 (no call to round(), which baseline x86-64 lacks).
    const SHIFT: f32 = 12_582_912.0;
    let shifted = x * std::f32::consts::LOG2_E + SHIFT;
    let n = shifted - SHIFT;
    // ln 2 in two parts, so that n·ln2_hi is exact.
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let mut p = 1.0 / 5040.0;
    for c in [
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    // 2^n: n in -126..=0 after the clamp, so the biased exponent is normal.
    // n is also the low bits of `shifted` less SHIFT's, which integer
    // arithmetic reads without a (saturating, branchy) float-to-int cast.
    let biased = shifted
        .to_bits()
        .wrapping_sub(SHIFT.to_bits())
        .wrapping_add(127);
    let scale = f32::from_bits(biased << 23);
    p * scale
}

/// SwiGLU's gate: `up · silu(gate)`, silu(x) = x / (1 + e^-x), written
/// with e raised only to a value ≤ 0 (what `exp` computes), so it neither
/// overflows nor calls libm.
#[inline(always)]
pub fn swiglu(up: f32, gate: f32) -> f32 {
    let e = exp(if gate > 0.0 { -gate } else { gate });
    // silu(x) = x / (1 + e^-x) for x > 0, and x·e^x / (1 + e^x) otherwise.
    let numerator = if gate > 0.0 { gate } else { gate * e };
    up * numerator / (1.0 + e)
}

/// GELU with the exact erf form that BERT uses.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf as a rational polynomial in f32 (the approximation of Eigen's
/// `generic_fast_erf_float`; |error| below 1e-6): only multiplies and adds, so
/// the GELU loop vectorises. A libm erf here costs more than the matrix products.
#[inline(always)]
fn erf(x: f32) -> f32 {
    // Comparisons rather than f32::clamp, whose NaN rule costs blends.
    #[allow(clippy::manual_clamp)]
    let x = if x > 4.0 {
        4.0
    } else if x < -4.0 {
        -4.0
    } else {
        x
    };
    let x2 = x * x;
    let mut p = ERF_P[0];
    for c in &ERF_P[1..] {
        p = p * x2 + c;
    }
    let p = p * x;
    let mut q = ERF_Q[0];
    for c in &ERF_Q[1..] {
        q = q * x2 + c;
    }
    p / q
}

/// erf's numerator (times x) and denominator, polynomials in x², highest
/// power first.
pub const ERF_P: [f32; 7] = [
    -2.726_142_3e-10,
    2.770_681_4e-8,
    -2.101_024e-6,
    -5.692_506_4e-5,
    -7.349_906_3e-4,
    -2.954_6e-3,
    -1.609_603_3e-2,
];
pub const ERF_Q: [f32; 5] = [
    -1.456_607_2e-5,
    -2.133_740_6e-4,
    -1.682_827e-3,
    -7.373_329e-3,
    -1.426_474e-2,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x})");
        }
    }

    #[test]
    fn exp_matches_libm() {
        let mut x = -87.0f32;
        while x <= 0.0 {
            let (got, want) = (exp(x), x.exp());
            assert!(
                (got - want).abs() <= 4e-7 * want,
                "exp({x}) = {got}, libm {want}"
            );
            x += 0.0137;
        }
        assert!((0.0..1e-37).contains(&exp(f32::NEG_INFINITY)));
    }

    #[test]
    fn gelu_in_place_matches_gelu() {
        // Lengths around the 16-lane blocks, values across erf's clamp.
        for len in [1, 15, 16, 17, 100] {
            let xs: Vec<f32> = (0..len).map(|i| (i as f32 - 50.0) / 7.0).collect();
            let mut got = xs.clone();
            crate::local::gemm::gelu_in_place(&mut got);
            for (g, x) in got.iter().zip(&xs) {
                let want = gelu(*x);
                assert!(
                    (g - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "gelu({x}) = {g}, want {want}"
                );
            }
        }
    }

    #[test]
    fn swiglu_matches_its_formula() {
        for gate in [-90.0f32, -10.0, -1.5, -0.1, 0.0, 0.3, 2.0, 12.0, 90.0] {
            let want = 3.0 * gate / (1.0 + (-gate as f64).exp() as f32);
            let got = swiglu(3.0, gate);
            assert!(
                (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                "swiglu(3, {gate}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut r = vec![1.0, 2.0, 3.0, -1000.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(r[3] < 1e-30);
    }
}
