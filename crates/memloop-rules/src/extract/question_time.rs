//! Time expressions in a search query ("what did I say last week", "in
//! May", "between March and June", "three sessions ago"), read against a
//! reference time (the moment the question is asked) into the window of
//! world time the answer lies in, or into a reference to a past session
//! that the caller turns into its window (the store knows the sessions).
//!
//! The calendar words, numbers and date forms are `time.rs`'s, the ones
//! writes resolve with; this adds what a question says and a statement
//! does not: ranges ("between … and …", "from … to …", "since …",
//! "before …", "after …"), a bare day of the month ("on the 3rd"), and
//! sessions ("the last session", "three sessions ago", "the first time we
//! talked"). Each expression becomes a half-open window `[start, end)`:
//! a day, a week (Monday to Monday), a month, a season, a year, as
//! precise as the words are. Calendar arithmetic is in UTC, as on writes.

use chrono::{DateTime, Datelike, NaiveDate};

use super::clauses::tokenize;
use super::lexicon::{is_in, small_number, small_ordinal, FUTURE_MARKERS};
use super::time::{
    day_number, match_at, midnight, month_near, month_number, offset, shift_days, shift_months,
    unit, year_number, Granularity, ResolvedTime, Unit,
};

/// The time a query speaks of, and the words that said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTime {
    /// The words as written ("in May", "three sessions ago").
    pub phrase: String,
    pub when: When,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// World time from `start` (inclusive) to `end` (exclusive), in Unix
    /// milliseconds; None leaves that side open ("since May", "before 2020").
    Window {
        start: Option<i64>,
        end: Option<i64>,
    },
    /// A past session of the user's.
    Session(SessionRef),
}

/// Which past session a query names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionRef {
    /// The nth most recent session that started before the reference
    /// time: 1 is "the last session", 3 "three sessions ago".
    Recent(u32),
    /// The nth session counted from the first: 1 is "the first time we talked".
    Nth(u32),
}

/// Nouns that name a session of talking with the assistant. ("talk" and
/// "meeting" are left out: "my last talk" is usually a world event.)
const SESSION_NOUNS: &[&str] = &[
    "session",
    "sessions",
    "conversation",
    "conversations",
    "chat",
    "chats",
];

/// Verbs that, after "we" or "you", make "the first time …" or "the last
/// time …" a session: "the first time we talked".
const TALK_VERBS: &[&str] = &[
    "talk",
    "talked",
    "spoke",
    "speak",
    "spoken",
    "chat",
    "chatted",
    "met",
    "meet",
    "discussed",
];

const PRONOUNS: &[&str] = &["i", "we", "you", "he", "she", "they", "my", "our"];

/// Words before an expression that belong to it: "in the last session",
/// "during our first conversation".
const DETERMINERS: &[&str] = &["the", "our", "my", "that"];
const PREPOSITIONS: &[&str] = &[
    "in", "on", "during", "from", "at", "since", "of", "over", "within",
];

