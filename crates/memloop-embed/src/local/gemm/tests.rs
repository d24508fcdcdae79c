use super::*;

/// How a path reads an input value.
type Round = fn(f32) -> f32;

fn bf16(x: f32) -> f32 {
    f32::from_bits(u32::from(to_bf16(x)) << 16)
}

/// `path`'s product against matrixmultiply for `m` rows and `k` inner
/// values, with the inputs rounded as the path reads them (`round_a`,
/// `round_w`), on 1 and 2 threads.
fn check(path: GemmPath, m: usize, k: usize, round_a: Round, round_w: Round) {
    let n = 96;
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 5.0)
        .collect();
    let w: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) / 3.0)
        .collect();
    let (ra, rw): (Vec<f32>, Vec<f32>) = (
        a.iter().map(|&x| round_a(x)).collect(),
        w.iter().map(|&x| round_w(x)).collect(),
    );
    let mut want: Vec<f32> = (0..m * n).map(|i| (i % 5) as f32 * 0.25).collect();
    let (mut got1, mut got2) = (want.clone(), want.clone());
    let av = View {
        data: &ra,
        rows: m,
        cols: k,
        row_stride: k,
        col_stride: 1,
    };
    let bv = View {
        data: &rw,
        rows: k,
        cols: n,
        row_stride: n,
        col_stride: 1,
    };
    assert!(sgemm(1.0, av, bv, 1.0, &mut want, n));
    let weights = Weights::new(path, w, k, n);
    assert_eq!(weights.path(), path);
    assert!(weights.product(&a, m, &mut got1, 1));
    assert!(weights.product(&a, m, &mut got2, 2));
    for ((g1, g2), w) in got1.iter().zip(&got2).zip(&want) {
        assert!(
            (g1 - w).abs() < 1e-3 * (k as f32 / 64.0),
            "{path:?}, m = {m}, k = {k}: {g1} vs {w}"
        );
        assert_eq!(g1, g2, "{path:?}, m = {m}, k = {k}: threads disagree");
    }
    // A dense layer: c = a · W + bias, whatever c held before.
    let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.1 - 2.0).collect();
    let mut want_b = vec![0.0f32; m * n];
    assert!(sgemm(1.0, av, bv, 0.0, &mut want_b, n));
    for row in want_b.chunks_exact_mut(n) {
        row.iter_mut().zip(&bias).for_each(|(v, b)| *v += b);
    }
    for threads in [1, 2] {
        let mut got = vec![f32::NAN; m * n];
        assert!(weights.product_with_bias(&a, m, &bias, &mut got, threads));
        for (g, w) in got.iter().zip(&want_b) {
            assert!(
                (g - w).abs() < 1e-3 * (k as f32 / 64.0),
                "{path:?} with a bias, m = {m}, k = {k}, {threads} threads: {g} vs {w}"
            );
        }
    }
    // A bias of the wrong width is refused.
    assert!(!weights.product_with_bias(&a, m, &bias[1..], &mut got1, 1));
}

#[test]
fn every_available_path_matches_matrixmultiply() {
    let paths = GemmPath::all_available();
    eprintln!("paths on this machine: {paths:?}");
    assert!(paths.contains(&GemmPath::Portable));
    for path in paths {
        // Row counts around the kernels' blocks: AMX works in 16 and 32 rows,
        // AVX-512 in 8, AVX2 in 6, and both read bf16 weights up to
        // HALF_MAX_ROWS rows.
        for m in [1, 13, 16, 17, 32, 45, 70, 200] {
            let (ra, rw): (Round, Round) = match path {
                GemmPath::Amx | GemmPath::Bf16 => (bf16, bf16),
                GemmPath::Avx512 | GemmPath::Avx2
                    if m <= panels::HALF_MAX_ROWS && panels::half_enabled() =>
                {
                    (|x| x, bf16)
                }
                _ => (|x| x, |x| x),
            };
            // k = 416: AMX runs k in chunks of 12 blocks of 32; 13 makes two.
            for k in [64, 416] {
                check(path, m, k, ra, rw);
            }
        }
    }
}

#[test]
fn shapes_a_kernel_cannot_take_fall_back_to_portable() {
    // k = 40 is not a multiple of AMX's 32, nor n = 50 of AVX-512's 48 or AVX2's 16.
    for path in GemmPath::all_available() {
        let w = Weights::new(path, vec![1.0; 40 * 50], 40, 50);
        assert_eq!(w.path(), GemmPath::Portable);
        let mut c = vec![0.0; 2 * 50];
        assert!(w.product(&[0.5; 80], 2, &mut c, 1));
        assert!(c.iter().all(|&v| v == 20.0));
        // Too short an input is refused, not read past.
        assert!(!w.product(&[0.5; 79], 2, &mut c, 1));
    }
}

#[test]
fn gemm_env_values_parse() {
    assert_eq!(GemmPath::parse("portable"), Ok(Some(GemmPath::Portable)));
    assert_eq!(GemmPath::parse(" "), Ok(None));
    let err = GemmPath::parse("sse").unwrap_err();
    assert!(
        err.contains("MEMLOOP_GEMM=sse") && err.contains("portable"),
        "{err}"
    );
    for path in [
        GemmPath::Amx,
        GemmPath::Bf16,
        GemmPath::Avx512,
        GemmPath::Avx2,
    ] {
        let parsed = GemmPath::parse(path.name());
        if path.available() {
            assert_eq!(parsed, Ok(Some(path)));
        } else {
            assert!(parsed.unwrap_err().contains("cannot run"));
        }
    }
}

#[test]
fn bf16_rounds_to_nearest_even() {
    assert_eq!(to_bf16(1.0), 0x3f80);
    // 1 + 2^-8 is halfway between two bfloat16 values: to the even one.
    assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
    assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
    assert_eq!(to_bf16(-2.5), 0xc020);
}
