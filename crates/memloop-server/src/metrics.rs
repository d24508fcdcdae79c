//! Prometheus metrics, written by hand: a latency histogram and a request
//! counter per route (the route's template, never the ids in it), counts by
//! status, the store's memory counts, the short-term buffer's sessions,
//! turns and bytes held and the sessions and turns it let go, and what the
//! long-term sweeper did (when it last ran, what it expired).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use memloop::short_term::ShortTermStats;
use memloop::{Stats, SweepStats};

/// Upper bounds (seconds) of the latency buckets.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Default)]
struct RouteStats {
    /// Requests at or under each bucket's bound (not cumulative here).
    buckets: [u64; BUCKETS.len()],
    sum_secs: f64,
    count: u64,
    by_status: BTreeMap<u16, u64>,
}

#[derive(Default)]
pub struct Metrics {
    routes: Mutex<BTreeMap<(String, String), RouteStats>>,
    in_flight: AtomicUsize,
}

/// Counts a request as in flight until dropped.
pub struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    pub fn start(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.in_flight)
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        let secs = took.as_secs_f64();
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        let s = routes
            .entry((method.to_string(), route.to_string()))
            .or_default();
        if let Some(i) = BUCKETS.iter().position(|&b| secs <= b) {
            s.buckets[i] += 1;
        }
        s.sum_secs += secs;
        s.count += 1;
        *s.by_status.entry(status).or_default() += 1;
    }

    /// The text exposition format (version 0.0.4). A part given as None
    /// (unavailable, or no sweeper) is left out.
    pub fn render(
        &self,
        stats: Option<&Stats>,
        short_term: Option<&ShortTermStats>,
        sweeps: Option<&SweepStats>,
    ) -> String {
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        let mut out = String::new();
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str(
            "# HELP memloop_http_request_duration_seconds Time to answer a request, by route.\n",
        );
        out.push_str("# TYPE memloop_http_request_duration_seconds histogram\n");
        for ((method, route), s) in routes.iter() {
            let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
            let mut cumulative = 0;
            for (bound, n) in BUCKETS.iter().zip(s.buckets) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "memloop_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "memloop_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                s.count
            );
            let _ = writeln!(
                out,
                "memloop_http_request_duration_seconds_sum{{{labels}}} {}",
                s.sum_secs
            );
            let _ = writeln!(
                out,
                "memloop_http_request_duration_seconds_count{{{labels}}} {}",
                s.count
            );
        }
        out.push_str(
            "# HELP memloop_http_requests_total Requests answered, by route and status.\n",
        );
        out.push_str("# TYPE memloop_http_requests_total counter\n");
        for ((method, route), s) in routes.iter() {
            for (status, n) in &s.by_status {
                let _ = writeln!(
                    out,
                    "memloop_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                    escape(method),
                    escape(route)
                );
            }
        }
        drop(routes);
        out.push_str("# HELP memloop_http_requests_in_flight Requests being answered now.\n");
        out.push_str("# TYPE memloop_http_requests_in_flight gauge\n");
        let _ = writeln!(out, "memloop_http_requests_in_flight {in_flight}");
        if let Some(st) = stats {
            out.push_str("# HELP memloop_memories Memories in the store (all tenants).\n");
            out.push_str("# TYPE memloop_memories gauge\n");
            let _ = writeln!(out, "memloop_memories{{state=\"current\"}} {}", st.current);
            let _ = writeln!(
                out,
                "memloop_memories{{state=\"superseded\"}} {}",
                st.superseded
            );
            // Counted nowhere as current; the next sweep deletes them.
            let _ = writeln!(out, "memloop_memories{{state=\"expired\"}} {}", st.expired);
            out.push_str("# HELP memloop_memories_by_kind Current memories by kind.\n");
            out.push_str("# TYPE memloop_memories_by_kind gauge\n");
            let kinds: BTreeMap<_, _> = st.by_kind.iter().collect();
            for (kind, n) in kinds {
                let _ = writeln!(
                    out,
                    "memloop_memories_by_kind{{kind=\"{}\"}} {n}",
                    escape(kind)
                );
            }
            out.push_str("# HELP memloop_partitions Partitions (users or agents) in the store.\n");
            out.push_str("# TYPE memloop_partitions gauge\n");
            let _ = writeln!(out, "memloop_partitions {}", st.partitions);
            out.push_str("# HELP memloop_history_entries Entries in the change history.\n");
            out.push_str("# TYPE memloop_history_entries gauge\n");
            let _ = writeln!(out, "memloop_history_entries {}", st.history_entries);
            out.push_str("# HELP memloop_database_bytes Size of the database and its WAL.\n");
            out.push_str("# TYPE memloop_database_bytes gauge\n");
            let _ = writeln!(out, "memloop_database_bytes {}", st.database_bytes);
        }
        if let Some(st) = short_term {
            render_short_term(&mut out, st);
        }
        if let Some(sw) = sweeps {
            render_sweeps(&mut out, sw);
        }
        out
    }
}