/// The first time expression in `query`, read against `now_millis` (when
/// the question is asked). Sessions are looked for first ("the last
/// session" is not the calendar's "last …"), then ranges and single
/// periods, left to right. None if the query names no time.
pub fn read_query_time(query: &str, now_millis: i64) -> Option<QueryTime> {
    let today = DateTime::from_timestamp_millis(now_millis)?.date_naive();
    let tokens = tokenize(query);
    let words: Vec<&str> = tokens.iter().map(|t| t.lower.as_str()).collect();
    let phrase = |start: usize, end: usize| {
        tokens
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|t| t.orig.as_str())
            .filter(|w| *w != ",")
            .collect::<Vec<_>>()
            .join(" ")
    };
    for i in 0..words.len() {
        if let Some((len, r)) = session_at(&words, i) {
            let start = extend_back(&words, i);
            return Some(QueryTime {
                phrase: phrase(start, i + len),
                when: When::Session(r),
            });
        }
    }
    let future = words.iter().any(|w| is_in(FUTURE_MARKERS, w));
    for i in 0..words.len() {
        if let Some((len, start, end)) = range_at(&words, i, today, future) {
            return Some(QueryTime {
                phrase: phrase(i, i + len),
                when: When::Window { start, end },
            });
        }
        // A closed window read from word `i` on, with the words before it
        // that belong to it ("in the", "over the").
        let window = |len: usize, start: i64, end: i64| QueryTime {
            phrase: phrase(extend_back(&words, i), i + len),
            when: When::Window {
                start: Some(start),
                end: Some(end),
            },
        };
        let span = rolling_at(&words, i, today).or_else(|| part_at(&words, i, today, future));
        if let Some((len, start, end)) = span {
            return Some(window(len, start, end));
        }
        let found = before_last_at(&words, i, today)
            .or_else(|| anchored_at(&words, i, today, future))
            .or_else(|| time_at(&words, i, today, future, false))
            .map(|(len, t)| in_named_year(&words, i, len, t, today));
        if let Some((len, t)) = found {
            return Some(window(len, t.millis, t.end_millis()?));
        }
    }
    None
}

/// The start of the phrase ending at word `i`: back over a determiner
/// ("the", "our") and then a preposition ("in", "during").
fn extend_back(words: &[&str], i: usize) -> usize {
    let before = |k: usize| k.checked_sub(1).and_then(|p| words.get(p)).copied();
    let mut start = i;
    if before(start).is_some_and(|w| is_in(DETERMINERS, w)) {
        start -= 1;
    }
    if before(start).is_some_and(|w| is_in(PREPOSITIONS, w)) {
        start -= 1;
    }
    start
}

/// A session reference starting at word `i`: its length and the session.
fn session_at(words: &[&str], i: usize) -> Option<(usize, SessionRef)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let noun = |k: usize| is_in(SESSION_NOUNS, w(k));
    // "we talked", "you said": a pronoun and a verb of talking.
    let talked = |k: usize| is_in(&["we", "you", "i"], w(k)) && is_in(TALK_VERBS, w(k + 1));
    // "three sessions ago"
    if let Some(n) = small_number(w(0)).filter(|&n| n > 0) {
        if noun(1) && w(2) == "ago" {
            return Some((3, SessionRef::Recent(n)));
        }
    }
    if let Some(n) = small_ordinal(w(0)) {
        // "the second to last session", "the second-to-last conversation"
        if w(1) == "to" && w(2) == "last" && noun(3) {
            return Some((4, SessionRef::Recent(n)));
        }
        if noun(1) {
            return Some((2, SessionRef::Nth(n)));
        }
        if w(1) == "time" && talked(2) {
            return Some((4, SessionRef::Nth(n)));
        }
    }
    match (w(0), w(1)) {
        ("last" | "previous" | "latest", _) if noun(1) => {
            return Some((2, SessionRef::Recent(1)));
        }
        ("most", "recent") if noun(2) => return Some((3, SessionRef::Recent(1))),
        ("last" | "previous", "time") => {
            // "the last time we talked", or "last time" on its own; not
            // "the last time I went to Rome".
            if talked(2) {
                return Some((4, SessionRef::Recent(1)));
            }
            if !is_in(PRONOUNS, w(2)) {
                return Some((2, SessionRef::Recent(1)));
            }
        }
        _ => {}
    }
    // "the session before last"
    if noun(0) && w(1) == "before" && w(2) == "last" {
        return Some((3, SessionRef::Recent(2)));
    }
    None
}

