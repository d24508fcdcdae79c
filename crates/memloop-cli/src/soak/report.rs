//! The soak's end: every acknowledged write looked up, the run's figures
//! per minute and per operation, and the pass criteria (docs/soak.md).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::http::Client;
use super::load::{listed_ids, Op, Oracle};
use super::sample::{quantile_ms, Period, Sample};
use super::SoakArgs;

/// p99 may grow to this multiple of the first period's, plus the slack.
const DRIFT_FACTOR: f64 = 2.0;
const DRIFT_SLACK_MS: f64 = 10.0;
/// Open files may grow by this many past warm-up (connections come and go).
const OPEN_FILES_SLACK: usize = 32;
/// Deleted, purged or expired memories looked up by id at the end, at most.
const GONE_CHECKED: usize = 3_000;
/// A TTL counts as passed this long after its latest possible expiry.
const EXPIRY_MARGIN: Duration = Duration::from_secs(1);

/// What the end's look-ups found.
#[derive(Debug, Default, Serialize)]
pub struct Writes {
    pub acknowledged: usize,
    pub purges: usize,
    /// Acknowledged and still expected: each must be listed for its user.
    pub expected: usize,
    pub missing: Vec<String>,
    /// Deleted, purged or expired ones looked up; none may be found.
    pub gone_checked: usize,
    pub found_after_delete: Vec<String>,
    pub lookup_errors: usize,
}

/// Looks up, for every worker, each memory it expects and a sample of
/// those it deleted, purged or let expire.
pub fn verify(client: &Client, oracles: &[Oracle]) -> Writes {
    let mut w = Writes::default();
    let mut lists: HashMap<String, Option<HashSet<String>>> = HashMap::new();
    let mut listed = |user: &str| -> Option<HashSet<String>> {
        lists
            .entry(user.to_string())
            .or_insert_with(|| {
                let a = client.get(&format!("/v1/memories?user_id={user}&limit=1000"));
                a.ok().then(|| listed_ids(&a.body))
            })
            .clone()
    };
    let now = Instant::now();
    let mut gone: Vec<&String> = Vec::new();
    for o in oracles {
        w.acknowledged += o.acknowledged;
        w.purges += o.purges;
        for (user, id) in &o.live {
            w.expected += 1;
            match listed(user) {
                Some(ids) if ids.contains(id) => {}
                Some(_) => w.missing.push(id.clone()),
                None => w.lookup_errors += 1,
            }
        }
        for (user, id, by) in &o.expiring {
            if now >= *by + EXPIRY_MARGIN {
                if listed(user).is_some_and(|ids| ids.contains(id)) {
                    w.found_after_delete.push(id.clone());
                }
                gone.push(id);
            }
        }
        gone.extend(o.gone.iter());
    }
    let step = gone.len().div_ceil(GONE_CHECKED).max(1);
    for id in gone.into_iter().step_by(step) {
        w.gone_checked += 1;
        match client.get(&format!("/v1/memories/{id}")).status {
            404 => {}
            200 => w.found_after_delete.push(id.clone()),
            _ => w.lookup_errors += 1,
        }
    }
    w
}

/// One pass criterion and what was measured for it.
#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

pub enum Verdict {
    Passed,
    Failed(String),
}

#[derive(Debug, Serialize)]
pub struct Report {
    /// Every check passed.
    pub passed: bool,
    pub seconds: u64,
    pub warm_up_secs: u64,
    pub samples: Vec<Sample>,
    pub minutes: Vec<Period>,
    /// Per operation: requests, p50 and p99 in ms.
    pub operations: BTreeMap<&'static str, (usize, f64, f64)>,
    pub writes: Writes,
    pub first_errors: Vec<String>,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(
        a: &SoakArgs,
        samples: Vec<Sample>,
        by_op: BTreeMap<Op, Vec<u32>>,
        writes: Writes,
        first_errors: Vec<String>,
    ) -> Report {
        let minutes = (0..)
            .map(|m| {
                let (lo, hi) = (m as f64 * 60.0, (m + 1) as f64 * 60.0);
                let inside: Vec<&Sample> = samples
                    .iter()
                    .filter(|s| s.t_secs > lo + 0.5 && s.t_secs <= hi + 0.5)
                    .collect();
                Period::of(&inside)
            })
            .take_while(Option::is_some)
            .flatten()
            .collect();
        let operations = by_op
            .into_iter()
            .map(|(op, mut us)| {
                let n = us.len();
                let p50 = quantile_ms(&mut us, 0.5);
                (op.name(), (n, p50, quantile_ms(&mut us, 0.99)))
            })
            .collect();
        let warm_up_secs = a.warm_up_secs();
        let checks = checks(a, warm_up_secs, &samples, &writes);
        Report {
            passed: checks.iter().all(|c| c.passed),
            seconds: a.seconds,
            warm_up_secs,
            samples,
            minutes,
            operations,
            writes,
            first_errors,
            checks,
        }
    }