/// The long-term sweeper's figures; its last run only once it has run.
fn render_sweeps(out: &mut String, sw: &SweepStats) {
    let last = sw.last_run_at.map(|ms| ms as f64 / 1000.0);
    let figures = [
        (
            "memloop_long_term_sweep_interval_seconds",
            "gauge",
            "Time between long-term sweeps ([forgetting] gc_interval).",
            Some(sw.interval_ms as f64 / 1000.0),
        ),
        (
            "memloop_long_term_sweep_last_run_timestamp_seconds",
            "gauge",
            "When the last long-term sweep finished (Unix seconds).",
            last,
        ),
        (
            "memloop_long_term_sweep_runs_total",
            "counter",
            "Long-term sweeps finished (queued writes replayed, then gc).",
            Some(sw.runs as f64),
        ),
        (
            "memloop_long_term_sweep_failures_total",
            "counter",
            "Long-term sweeps whose replay or gc failed (retried at the next interval).",
            Some(sw.failures as f64),
        ),
        (
            "memloop_long_term_sweep_expired_total",
            "counter",
            "Memories the sweeps deleted because their TTL had passed.",
            Some(sw.expired_deleted as f64),
        ),
        (
            "memloop_long_term_sweep_outbox_events_total",
            "counter",
            "Events applied by queued writes the sweeps replayed.",
            Some(sw.outbox_events_applied as f64),
        ),
    ];
    for (name, kind, help, value) in figures {
        if let Some(v) = value {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {v}");
        }
    }
}

/// The short-term buffer's figures; one the backend cannot know (Redis
/// counts neither its sessions nor its expiries) is left out.
fn render_short_term(out: &mut String, st: &ShortTermStats) {
    let figures = [
        (
            "memloop_short_term_sessions",
            "gauge",
            "Short-term sessions held.",
            st.sessions,
        ),
        (
            "memloop_short_term_turns",
            "gauge",
            "Turns held in short-term sessions.",
            st.turns,
        ),
        (
            "memloop_short_term_bytes",
            "gauge",
            "Bytes the in-process short-term buffer holds (texts and bookkeeping, estimated).",
            st.bytes,
        ),
        (
            "memloop_short_term_evictions_total",
            "counter",
            "Idle short-term sessions dropped to keep within [short_term] max_bytes.",
            st.evictions,
        ),
        (
            "memloop_short_term_expirations_total",
            "counter",
            "Short-term sessions removed idle past [short_term] ttl_secs.",
            st.expirations,
        ),
        (
            "memloop_short_term_trimmed_turns_total",
            "counter",
            "Oldest turns dropped from sessions past [short_term] max_turns_stored.",
            st.trimmed_turns,
        ),
    ];
    for (name, kind, help, value) in figures {
        if let Some(v) = value {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::default();
        m.observe("GET", "/v1/memories", 200, Duration::from_micros(500));
        m.observe("GET", "/v1/memories", 404, Duration::from_millis(30));
        m.observe("GET", "/v1/memories", 200, Duration::from_secs(60));
        let _counted = m.start();
        let text = m.render(None, None, None);
        let line = |needle: &str| {
            text.lines()
                .find(|l| l.starts_with(needle))
                .unwrap_or_else(|| panic!("{needle} missing in\n{text}"))
                .to_string()
        };
        assert!(line("memloop_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/memories\",le=\"0.001\"}").ends_with(" 1"));
        assert!(line("memloop_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/memories\",le=\"0.05\"}").ends_with(" 2"));
        assert!(line("memloop_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/memories\",le=\"+Inf\"}").ends_with(" 3"));
        assert!(line(
            "memloop_http_requests_total{method=\"GET\",route=\"/v1/memories\",status=\"404\"}"
        )
        .ends_with(" 1"));
        assert!(line("memloop_http_requests_in_flight").ends_with(" 1"));
        assert!(!text.contains("memloop_short_term"));
    }

    #[test]
    fn short_term_figures_are_shown_when_known() {
        let st = ShortTermStats {
            sessions: Some(3),
            bytes: Some(4096),
            evictions: Some(2),
            trimmed_turns: Some(0),
            ..ShortTermStats::default()
        };
        let text = Metrics::default().render(None, Some(&st), None);
        for want in [
            "memloop_short_term_sessions 3",
            "memloop_short_term_bytes 4096",
            "memloop_short_term_evictions_total 2",
            "# TYPE memloop_short_term_evictions_total counter",
            "memloop_short_term_trimmed_turns_total 0",
        ] {
            assert!(text.lines().any(|l| l == want), "{want} in\n{text}");
        }
        assert!(!text.contains("memloop_short_term_turns "));
        assert!(!text.contains("memloop_short_term_expirations_total"));
    }

    #[test]
    fn sweep_figures_show_the_last_run_once_there_is_one() {
        let mut sw = SweepStats {
            interval_ms: 3_600_000,
            ..SweepStats::default()
        };
        let text = Metrics::default().render(None, None, Some(&sw));
        assert!(text
            .lines()
            .any(|l| l == "memloop_long_term_sweep_runs_total 0"));
        assert!(text
            .lines()
            .any(|l| l == "memloop_long_term_sweep_interval_seconds 3600"));
        assert!(!text.contains("memloop_long_term_sweep_last_run_timestamp_seconds"));
        sw.runs = 2;
        sw.expired_deleted = 7;
        sw.last_run_at = Some(1_772_323_200_500);
        let text = Metrics::default().render(None, None, Some(&sw));
        for want in [
            "memloop_long_term_sweep_runs_total 2",
            "memloop_long_term_sweep_expired_total 7",
            "# TYPE memloop_long_term_sweep_expired_total counter",
            "memloop_long_term_sweep_last_run_timestamp_seconds 1772323200.5",
        ] {
            assert!(text.lines().any(|l| l == want), "{want} in\n{text}");
        }
    }
}
