//! The kernel a model runs on, chosen by timing each candidate on this
//! core at load. Feature flags alone mislead: an AMD EPYC runs AVX512-BF16
//! dot products 1.8 times faster than its f32 FMAs, an Intel Xeon with the
//! same flags runs them slower (two FMA ports against one `vdpbf16ps`
//! port; docs/benchmarks.md), so a fixed order picks the slower kernel on
//! one of them.
//!
//! One dense layer of the model's width (k = hidden, n = 4 × hidden, as a
//! feed-forward input) is laid out for every path the model may use and
//! multiplied at a query's rows and at a batch pass's rows, on one thread.
//! The fixed order's pick ([`GemmPath::best`]) stays unless another path is
//! clearly faster on both together, so that timing noise does not flip the
//! kernel (and with it the vectors' last bits) from one start to the next.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{GemmPath, Weights};

/// Rows of one query: a short sentence, its prefix and [CLS] / [SEP].
const QUERY_ROWS: usize = 16;
/// Rows of a batch's pass (a few hundred tokens; enough for row blocks).
const BATCH_ROWS: usize = 128;
/// Interleaved rounds; each path keeps its fastest.
const ROUNDS: usize = 3;
/// Each measurement repeats its product for at least this long (a batch's
/// product takes about 2–10 ms alone: one repetition).
const MEASURE: Duration = Duration::from_millis(1);
/// A path replaces the fixed order's pick when the geometric mean of its
/// two time ratios to it is at most this (10% faster). Between runs of one
/// machine the ratios moved by a few percent; the gaps that matter are
/// 20–45% (docs/benchmarks.md).
const SWITCH_AT: f64 = 0.9;

/// One path's fastest product at a query's and at a batch's rows.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub path: GemmPath,
    pub query: Duration,
    pub batch: Duration,
}

/// What calibration measured and the path it chose.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub chosen: GemmPath,
    /// The fixed order's pick, which `chosen` replaced only when clearly slower.
    pub incumbent: GemmPath,
    pub timings: Vec<Timing>,
    /// What the measuring took (laying out the layers included).
    pub took: Duration,
}

/// The path for a model of width `hidden` on this machine, where `int8`
/// says whether the int8 path keeps that model within a cosine of 0.999
/// (see [`GemmPath::best`]). Measured once per process and model shape.
pub fn calibrate(int8: bool, hidden: usize) -> Calibration {
    /// Calibrations made in this process, by (int8, hidden).
    type Done = Mutex<Vec<((bool, usize), Calibration)>>;
    static DONE: OnceLock<Done> = OnceLock::new();
    let done = DONE.get_or_init(Default::default);
    let key = (int8, hidden);
    // A poisoned lock only means a measurement panicked elsewhere; the list is still valid.
    let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = done.iter().find(|(k, _)| *k == key) {
        return c.clone();
    }
    let start = Instant::now();
    let incumbent = GemmPath::best(int8);
    let candidates: Vec<GemmPath> = GemmPath::all_available()
        .into_iter()
        .filter(|p| int8 || *p != GemmPath::Int8)
        .collect();
    let timings = measure(&candidates, hidden.max(4), 4 * hidden.max(4));
    let calibration = Calibration {
        chosen: choose(incumbent, &timings),
        incumbent,
        timings,
        took: start.elapsed(),
    };
    done.push((key, calibration.clone()));
    calibration
}

/// `incumbent`, unless a path's geometric-mean time ratio to it is at most
/// [`SWITCH_AT`]; then the fastest such path.
pub fn choose(incumbent: GemmPath, timings: &[Timing]) -> GemmPath {
    let Some(base) = timings.iter().find(|t| t.path == incumbent) else {
        return incumbent;
    };
    let ratio = |t: &Timing| {
        let q = t.query.as_secs_f64() / base.query.as_secs_f64().max(1e-12);
        let b = t.batch.as_secs_f64() / base.batch.as_secs_f64().max(1e-12);
        (q * b).sqrt()
    };
    timings
        .iter()
        .map(|t| (t.path, ratio(t)))
        .filter(|(_, r)| *r <= SWITCH_AT)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(incumbent, |(p, _)| p)
}

