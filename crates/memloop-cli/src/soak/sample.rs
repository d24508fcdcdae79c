//! What the soak measures every window: the server's resident memory and
//! open files (from /proc), the latencies of the requests answered in the
//! window, and a few of the server's own figures from `/metrics`.

use serde::Serialize;

/// One window of the run (10 s, the last one possibly shorter).
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the load started, at the window's end.
    pub t_secs: f64,
    /// How long the window lasted.
    pub window_secs: f64,
    pub requests: usize,
    pub errors: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The server's resident set (VmRSS), MB; None without a pid.
    pub rss_mb: Option<f64>,
    pub open_files: Option<usize>,
    pub figures: Figures,
    /// The window's latencies, for the per-minute figures.
    #[serde(skip)]
    pub latencies_us: Vec<u32>,
}

/// The server's own figures (`/metrics`), where it answers them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub memories_current: Option<f64>,
    /// The database and its WAL.
    pub database_mb: Option<f64>,
    pub short_term_sessions: Option<f64>,
    pub short_term_mb: Option<f64>,
    pub short_term_evictions: Option<f64>,
    pub short_term_expirations: Option<f64>,
    pub sweeps: Option<f64>,
    pub swept_expired: Option<f64>,
}

impl Figures {
    pub fn parse(metrics: &str) -> Figures {
        let value = |name: &str| {
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        };
        Figures {
            memories_current: value("memloop_memories{state=\"current\"}"),
            database_mb: value("memloop_database_bytes").map(|b: f64| b / 1e6),
            short_term_sessions: value("memloop_short_term_sessions"),
            short_term_mb: value("memloop_short_term_bytes").map(|b: f64| b / 1e6),
            short_term_evictions: value("memloop_short_term_evictions_total"),
            short_term_expirations: value("memloop_short_term_expirations_total"),
            sweeps: value("memloop_long_term_sweep_runs_total"),
            swept_expired: value("memloop_long_term_sweep_expired_total"),
        }
    }
}

/// The process's resident set in MB, from /proc/PID/status.
pub fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0 / 1e6)
}

/// The process's open file descriptors (sockets included).
pub fn open_files(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The `q` quantile (0..1) of `us`, in milliseconds, nearest rank; 0 when empty.
pub fn quantile_ms(us: &mut [u32], q: f64) -> f64 {
    if us.is_empty() {
        return 0.0;
    }
    us.sort_unstable();
    let rank = ((q * us.len() as f64).ceil() as usize).clamp(1, us.len());
    f64::from(us[rank - 1]) / 1000.0
}

/// The samples of one period (a minute, or the comparison periods),
/// taken together.
#[derive(Debug, Clone, Serialize)]
pub struct Period {
    /// The period's end, seconds since the start.
    pub until_secs: f64,
    pub requests: usize,
    pub errors: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// At its last sample, and the highest of its samples.
    pub rss_end_mb: Option<f64>,
    pub rss_max_mb: Option<f64>,
    pub open_files_max: Option<usize>,
}

impl Period {
    pub fn of(samples: &[&Sample]) -> Option<Period> {
        let last = samples.last()?;
        let mut us: Vec<u32> = samples
            .iter()
            .flat_map(|s| s.latencies_us.iter().copied())
            .collect();
        let max =
            |f: fn(&Sample) -> Option<f64>| samples.iter().filter_map(|s| f(s)).reduce(f64::max);
        Some(Period {
            until_secs: last.t_secs,
            requests: samples.iter().map(|s| s.requests).sum(),
            errors: samples.iter().map(|s| s.errors).sum(),
            p50_ms: quantile_ms(&mut us, 0.50),
            p99_ms: quantile_ms(&mut us, 0.99),
            rss_end_mb: last.rss_mb,
            rss_max_mb: max(|s| s.rss_mb),
            open_files_max: samples.iter().filter_map(|s| s.open_files).max(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut us: Vec<u32> = (1..=100).map(|i| i * 1000).collect();
        assert_eq!(quantile_ms(&mut us, 0.5), 50.0);
        assert_eq!(quantile_ms(&mut us, 0.99), 99.0);
        assert_eq!(quantile_ms(&mut [], 0.99), 0.0);
        assert_eq!(quantile_ms(&mut [7000], 0.99), 7.0);
    }

    #[test]
    fn figures_are_read_from_metrics_text() {
        let text = "# HELP x\nmemloop_memories{state=\"current\"} 12\n\
                    memloop_short_term_bytes 2500000\nmemloop_long_term_sweep_expired_total 3\n";
        let f = Figures::parse(text);
        assert_eq!(f.memories_current, Some(12.0));
        assert_eq!(f.short_term_mb, Some(2.5));
        assert_eq!(f.swept_expired, Some(3.0));
        assert_eq!(f.short_term_sessions, None);
    }

    #[test]
    fn own_process_is_measured() {
        let pid = std::process::id();
        assert!(rss_mb(pid).is_some_and(|mb| mb > 0.0));
        assert!(open_files(pid).is_some_and(|n| n > 0));
    }
}
