//! The time a search query speaks of ("last week", "in May", "three
//! sessions ago"), read from its words against a reference time and turned
//! into the query's time window (`SearchQuery::time`), which filters or
//! boosts by each memory's `valid_from` (docs/retrieval.md).

use chrono::{DateTime, Timelike};
use memloop_core::filter::{Filter, Op};
use memloop_core::{Error, Result, Scope};
use memloop_longterm::{SearchQuery, SessionInfo, TimeMode, TimeWindow, DEFAULT_TIME_BOOST};
use memloop_rules::extract::question_time::{read_query_time, SessionRef, When};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Memory;

/// What a search does with a time its query names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryTimeMode {
    /// Memories inside the window rank higher (`DEFAULT_TIME_BOOST`);
    /// the others stay candidates. The default: a window read wrongly
    /// ("May" the name) or a fact said later than it happened still lets
    /// the right memory be found.
    #[default]
    Boost,
    /// Only memories inside the window are searched.
    Filter,
    /// The query's words are not read for a time.
    Off,
}

impl QueryTimeMode {
    /// "boost", "filter" or "off".
    pub fn parse(s: &str) -> Result<QueryTimeMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "boost" => Ok(QueryTimeMode::Boost),
            "filter" => Ok(QueryTimeMode::Filter),
            "off" => Ok(QueryTimeMode::Off),
            other => Err(Error::invalid(format!(
                "time mode {other:?} is not one of boost, filter, off"
            ))),
        }
    }

    /// The mode an option or field (`what`: "--time-mode", "time_mode")
    /// gives, the default when absent; a bad value is refused naming it.
    pub fn parse_field(value: Option<&str>, what: &str) -> Result<QueryTimeMode> {
        match value {
            None => Ok(QueryTimeMode::default()),
            Some(v) => QueryTimeMode::parse(v).map_err(|e| match e {
                Error::InvalidInput(m) => Error::invalid(format!("{what}: {m}")),
                other => other,
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QueryTimeMode::Boost => "boost",
            QueryTimeMode::Filter => "filter",
            QueryTimeMode::Off => "off",
        }
    }

    fn window_mode(self) -> TimeMode {
        match self {
            QueryTimeMode::Filter => TimeMode::Filter,
            _ => TimeMode::Boost(DEFAULT_TIME_BOOST),
        }
    }
}

/// How a query's time was read: the words, the window they gave and what
/// it does. Printed by the CLI as `time: 2023-05-01..2023-05-31 from "in May"
/// (boost)`, answered as `time` by REST and MCP searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeReading {
    /// The words read ("in May", "three sessions ago").
    pub phrase: String,
    /// The window's start (inclusive), None when open or not resolved.
    #[serde(default, with = "memloop_core::time::opt_millis")]
    pub start: Option<i64>,
    /// The window's end (exclusive), None when open or not resolved.
    #[serde(default, with = "memloop_core::time::opt_millis")]
    pub end: Option<i64>,
    /// "boost" or "filter".
    pub mode: String,
    /// The session the words named, when they named one that exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Why the words gave no window (a session that does not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl TimeReading {
    /// Whether the reading gave the query a window.
    pub fn has_window(&self) -> bool {
        self.note.is_none()
    }
}

/// A window edge as text: a date when it is midnight, else date and time.
fn edge(ms: i64, end: bool) -> String {
    let Some(t) = DateTime::from_timestamp_millis(if end { ms.saturating_sub(1) } else { ms })
    else {
        return ms.to_string();
    };
    let midnight = DateTime::from_timestamp_millis(ms)
        .is_some_and(|m| m.num_seconds_from_midnight() == 0 && m.timestamp_subsec_millis() == 0);
    if midnight {
        t.date_naive().to_string()
    } else {
        DateTime::from_timestamp_millis(ms).map_or_else(
            || ms.to_string(),
            |m| m.format("%Y-%m-%dT%H:%M").to_string(),
        )
    }
}

impl std::fmt::Display for TimeReading {
    /// `time: 2023-05-01..2023-05-31 from "in May" (boost)`: the end shown
    /// inclusive when it is a whole day.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(note) = &self.note {
            return write!(f, "time: none from {:?} ({note})", self.phrase);
        }
        let start = self.start.map(|s| edge(s, false)).unwrap_or_default();
        let end = self.end.map(|e| edge(e, true)).unwrap_or_default();
        write!(
            f,
            "time: {start}..{end} from {:?} ({})",
            self.phrase, self.mode
        )?;
        if let Some(s) = &self.session {
            write!(f, ", session {s}")?;
        }
        Ok(())
    }
}

/// A reference time given as text: RFC 3339, or a date (`YYYY-MM-DD`),
/// which means the end of that day (what was true, or said, on it).
/// `what` names the option or field in the error.
pub fn parse_reference_time(s: &str, what: &str) -> Result<i64> {
    let day_end = if s.trim().len() == 10 {
        86_400_000 - 1
    } else {
        0
    };
    memloop_core::time::parse_date(s.trim())
        .map(|t| t + day_end)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{what} {s:?} is not a date: use YYYY-MM-DD or RFC 3339 (2024-05-01T10:00:00Z)"
            ))
        })
}

