use super::*;

/// How a path reads an input matrix (values, rows, columns).
type Round = fn(&[f32], usize, usize) -> Vec<f32>;

fn exact(x: &[f32], _: usize, _: usize) -> Vec<f32> {
    x.to_vec()
}

fn bf16(x: &[f32], _: usize, _: usize) -> Vec<f32> {
    x.iter()
        .map(|&v| f32::from_bits(u32::from(to_bf16(v)) << 16))
        .collect()
}

/// Each row to 8 bits as the int8 path reads activations: [lo, hi] (0
/// inside) onto 0..=255 with a zero point, read back.
fn int8_rows(x: &[f32], _: usize, cols: usize) -> Vec<f32> {
    x.chunks_exact(cols)
        .flat_map(|row| {
            let lo = row.iter().fold(0.0f32, |m, &v| m.min(v));
            let hi = row.iter().fold(0.0f32, |m, &v| m.max(v));
            let scale = (hi - lo) / 255.0;
            let inv = 1.0 / scale;
            let zero = (-lo * inv).round_ties_even().clamp(0.0, 255.0);
            row.iter().map(move |&v| {
                let u = v.mul_add(inv, zero).clamp(0.0, 255.0).round_ties_even();
                (u - zero) * scale
            })
        })
        .collect()
}

/// Each column to int8 with one scale (its largest magnitude at 127), read
/// back: the int8 path's weights.
fn int8_columns(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = x.to_vec();
    for c in 0..cols {
        let s = (0..rows).fold(0.0f32, |m, r| m.max(x[r * cols + c].abs())) / 127.0;
        for r in 0..rows {
            let v = &mut out[r * cols + c];
            *v = if s > 0.0 {
                (*v / s).round_ties_even() * s
            } else {
                0.0
            };
        }
    }
    out
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
    let (ra, rw) = (round_a(&a, m, k), round_w(&w, k, n));
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
                GemmPath::Int8 => (int8_rows, int8_columns),
                GemmPath::Avx512 | GemmPath::Avx2
                    if m <= panels::HALF_MAX_ROWS && panels::half_enabled() =>
                {
                    (exact, bf16)
                }
                _ => (exact, exact),
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
        GemmPath::Int8,
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

#[test]
fn int8_multiplies_outlier_channels_in_f32() {
    // Two channels 40 times the rest, as a transformer's hidden state has:
    // with one scale per row they would leave the others a few levels (an
    // error of about 16% of their share of the product); taken out, the
    // rest keeps its 8 bits.
    if !GemmPath::Int8.available() {
        return;
    }
    let (m, k, n) = (5, 256, 96);
    let outlier = |i: usize| matches!(i % k, 3 | 200);
    let a: Vec<f32> = (0..m * k)
        .map(|i| {
            let v = ((i * 7 % 13) as f32 - 6.0) / 5.0;
            if outlier(i) {
                v * 40.0 + 30.0
            } else {
                v
            }
        })
        .collect();
    // Multiples of 1/127 with 1 in every column: int8 holds them exactly,
    // so what is measured is the activations' rounding.
    let w: Vec<f32> = (0..k * n)
        .map(|i| {
            if i < n {
                1.0
            } else {
                ((i * 37 % 255) as f32 - 127.0) / 127.0
            }
        })
        .collect();
    let view = |data, rows, cols| View {
        data,
        rows,
        cols,
        row_stride: cols,
        col_stride: 1,
    };
    let mut want = vec![0.0f32; m * n];
    assert!(sgemm(
        1.0,
        view(&a, m, k),
        view(&w, k, n),
        0.0,
        &mut want,
        n
    ));
    // The product of the ordinary channels alone: what the error is measured against.
    let rest: Vec<f32> = (0..m * k)
        .map(|i| if outlier(i) { 0.0 } else { a[i] })
        .collect();
    let mut want_rest = vec![0.0f32; m * n];
    assert!(sgemm(
        1.0,
        view(&rest, m, k),
        view(&w, k, n),
        0.0,
        &mut want_rest,
        n
    ));
    let weights = Weights::new(GemmPath::Int8, w, k, n);
    let mut got = vec![0.0f32; m * n];
    assert!(weights.product(&a, m, &mut got, 1));
    let norm = want_rest.iter().map(|x| x * x).sum::<f32>().sqrt();
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w) * (g - w))
        .sum::<f32>()
        .sqrt();
    assert!(err / norm < 0.02, "relative error {}", err / norm);
}

#[test]
fn a_panel_fetches_the_next_of_its_range_and_the_last_itself() {
    // Four panels of 3 values; a thread's range is panels 1..3.
    let data: Vec<u32> = (0..12).collect();
    let range = 1..3;
    assert_eq!(panels::ahead_of(&data, 1, 3, &range), &[6, 7, 8]);
    // The last of the range does not reach into another thread's panels.
    assert_eq!(panels::ahead_of(&data, 2, 3, &range), &[6, 7, 8]);
    // A panel past the data fetches nothing rather than panicking.
    assert!(panels::ahead_of(&data, 4, 3, &(4..5)).is_empty());
}
