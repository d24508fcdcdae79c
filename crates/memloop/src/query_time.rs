//! The time a search query speaks of ("last week", "in May", "three
//! sessions ago"), read from its words against a reference time and turned
//! into the query's time window (`SearchQuery::time`), which filters or
//! boosts by each memory's `valid_from` (docs/retrieval.md).

use chrono::{DateTime, Timelike};
use memloop_core::{Error, Result, Scope};
use memloop_longterm::{SearchQuery, TimeMode, TimeWindow, DEFAULT_TIME_BOOST};
use memloop_rules::extract::query_time::{read_query_time, SessionRef, When};
use serde::Serialize;

use crate::Memory;

/// What a search does with a time its query names.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeReading {
    /// The words read ("in May", "three sessions ago").
    pub phrase: String,
    /// The window's start (inclusive), None when open or not resolved.
    #[serde(with = "memloop_core::time::opt_millis")]
    pub start: Option<i64>,
    /// The window's end (exclusive), None when open or not resolved.
    #[serde(with = "memloop_core::time::opt_millis")]
    pub end: Option<i64>,
    /// "boost" or "filter".
    pub mode: &'static str,
    /// The session the words named, when they named one that exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Why the words gave no window (a session that does not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
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
    /// session", "three sessions ago", "the first time we talked") becomes
    /// the span of that session of the query's user, counted among the
    /// sessions that started before `now`, and filters in either mode. Returns what was read (None: no
    /// time named, or `mode` is off); the query is left as it was when the
    /// words name a session that does not exist.
    pub fn read_time(
        &self,
        query: &mut SearchQuery,
        now: i64,
        mode: QueryTimeMode,
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
            mode: mode.as_str(),
            session: None,
            note: None,
        };
        let mut window_mode = mode.window_mode();
        let (start, end) = match read.when {
            When::Window { start, end } => (start, end),
            When::Session(r) => match self.session_span(&query.scope, r, now)? {
                Some((id, start, end)) => {
                    // A session names its memories exactly (not a time the
                    // words may have misplaced): it filters in either mode.
                    reading.session = Some(id);
                    reading.mode = QueryTimeMode::Filter.as_str();
                    window_mode = TimeMode::Filter;
                    (Some(start), Some(end))
                }
                None => {
                    reading.note = Some("no such session before the reference time".into());
                    return Ok(Some(reading));
                }
            },
        };
        reading.start = start;
        reading.end = end;
        query.time = Some(TimeWindow {
            start,
            end,
            mode: window_mode,
        });
        Ok(Some(reading))
    }

    /// The id and span `[start, end)` of the session `r` names among the
    /// user's sessions that started before `now`.
    fn session_span(
        &self,
        scope: &Scope,
        r: SessionRef,
        now: i64,
    ) -> Result<Option<(String, i64, i64)>> {
        let _ = (scope, r, now);
        // Sessions are not on a time axis yet (issue 14, point 1): a
        // session reference gives no window until they are.
        Ok(None)
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
            mode: "boost",
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
            mode: "filter",
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