/// Times one `k × n` product per path, interleaved over [`ROUNDS`].
fn measure(paths: &[GemmPath], k: usize, n: usize) -> Vec<Timing> {
    let w = pseudo_random(k * n, 0x9e37_79b9);
    let a = pseudo_random(BATCH_ROWS * k, 0x85eb_ca6b);
    let laid: Vec<(GemmPath, Weights)> = paths
        .iter()
        .map(|&p| (p, Weights::new(p, w.clone(), k, n)))
        .collect();
    let mut c = vec![0.0f32; BATCH_ROWS * n];
    for (_, weights) in &laid {
        // Warm: caches, the AMX tile configuration.
        weights.product(&a, BATCH_ROWS, &mut c, 1);
    }
    let mut best = vec![(Duration::MAX, Duration::MAX); laid.len()];
    for _ in 0..ROUNDS {
        for (i, (_, weights)) in laid.iter().enumerate() {
            let query = time_product(weights, &a, QUERY_ROWS, &mut c);
            let batch = time_product(weights, &a, BATCH_ROWS, &mut c);
            best[i] = (best[i].0.min(query), best[i].1.min(batch));
        }
    }
    laid.iter()
        .zip(best)
        .map(|((path, _), (query, batch))| Timing {
            path: *path,
            query,
            batch,
        })
        .collect()
}

/// The mean time of one product of `m` rows, repeated for at least [`MEASURE`].
fn time_product(w: &Weights, a: &[f32], m: usize, c: &mut [f32]) -> Duration {
    let start = Instant::now();
    let mut reps = 0u32;
    while reps == 0 || start.elapsed() < MEASURE {
        w.product(a, m, c, 1);
        reps += 1;
    }
    start.elapsed() / reps
}

/// Values in about ±0.1, as a layer's weights and normalised activations
/// are, from a fixed seed (xorshift): the same work on every run.
fn pseudo_random(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32 - 0.5) * 0.2
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(path: GemmPath, query_us: u64, batch_us: u64) -> Timing {
        Timing {
            path,
            query: Duration::from_micros(query_us),
            batch: Duration::from_micros(batch_us),
        }
    }

    #[test]
    fn the_fixed_order_stays_unless_another_path_is_clearly_faster() {
        let bf16 = timing(GemmPath::Bf16, 100, 1000);
        // 5% faster on both: noise, not a reason to change kernels.
        let close = timing(GemmPath::Avx512, 95, 950);
        assert_eq!(choose(GemmPath::Bf16, &[bf16, close]), GemmPath::Bf16);
        // Faster on batches only by as much as slower on a query: no gain.
        let mixed = timing(GemmPath::Avx512, 130, 700);
        assert_eq!(choose(GemmPath::Bf16, &[bf16, mixed]), GemmPath::Bf16);
    }

    #[test]
    fn a_clearly_faster_path_replaces_it_and_the_fastest_wins() {
        // As measured on an Intel Xeon with MiniLM: f32 FMAs 0.87× the time
        // of bfloat16 on a query and 0.75× on a batch.
        let bf16 = timing(GemmPath::Bf16, 469, 2624);
        let f32 = timing(GemmPath::Avx512, 407, 1960);
        let avx2 = timing(GemmPath::Avx2, 472, 3006);
        assert_eq!(choose(GemmPath::Bf16, &[bf16, f32, avx2]), GemmPath::Avx512);
        let faster = timing(GemmPath::Amx, 300, 500);
        assert_eq!(choose(GemmPath::Bf16, &[bf16, f32, faster]), GemmPath::Amx);
    }

    #[test]
    fn an_unmeasured_incumbent_is_kept() {
        let f32 = timing(GemmPath::Avx512, 1, 1);
        assert_eq!(choose(GemmPath::Bf16, &[f32]), GemmPath::Bf16);
    }

    #[test]
    fn calibration_times_every_path_the_model_may_use_and_picks_one_of_them() {
        for int8 in [false, true] {
            let c = calibrate(int8, 96);
            let measured: Vec<GemmPath> = c.timings.iter().map(|t| t.path).collect();
            let expected: Vec<GemmPath> = GemmPath::all_available()
                .into_iter()
                .filter(|p| int8 || *p != GemmPath::Int8)
                .collect();
            assert_eq!(measured, expected);
            assert!(measured.contains(&c.chosen), "{c:?}");
            assert_eq!(c.incumbent, GemmPath::best(int8));
            for t in &c.timings {
                assert!(t.query > Duration::ZERO && t.batch >= t.query, "{t:?}");
            }
            // Once per process: the same answer without measuring again.
            assert_eq!(calibrate(int8, 96).chosen, c.chosen);
        }
    }
}