/// A range starting at word `i`: its length and its open or closed ends.
#[allow(clippy::type_complexity)]
fn range_at(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    future: bool,
) -> Option<(usize, Option<i64>, Option<i64>)> {
    let w = |k: usize| words.get(k).copied().unwrap_or("");
    match w(i) {
        "between" | "from" => {
            let (len1, t1) = time_at(words, i + 1, today, future, true)?;
            let joint = i + 1 + len1;
            let ok = if w(i) == "between" {
                w(joint) == "and"
            } else {
                is_in(&["to", "until", "till", "through"], w(joint))
            };
            if !ok {
                return None;
            }
            let (len2, t2) = time_at(words, joint + 1, today, future, true)?;
            let (start, end) = (t1.millis, t2.end_millis()?);
            // "between June and March": the words' order, whichever comes first.
            let (start, end) = if start < end {
                (start, end)
            } else {
                (t2.millis, t1.end_millis()?)
            };
            Some((joint + 1 + len2 - i, Some(start), Some(end)))
        }
        "since" => {
            let (len, t) = time_at(words, i + 1, today, future, true)?;
            Some((len + 1, Some(t.millis), None))
        }
        "after" => {
            let (len, t) = time_at(words, i + 1, today, future, true)?;
            Some((len + 1, Some(t.end_millis()?), None))
        }
        "before" => {
            let (len, t) = time_at(words, i + 1, today, future, true)?;
            Some((len + 1, None, Some(t.millis)))
        }
        "until" | "till" => {
            let (len, t) = time_at(words, i + 1, today, future, true)?;
            Some((len + 1, None, Some(t.end_millis()?)))
        }
        _ => None,
    }
}

/// A period counted from a date the query names instead of from today:
/// "two weeks before August 11, 2023", "the week before May 3",
/// "the day after 2023-05-07", "last weekend before April 10, 2023".
fn anchored_at(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    future: bool,
) -> Option<(usize, ResolvedTime)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let sign = |word: &str| match word {
        "before" => Some(-1),
        "after" => Some(1),
        _ => None,
    };
    let anchor = |at: usize| {
        let (len, t) = time_at(words, at, today, future, true)?;
        Some((len, t.date()?))
    };
    // "two weeks before X", "the week before X"
    let counted = match (w(0), small_number(w(0))) {
        ("the", _) => Some((1, 1)),
        (_, Some(n)) if n > 0 => Some((1, n)),
        _ => None,
    };
    if let Some((k, n)) = counted {
        if let (Some(u), Some(s)) = (unit(w(k)), sign(w(k + 1))) {
            let (len, date) = anchor(i + k + 2)?;
            let t = offset(date, s * i64::from(n), u)?;
            return Some((k + 2 + len, t));
        }
    }
    // "last weekend before X": the relative words read from X.
    let (len, _, relative) = match_at(words, i, today, future)?;
    if !relative || w(len) != "before" {
        return None;
    }
    let (alen, date) = anchor(i + len + 1)?;
    let (_, t, _) = match_at(words, i, date, future)?;
    Some((len + 1 + alen, t))
}

/// One period starting at word `i`: the calendar expressions of writes
/// (`time.rs`), and "the 3rd" without a month (the most recent 3rd).
/// `bare`: a month or year name on its own is a time here (inside a
/// range: "between March and June", "before 2020"); elsewhere it needs a
/// preposition, as on writes ("may" is a verb, "May" a name).
fn time_at(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    future: bool,
    bare: bool,
) -> Option<(usize, ResolvedTime)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    if let Some(found) = match_at(words, i, today, future) {
        return Some((found.0, found.1));
    }
    if bare {
        if let Some(m) = month_number(w(0)) {
            return Some((1, month_near(today, m, future, false)?));
        }
        if let Some(y) = year_number(w(0)) {
            let d = NaiveDate::from_ymd_opt(y, 1, 1)?;
            return Some((1, ResolvedTime::at(d, Granularity::Year)?));
        }
    }
    if w(0) == "the" && w(1).ends_with(|c: char| c.is_ascii_alphabetic()) {
        if let Some(dom) = day_number(w(1)) {
            if w(2) != "of" && month_number(w(2)).is_none() {
                return Some((2, day_of_month_near(today, dom, future)?));
            }
        }
    }
    None
}