impl Memory {
    /// Reads the time `query`'s words speak of against `now` (when the
    /// question is asked, Unix ms) and sets `query.time` to its window,
    /// filtering or boosting as `mode` says. A session reference ("the last
    /// session", "three sessions ago", "the first time we talked") names one
    /// session of the query's user, counted among the sessions that started
    /// before `now`: the query then keeps to that session's memories (a
    /// filter on `session_id`, in either mode). Returns what was read (None:
    /// no time named, or `mode` is off); the query is left as it was when
    /// the words name a session that does not exist.
    pub fn read_time(
        &self,
        query: &mut SearchQuery,
        now: i64,
        mode: QueryTimeMode,
    ) -> Result<Option<TimeReading>> {
        self.read_time_during(query, now, mode, None)
    }

    /// `read_time` asked from inside session `current` (a loop turn): that
    /// session is still going on, so "the last session" is the one before
    /// it, and it is not counted among the past ones.
    pub fn read_time_during(
        &self,
        query: &mut SearchQuery,
        now: i64,
        mode: QueryTimeMode,
        current: Option<&str>,
    ) -> Result<Option<TimeReading>> {
        if mode == QueryTimeMode::Off {
            return Ok(None);
        }
        let Some(read) = read_query_time(&query.text, now) else {
            return Ok(None);
        };
        let mut reading = TimeReading {
            phrase: read.phrase,
            start: None,
            end: None,
            mode: mode.as_str().to_string(),
            session: None,
            note: None,
        };
        match read.when {
            When::Window { start, end } => {
                reading.start = start;
                reading.end = end;
                query.time = Some(TimeWindow {
                    start,
                    end,
                    mode: mode.window_mode(),
                });
            }
            When::Session(r) => match self.session_named(&query.scope, r, now, current)? {
                Some(s) => {
                    // A session names its memories exactly, by the id they
                    // were written with, not by a time span: a fact about an
                    // earlier date still belongs to the session it was said in.
                    reading.mode = QueryTimeMode::Filter.as_str().to_string();
                    reading.start = Some(s.started_at);
                    reading.end = Some(s.ended_at.saturating_add(1));
                    let same_session = Filter::Cond {
                        field: "session_id".into(),
                        op: Op::Eq,
                        value: Value::String(s.id.clone()),
                    };
                    query.filter = Some(match query.filter.take() {
                        Some(f) => Filter::And(vec![f, same_session]),
                        None => same_session,
                    });
                    reading.session = Some(s.id);
                }
                None => {
                    reading.note = Some("no such session before the reference time".into());
                }
            },
        }
        Ok(Some(reading))
    }

    /// The session `r` names among the sessions of `scope`'s user (whatever
    /// session `scope` narrows to) that started before `now`, leaving out
    /// `current`.
    fn session_named(
        &self,
        scope: &Scope,
        r: SessionRef,
        now: i64,
        current: Option<&str>,
    ) -> Result<Option<SessionInfo>> {
        let mut whole = scope.clone();
        whole.session_id = None;
        // Newest first, as `sessions` answers.
        let mut past: Vec<SessionInfo> = self
            .sessions(&whole)?
            .into_iter()
            .filter(|s| s.started_at < now && Some(s.id.as_str()) != current)
            .collect();
        let n = match r {
            SessionRef::Recent(n) => n as usize,
            SessionRef::Nth(n) => past.len().checked_sub(n as usize).map_or(0, |i| i + 1),
        };
        if n == 0 || n > past.len() {
            return Ok(None);
        }
        Ok(Some(past.swap_remove(n - 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_print_as_the_trace_shows_them() {
        let day = |s: &str| memloop_core::time::parse_date(s).unwrap();
        let r = TimeReading {
            phrase: "in May".into(),
            start: Some(day("2023-05-01")),
            end: Some(day("2023-06-01")),
            mode: "boost".into(),
            session: None,
            note: None,
        };
        assert_eq!(
            r.to_string(),
            "time: 2023-05-01..2023-05-31 from \"in May\" (boost)"
        );
        let r = TimeReading {
            phrase: "since May 2023".into(),
            end: None,
            mode: "filter".into(),
            ..r
        };
        assert_eq!(
            r.to_string(),
            "time: 2023-05-01.. from \"since May 2023\" (filter)"
        );
        let r = TimeReading {
            phrase: "the last session".into(),
            start: Some(day("2023-05-08T13:56:00Z")),
            end: Some(day("2023-05-08T14:30:00Z")),
            session: Some("s5".into()),
            ..r
        };
        assert_eq!(
            r.to_string(),
            "time: 2023-05-08T13:56..2023-05-08T14:30 from \"the last session\" (filter), session s5"
        );
    }

    #[test]
    fn modes_and_reference_times_parse_or_say_what_to_write() {
        assert_eq!(
            QueryTimeMode::parse("Filter").unwrap(),
            QueryTimeMode::Filter
        );
        assert_eq!(QueryTimeMode::parse("off").unwrap(), QueryTimeMode::Off);
        let e = QueryTimeMode::parse("strict").unwrap_err().to_string();
        assert!(e.contains("boost, filter, off"), "{e}");
        assert_eq!(
            parse_reference_time("2023-05-08", "--now").unwrap(),
            memloop_core::time::parse_date("2023-05-09").unwrap() - 1
        );
        let e = parse_reference_time("soon", "--now")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--now") && e.contains("YYYY-MM-DD"), "{e}");
    }
}
