//! `memloop soak`: a mixed load (adds, searches, the loop's context and
//! recorded turns, session appends and reads, gets, lists, deletes,
//! purges) across many users and sessions against a `memloop serve` on
//! loopback, for a bounded time and count. Every window it samples the
//! server's RSS and open files and the latencies of the requests answered;
//! at the end it checks that every acknowledged write is found and nothing
//! deleted is, and judges the run (docs/soak.md). `scripts/soak.sh` starts
//! the server and runs this.

mod http;
mod load;
mod report;
mod sample;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;

use crate::output::{Output, Reported};
use http::Client;
use load::{Op, Shared, Window, Worker};
use report::{Report, Verdict};
use sample::{Figures, Sample};

#[derive(Args)]
pub struct SoakArgs {
    /// The server's base URL; loopback only.
    #[arg(long, default_value = "http://127.0.0.1:8420")]
    pub url: String,
    /// How long to drive the load (10 minutes for the figures, 1 in CI).
    #[arg(long, default_value_t = 600)]
    pub seconds: u64,
    /// The server's process id: its RSS and open files are read from /proc.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Concurrent clients, each with its own connection and users.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Users each client holds at a time (a purged one comes back renamed).
    #[arg(long, default_value_t = 50)]
    pub users: usize,
    /// Stop after this many requests in all, even before --seconds.
    #[arg(long, default_value_t = 2_000_000)]
    pub max_requests: u64,
    /// Seed of the load's choices (users, operations, words).
    #[arg(long, default_value_t = 58)]
    pub seed: u64,
    /// RSS may grow this much (MB) past its level at the end of warm-up.
    #[arg(long, default_value_t = 96.0)]
    pub rss_growth_mb: f64,
    /// Seconds per sample.
    #[arg(long, default_value_t = 10)]
    pub sample_secs: u64,
}

impl SoakArgs {
    fn check(&self) -> anyhow::Result<()> {
        http::check_loopback(&self.url)?;
        let bad = |what: String| Err(anyhow::Error::new(memloop::Error::invalid(what)));
        // Below 40 s there are not two periods after the warm-up to compare.
        if !(40..=86_400).contains(&self.seconds) {
            return bad(format!(
                "--seconds {} is out of range: give 40 to 86400",
                self.seconds
            ));
        }
        if !(1..=64).contains(&self.workers) || !(1..=10_000).contains(&self.users) {
            return bad("--workers takes 1 to 64, --users 1 to 10000".into());
        }
        if !(1..=60).contains(&self.sample_secs) {
            return bad("--sample-secs takes 1 to 60".into());
        }
        Ok(())
    }

    /// The warm-up, while the store fills from empty to its steady size:
    /// a third of the run, 20 to 60 s, whole samples.
    fn warm_up_secs(&self) -> u64 {
        let w = (self.seconds / 3).clamp(20, 60);
        w.div_ceil(self.sample_secs) * self.sample_secs
    }
}

pub fn run(out: &Output, a: SoakArgs) -> anyhow::Result<()> {
    a.check()?;
    let probe = Client::new(&a.url);
    let ready = probe.get("/readyz");
    if !ready.ok() {
        anyhow::bail!(
            "the server at {} is not ready ({}): start it with `memloop serve` and wait for GET /readyz",
            a.url,
            ready.describe()
        );
    }
    let shared = Shared {
        window: Mutex::new(Window::default()),
        stop: AtomicBool::new(false),
        requests: AtomicU64::new(0),
        max_requests: a.max_requests,
        errors: Mutex::new(Vec::new()),
    };
    let mut by_op: BTreeMap<Op, Vec<u32>> = BTreeMap::new();
    if !out.json {
        report::print_header(&a);
    }
    let start = Instant::now();
    let (mut samples, oracles) = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..a.workers)
            .map(|w| {
                let worker = Worker::new(w, &a.url, a.users, a.seed);
                let shared = &shared;
                sc.spawn(move || worker.run(shared))
            })
            .collect();
        let samples = drive(&a, &shared, &probe, start, out, &mut by_op);
        shared.stop.store(true, Ordering::Relaxed);
        let oracles: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        (samples, oracles)
    });
    let oracles = oracles
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| anyhow::anyhow!("a load worker panicked"))?;
    // Requests that were in flight at the end count with the last window.
    let rest = take(&shared);
    if let Some(last) = samples.last_mut() {
        last.requests += rest.latencies_us.len();
        last.errors += rest.errors;
    }
    for (op, us) in rest.by_op {
        by_op.entry(op).or_default().push(us);
    }
    let writes = report::verify(&probe, &oracles);
    let errors = shared
        .errors
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let r = Report::new(&a, samples, by_op, writes, errors);
    if out.json {
        out.json_value(&r)?;
    } else {
        r.print();
    }
    match r.verdict() {
        Verdict::Passed => Ok(()),
        Verdict::Failed(why) => Err(Reported(format!("the soak failed: {why}")).into()),
    }
}

/// Samples every `sample_secs` until the time is up, the request budget is
/// spent or the server is gone.
fn drive(
    a: &SoakArgs,
    shared: &Shared,
    probe: &Client,
    start: Instant,
    out: &Output,
    by_op: &mut BTreeMap<Op, Vec<u32>>,
) -> Vec<Sample> {
    let end = start + Duration::from_secs(a.seconds);
    let every = Duration::from_secs(a.sample_secs);
    let mut next = start + every;
    let mut samples = Vec::new();
    loop {
        let until = next.min(end);
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        let w = take(shared);
        for (op, us) in &w.by_op {
            by_op.entry(*op).or_default().push(*us);
        }
        let mut latencies = w.latencies_us;
        let t_secs = start.elapsed().as_secs_f64();
        let s = Sample {
            t_secs,
            window_secs: t_secs - samples.last().map_or(0.0, |p: &Sample| p.t_secs),
            requests: latencies.len(),
            errors: w.errors,
            p50_ms: sample::quantile_ms(&mut latencies, 0.50),
            p99_ms: sample::quantile_ms(&mut latencies, 0.99),
            rss_mb: a.pid.and_then(sample::rss_mb),
            open_files: a.pid.and_then(sample::open_files),
            figures: probe
                .text("/metrics")
                .map(|m| Figures::parse(&m))
                .unwrap_or_default(),
            latencies_us: latencies,
        };
        if !out.json {
            report::print_sample(&s);
        }
        let gone = a.pid.is_some() && s.rss_mb.is_none();
        samples.push(s);
        let spent = shared.requests.load(Ordering::Relaxed) >= a.max_requests;
        if gone || until >= end || spent {
            return samples;
        }
        next += every;
    }
}

fn take(shared: &Shared) -> Window {
    std::mem::take(&mut *shared.window.lock().unwrap_or_else(|p| p.into_inner()))
}