/// A span reaching back from today to now: "the past three weeks", "in
/// the last two months", "over the past month", "the last few days".
/// "last" needs a count ("last week" is the calendar's week before this
/// one); "past" alone is one unit. Returns the words read and the window.
fn rolling_at(words: &[&str], i: usize, today: NaiveDate) -> Option<(usize, i64, i64)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    if !is_in(&["past", "last"], w(0)) {
        return None;
    }
    let mut k = 1;
    let n = match small_number(w(k)).filter(|_| !is_in(&["a", "an"], w(k))) {
        Some(n) => {
            k += 1;
            if w(k) == "of" {
                k += 1; // "the last couple of weeks"
            }
            n
        }
        None if w(0) == "past" => 1,
        None => return None,
    };
    let u = unit(w(k)).filter(|_| n > 0)?;
    let n = i64::from(n);
    let start = match u {
        Unit::Day => shift_days(today, -n)?,
        Unit::Week => shift_days(today, n.checked_mul(-7)?)?,
        Unit::Month => shift_months(today, -n)?,
        Unit::Year => shift_months(today, n.checked_mul(-12)?)?,
    };
    Some((k + 1, midnight(start)?, midnight(shift_days(today, 1)?)?))
}

/// Part of a period: "early May", "mid-June", "late 2022", "the
/// beginning of March", "the end of last year" (its first, middle or last
/// third), "the second week of May", "the last week of June" (seven of its
/// days). Returns the words read and the window.
fn part_at(words: &[&str], i: usize, today: NaiveDate, future: bool) -> Option<(usize, i64, i64)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    enum Part {
        Third(i64),
        Week(Option<i64>),
    }
    // "mid-June" is one token: read its second half as the next word.
    if let Some(rest) = w(0).strip_prefix("mid-").filter(|r| !r.is_empty()) {
        let tail: Vec<&str> = std::iter::once(rest)
            .chain(words.iter().skip(i + 1).copied())
            .collect();
        let (len, t) = time_at(&tail, 0, today, future, true)?;
        let (start, end) = part_of(&t, Part::Third(1))?;
        return Some((len, start, end));
    }
    let (part, skip) = match (w(0), w(1), w(2), w(3)) {
        ("early", ..) => (Part::Third(0), 1),
        ("mid" | "late", ..) => (Part::Third(if w(0) == "mid" { 1 } else { 2 }), 1),
        ("the", "beginning" | "start", "of", _) => (Part::Third(0), 3),
        ("the", "middle", "of", _) => (Part::Third(1), 3),
        ("the", "end", "of", _) => (Part::Third(2), 3),
        ("the", "last", "week", "of") => (Part::Week(None), 4),
        ("the", nth, "week", "of") => (Part::Week(Some(i64::from(small_ordinal(nth)?))), 4),
        _ => return None,
    };
    let (len, t) = time_at(words, i + skip, today, future, true)?;
    let (start, end) = part_of(&t, part)?;
    return Some((skip + len, start, end));

    /// The window of `part` within the period `t` (a week or longer).
    fn part_of(t: &ResolvedTime, part: Part) -> Option<(i64, i64)> {
        if matches!(t.granularity, Granularity::Day | Granularity::Weekend) {
            return None;
        }
        const DAY: i64 = 86_400_000;
        let (start, end) = (t.millis, t.end_millis()?);
        let days = (end - start) / DAY;
        let (from, to) = match part {
            Part::Third(k) => ((days * k + 1) / 3, (days * (k + 1) + 1) / 3),
            Part::Week(None) => (days - 7, days),
            Part::Week(Some(n)) => (7 * (n - 1), (7 * n).min(days)),
        };
        (from >= 0 && from < to).then_some((start + from * DAY, start + to * DAY))
    }
}