    pub fn verdict(&self) -> Verdict {
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect();
        if failed.is_empty() {
            Verdict::Passed
        } else {
            Verdict::Failed(failed.join(", "))
        }
    }

    pub fn print(&self) {
        println!("\nper minute:");
        println!(
            "{:>6} {:>9} {:>8} {:>8} {:>7} {:>12} {:>12} {:>6}",
            "minute", "requests", "p50 ms", "p99 ms", "errors", "RSS MB end", "RSS MB max", "fds"
        );
        for (i, m) in self.minutes.iter().enumerate() {
            println!(
                "{:>6} {:>9} {:>8.2} {:>8.2} {:>7} {:>12} {:>12} {:>6}",
                i + 1,
                m.requests,
                m.p50_ms,
                m.p99_ms,
                m.errors,
                opt(m.rss_end_mb),
                opt(m.rss_max_mb),
                m.open_files_max.map_or("-".into(), |n| n.to_string()),
            );
        }
        println!("\nper operation:");
        for (name, (n, p50, p99)) in &self.operations {
            println!("{name:>15} {n:>9} requests  p50 {p50:>7.2} ms  p99 {p99:>8.2} ms");
        }
        let w = &self.writes;
        println!(
            "\nwrites: {} acknowledged, {} users purged; {} expected at the end, {} missing; {} deleted, purged or expired looked up, {} found; {} look-ups failed",
            w.acknowledged,
            w.purges,
            w.expected,
            w.missing.len(),
            w.gone_checked,
            w.found_after_delete.len(),
            w.lookup_errors
        );
        for e in &self.first_errors {
            println!("error: {e}");
        }
        println!();
        for c in &self.checks {
            println!(
                "{}  {}: {}",
                if c.passed { "PASS" } else { "FAIL" },
                c.name,
                c.detail
            );
        }
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.1}"))
}

/// The pass criteria (docs/soak.md).
fn checks(a: &SoakArgs, warm_up: u64, samples: &[Sample], w: &Writes) -> Vec<Check> {
    let mut out = Vec::new();
    let requests: usize = samples.iter().map(|s| s.requests).sum();
    let errors: usize = samples.iter().map(|s| s.errors).sum();
    out.push(Check {
        name: "no error answered",
        passed: errors == 0 && requests > 0,
        detail: format!("{errors} errors in {requests} requests"),
    });
    out.push(Check {
        name: "every acknowledged write found",
        passed: w.missing.is_empty() && w.found_after_delete.is_empty() && w.lookup_errors == 0,
        detail: format!(
            "{} of {} expected missing; {} of {} deleted, purged or expired found; {} look-ups failed",
            w.missing.len(),
            w.expected,
            w.found_after_delete.len(),
            w.gone_checked,
            w.lookup_errors
        ),
    });
    let after: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.t_secs + 0.5 >= warm_up as f64)
        .collect();
    match (a.pid, after.first()) {
        (Some(_), Some(base)) => {
            out.push(rss_check(a, base, &after));
            out.push(open_files_check(base, &after));
        }
        (None, _) => out.push(Check {
            name: "RSS within its bound",
            passed: true,
            detail: "not measured (no --pid)".into(),
        }),
        (Some(_), None) => out.push(Check {
            name: "RSS within its bound",
            passed: false,
            detail: format!("the run ended before its warm-up ({warm_up} s)"),
        }),
    }
    out.push(drift_check(a, warm_up, samples));
    out
}