/// "The week before last", "the month before last", "the weekend before
/// last": the period "last …" names, read from the start of last's.
fn before_last_at(words: &[&str], i: usize, today: NaiveDate) -> Option<(usize, ResolvedTime)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    if w(0) != "the" || w(2) != "before" || w(3) != "last" {
        return None;
    }
    let last = ["last", w(1)];
    let (2, previous, _) = match_at(&last, 0, today, false)? else {
        return None;
    };
    let (_, t, _) = match_at(&last, 0, previous.date()?, false)?;
    Some((4, t))
}

/// A period followed by the year it is in: "in June last year", "May of
/// this year", "on March 3 next year". The period moves into that year
/// (its month and day kept); anything else comes back as it was.
fn in_named_year(
    words: &[&str],
    i: usize,
    len: usize,
    t: ResolvedTime,
    today: NaiveDate,
) -> (usize, ResolvedTime) {
    let w = |k: usize| words.get(k).copied().unwrap_or("");
    let mut k = i + len;
    if w(k) == "of" {
        k += 1;
    }
    let shift = match (w(k), w(k + 1)) {
        ("last", "year") => -1,
        ("this", "year") => 0,
        ("next", "year") => 1,
        _ => return (len, t),
    };
    let moved = (|| {
        if matches!(t.granularity, Granularity::Year) {
            return None; // "in 2023 last year" says nothing more
        }
        let d = t.date()?;
        let years = i64::from(today.year()) + shift - i64::from(d.year());
        let moved = shift_months(d, years.checked_mul(12)?)?;
        ResolvedTime::at(moved, t.granularity)
    })();
    match moved {
        Some(m) => (k + 2 - i, m),
        None => (len, t),
    }
}

/// The most recent (or next) day numbered `dom`, today included.
fn day_of_month_near(today: NaiveDate, dom: u32, future: bool) -> Option<ResolvedTime> {
    let first = NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?;
    let step = if future { 1 } else { -1 };
    // A day 29 to 31 is missing from some months: a year always has one.
    (0..13).find_map(|k| {
        let month = shift_months(first, k * step)?;
        let d = NaiveDate::from_ymd_opt(month.year(), month.month(), dom)?;
        let ok = if future { d >= today } else { d <= today };
        ok.then(|| ResolvedTime::at(d, Granularity::Day))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sunday 2026-11-15 12:00 UTC.
    const AT: i64 = 1_794_744_000_000;

    fn date(ms: Option<i64>) -> String {
        ms.and_then(DateTime::from_timestamp_millis)
            .map_or_else(String::new, |t| t.date_naive().to_string())
    }

    /// "start..end" (end exclusive, as dates; an open side empty) and the phrase.
    fn read(q: &str) -> Option<(String, String)> {
        let t = read_query_time(q, AT)?;
        let w = match t.when {
            When::Window { start, end } => format!("{}..{}", date(start), date(end)),
            When::Session(r) => format!("{r:?}"),
        };
        Some((w, t.phrase))
    }

    #[test]
    fn table() {
        let cases: &[(&str, &str, &str)] = &[
            // Relative days and weeks.
            (
                "what did I eat yesterday",
                "2026-11-14..2026-11-15",
                "yesterday",
            ),
            ("anything today?", "2026-11-15..2026-11-16", "today"),
            (
                "what did we plan last week",
                "2026-11-02..2026-11-09",
                "last week",
            ),
            (
                "where was I two weeks ago",
                "2026-10-26..2026-11-02",
                "two weeks ago",
            ),
            (
                "what did I read 3 days ago",
                "2026-11-12..2026-11-13",
                "3 days ago",
            ),
            (
                "what did I buy two months ago",
                "2026-09-01..2026-10-01",
                "two months ago",
            ),
            (
                "which books last month",
                "2026-10-01..2026-11-01",
                "last month",
            ),
            ("trips last year", "2025-01-01..2026-01-01", "last year"),
            (
                "what happened last weekend",
                "2026-11-07..2026-11-09",
                "last weekend",
            ),
            (
                "what did I cook on Friday",
                "2026-11-13..2026-11-14",
                "on Friday",
            ),
            ("hikes last summer", "2026-06-01..2026-09-01", "last summer"),
            // Named dates and months.
            ("what did I do in May", "2026-05-01..2026-06-01", "in May"),
            (
                "what happened in May 2023",
                "2023-05-01..2023-06-01",
                "in May 2023",
            ),
            (
                "who did I meet on the 3rd",
                "2026-11-03..2026-11-04",
                "on the 3rd",
            ),
            (
                "what did I do on the 20th",
                "2026-10-20..2026-10-21",
                "on the 20th",
            ),
            ("on the 31st", "2026-10-31..2026-11-01", "on the 31st"),
            (
                "what was said on May 7, 2023",
                "2023-05-07..2023-05-08",
                "on May 7 2023",
            ),
            (
                "notes from 2023-05-07",
                "2023-05-07..2023-05-08",
                "from 2023-05-07",
            ),
            ("what did I do in 2019", "2019-01-01..2020-01-01", "in 2019"),
            (
                "the 7th of March",
                "2026-03-07..2026-03-08",
                "the 7th of March",
            ),
            // Ranges.
            (
                "what did I do between March and June",
                "2026-03-01..2026-07-01",
                "between March and June",
            ),
            (
                "between May 1, 2023 and May 10, 2023",
                "2023-05-01..2023-05-11",
                "between May 1 2023 and May 10 2023",
            ),
            (
                "from March to May",
                "2026-03-01..2026-06-01",
                "from March to May",
            ),
            (
                "what changed since last month",
                "2026-10-01..",
                "since last month",
            ),
            ("what did I do before 2020", "..2020-01-01", "before 2020"),
            ("anything after May 2026", "2026-06-01..", "after May 2026"),
            ("until last week", "..2026-11-09", "until last week"),
            // Sessions.
            (
                "what did we talk about three sessions ago",
                "Recent(3)",
                "three sessions ago",
            ),
            (
                "what did we talk about in the last session",
                "Recent(1)",
                "in the last session",
            ),
            (
                "in our previous conversation",
                "Recent(1)",
                "in our previous conversation",
            ),
            ("the most recent chat", "Recent(1)", "the most recent chat"),
            ("what did you say last time", "Recent(1)", "last time"),
            (
                "what did we discuss the last time we talked",
                "Recent(1)",
                "the last time we talked",
            ),
            (
                "the session before last",
                "Recent(2)",
                "the session before last",
            ),
            (
                "in the second to last session",
                "Recent(2)",
                "in the second to last session",
            ),
            (
                "what did I tell you the first time we talked",
                "Nth(1)",
                "the first time we talked",
            ),
            (
                "during our second session",
                "Nth(2)",
                "during our second session",
            ),
            ("2 conversations ago", "Recent(2)", "2 conversations ago"),
            // Sessions win over the calendar's "last".
            (
                "last week in the last session",
                "Recent(1)",
                "in the last session",
            ),
            // Periods counted from a date the query names.
            (
                "what did I get two weeks before August 11, 2023",
                "2023-07-24..2023-07-31",
                "two weeks before August 11 2023",
            ),
            (
                "what did I do the week before August 3, 2023",
                "2023-07-24..2023-07-31",
                "the week before August 3 2023",
            ),
            (
                "the day after 2023-05-07",
                "2023-05-08..2023-05-09",
                "the day after 2023-05-07",
            ),
            (
                "what did I do last weekend before April 10, 2023",
                "2023-04-08..2023-04-10",
                "last weekend before April 10 2023",
            ),
            // Spans reaching back to now.
            (
                "what did I eat in the last two weeks",
                "2026-11-01..2026-11-16",
                "in the last two weeks",
            ),
            (
                "books over the past month",
                "2026-10-15..2026-11-16",
                "over the past month",
            ),
            (
                "the past few days",
                "2026-11-12..2026-11-16",
                "the past few days",
            ),
            (
                "the last couple of years",
                "2024-11-15..2026-11-16",
                "the last couple of years",
            ),
            (
                "within the past 3 days",
                "2026-11-12..2026-11-16",
                "within the past 3 days",
            ),
            // The period before the last one.
            (
                "what did we cook the week before last",
                "2026-10-26..2026-11-02",
                "the week before last",
            ),
            (
                "the month before last",
                "2026-09-01..2026-10-01",
                "the month before last",
            ),
            (
                "the weekend before last",
                "2026-10-31..2026-11-02",
                "the weekend before last",
            ),
            // A month in a named year.
            (
                "what did I do in June last year",
                "2025-06-01..2025-07-01",
                "in June last year",
            ),
            (
                "in March of next year",
                "2027-03-01..2027-04-01",
                "in March of next year",
            ),
            (
                "in December last year",
                "2025-12-01..2026-01-01",
                "in December last year",
            ),
            // Part of a period.
            (
                "trips in early May",
                "2026-05-01..2026-05-11",
                "in early May",
            ),
            ("mid-June", "2026-06-11..2026-06-21", "mid-June"),
            ("in late 2022", "2022-09-01..2023-01-01", "in late 2022"),
            (
                "at the end of May 2023",
                "2023-05-22..2023-06-01",
                "at the end of May 2023",
            ),
            (
                "the beginning of last month",
                "2026-10-01..2026-10-11",
                "the beginning of last month",
            ),
            (
                "the second week of May",
                "2026-05-08..2026-05-15",
                "the second week of May",
            ),
            (
                "during the last week of June 2023",
                "2023-06-24..2023-07-01",
                "during the last week of June 2023",
            ),
        ];
        for (q, window, phrase) in cases {
            assert_eq!(
                read(q),
                Some((window.to_string(), phrase.to_string())),
                "reading {q:?}"
            );
        }
    }

    #[test]
    fn no_time() {
        for q in [
            "what food do I like",
            "I may go",
            "my last job",
            "the last time I went to Rome",
            "the first time I flew",
            "my last talk",
            "the 2 cats",
            "room 2019",
            "between us and them",
            "from Berlin to Paris",
            "since you asked",
            "before dinner",
            "the past is the past",
            "my last two jobs",
            "I may leave early",
            "the end of the story",
            "the week before the trip",
            "",
        ] {
            assert_eq!(read(q), None, "{q:?} names no time");
        }
        assert_eq!(read_query_time("yesterday", i64::MAX), None);
        assert_eq!(read_query_time("zero sessions ago", AT), None);
    }

    #[test]
    fn the_future_when_the_question_speaks_of_it() {
        assert_eq!(
            read("what will I do next week"),
            Some(("2026-11-16..2026-11-23".into(), "next week".into()))
        );
        assert_eq!(
            read("what am I going to do on the 3rd"),
            Some(("2026-12-03..2026-12-04".into(), "on the 3rd".into()))
        );
    }

    #[test]
    fn a_range_given_backwards_is_put_in_order() {
        assert_eq!(
            read("between June and March"),
            Some((
                "2026-03-01..2026-07-01".into(),
                "between June and March".into()
            ))
        );
    }

    #[test]
    fn windows_end_where_their_period_does() {
        let t = |q: &str| match read_query_time(q, AT).unwrap().when {
            When::Window { start, end } => end.unwrap() - start.unwrap(),
            other => panic!("{other:?}"),
        };
        const DAY: i64 = 86_400_000;
        assert_eq!(t("yesterday"), DAY);
        assert_eq!(t("last week"), 7 * DAY);
        assert_eq!(t("in February 2024"), 29 * DAY, "a leap year's February");
    }
}