fn rss_check(a: &SoakArgs, base: &Sample, after: &[&Sample]) -> Check {
    let name = "RSS within its bound";
    let (Some(b), true) = (base.rss_mb, after.iter().all(|s| s.rss_mb.is_some())) else {
        return Check {
            name,
            passed: false,
            detail: "the server's process went away".into(),
        };
    };
    let max = after.iter().filter_map(|s| s.rss_mb).fold(b, f64::max);
    Check {
        name,
        passed: max <= b + a.rss_growth_mb,
        detail: format!(
            "after warm-up max {max:.1} MB <= {b:.1} MB at {:.0} s + {:.0} MB",
            base.t_secs, a.rss_growth_mb
        ),
    }
}

fn open_files_check(base: &Sample, after: &[&Sample]) -> Check {
    let b = base.open_files.unwrap_or(0);
    let max = after.iter().filter_map(|s| s.open_files).max().unwrap_or(b);
    Check {
        name: "open files flat",
        passed: max <= b + OPEN_FILES_SLACK,
        detail: format!("after warm-up max {max} <= {b} + {OPEN_FILES_SLACK}"),
    }
}

/// The first period after warm-up against the last one: half the
/// measured time (so a short run compares its two halves), whole samples,
/// at most 60 s.
fn drift_check(a: &SoakArgs, warm_up: u64, samples: &[Sample]) -> Check {
    let end = samples.last().map_or(0.0, |s| s.t_secs);
    let measured = (end - warm_up as f64).max(0.0);
    let step = a.sample_secs as f64;
    let period = ((measured / 2.0 / step).floor() * step).clamp(step, 60.0);
    let within = |lo: f64, hi: f64| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.t_secs > lo + 0.5 && s.t_secs <= hi + 0.5)
            .collect()
    };
    let first = Period::of(&within(warm_up as f64, warm_up as f64 + period));
    let last = Period::of(&within(end - period, end));
    let name = "p99 not drifting upward";
    match (first, last) {
        (Some(f), Some(l)) if f.until_secs < l.until_secs => {
            let bound = DRIFT_FACTOR * f.p99_ms + DRIFT_SLACK_MS;
            Check {
                name,
                passed: l.p99_ms <= bound,
                detail: format!(
                    "last {period:.0} s p99 {:.2} ms <= {DRIFT_FACTOR} x {:.2} ms (first {period:.0} s after warm-up) + {DRIFT_SLACK_MS} ms",
                    l.p99_ms, f.p99_ms
                ),
            }
        }
        _ => Check {
            name,
            passed: false,
            detail: "too few samples after warm-up to compare two periods".into(),
        },
    }
}

pub fn print_header(a: &SoakArgs) {
    println!(
        "soak: {} for {} s, {} workers x {} users, warm-up {} s, a sample every {} s",
        a.url,
        a.seconds,
        a.workers,
        a.users,
        a.warm_up_secs(),
        a.sample_secs
    );
    println!(
        "{:>6} {:>8} {:>7} {:>8} {:>8} {:>6} {:>8} {:>5} {:>8} {:>9} {:>9} {:>6} {:>8} {:>8} {:>7}",
        "t s",
        "requests",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "RSS MB",
        "fds",
        "db MB",
        "memories",
        "sessions",
        "st MB",
        "evicted",
        "st exp",
        "swept"
    );
}

pub fn print_sample(s: &Sample) {
    let f = &s.figures;
    let n = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.0}"));
    println!(
        "{:>6.0} {:>8} {:>7.1} {:>8.2} {:>8.2} {:>6} {:>8} {:>5} {:>8} {:>9} {:>9} {:>6} {:>8} {:>8} {:>7}",
        s.t_secs,
        s.requests,
        s.requests as f64 / s.window_secs.max(0.001),
        s.p50_ms,
        s.p99_ms,
        s.errors,
        opt(s.rss_mb),
        s.open_files.map_or("-".into(), |n| n.to_string()),
        opt(f.database_mb),
        n(f.memories_current),
        n(f.short_term_sessions),
        opt(f.short_term_mb),
        n(f.short_term_evictions),
        n(f.short_term_expirations),
        n(f.swept_expired),
    );
}
