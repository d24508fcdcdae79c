//! Time expressions in a turn ("last month", "3 days ago", "May 7, 2023"),
//! resolved against the turn's own timestamp so that a stored fact carries an
//! absolute date and still reads right a year later.
//!
//! Calendar arithmetic is in UTC: the speaker's time zone is not known, so
//! "yesterday" said just after local midnight can be off by a day. A
//! relative period resolves to its start ("last month" → the 1st of the
//! previous month) with a granularity that says how precise it is. A date
//! without a year, or a bare weekday or month, is taken as the most recent
//! one, or as the next one when the clause speaks of the future ("will",
//! "next", "going to", …).

use chrono::{DateTime, Datelike, Days, Months, NaiveDate};
use serde::{Deserialize, Serialize};

use super::clauses::tokenize;
use super::lexicon::{is_in, small_number, FUTURE_MARKERS};

/// How precise a resolved time is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    Day,
    /// Starts on the Saturday.
    Weekend,
    /// Starts on the Monday.
    Week,
    Month,
    /// Starts on the 1st of March, June, September or December.
    Season,
    Year,
}

/// An absolute time: the start of the period, in Unix milliseconds (UTC midnight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedTime {
    pub millis: i64,
    pub granularity: Granularity,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn month_name(month: u32) -> &'static str {
    usize::try_from(month)
        .ok()
        .and_then(|m| m.checked_sub(1))
        .and_then(|m| MONTHS.get(m))
        .copied()
        .unwrap_or("?")
}

fn day_text(d: NaiveDate) -> String {
    format!("{} {}, {}", month_name(d.month()), d.day(), d.year())
}

impl ResolvedTime {
    pub(super) fn at(d: NaiveDate, granularity: Granularity) -> Option<ResolvedTime> {
        Some(ResolvedTime {
            millis: midnight(d)?,
            granularity,
        })
    }

    pub fn date(&self) -> Option<NaiveDate> {
        DateTime::from_timestamp_millis(self.millis).map(|t| t.date_naive())
    }

    /// Where the period ends (exclusive), in Unix milliseconds: the day
    /// after a day, the Monday after a weekend, the 1st of the next month
    /// after a month, and so on.
    pub fn end_millis(&self) -> Option<i64> {
        let d = self.date()?;
        let end = match self.granularity {
            Granularity::Day => shift_days(d, 1)?,
            Granularity::Weekend => shift_days(d, 2)?,
            Granularity::Week => shift_days(d, 7)?,
            Granularity::Month => shift_months(d, 1)?,
            Granularity::Season => shift_months(d, 3)?,
            Granularity::Year => shift_months(d, 12)?,
        };
        midnight(end)
    }

    /// Human text at the time's precision: "May 7, 2023", "the week of
    /// November 2, 2026", "October 2026", "summer 2026", "2025".
    pub fn describe(&self) -> String {
        let Some(d) = self.date() else {
            return memloop_core::time::to_rfc3339(self.millis);
        };
        match self.granularity {
            Granularity::Day => day_text(d),
            Granularity::Weekend => format!("the weekend of {}", day_text(d)),
            Granularity::Week => format!("the week of {}", day_text(d)),
            Granularity::Month => format!("{} {}", month_name(d.month()), d.year()),
            Granularity::Season => match d.month() {
                3 => format!("spring {}", d.year()),
                6 => format!("summer {}", d.year()),
                9 => format!("autumn {}", d.year()),
                _ => format!("winter {}/{:02}", d.year(), (d.year() + 1).rem_euclid(100)),
            },
            Granularity::Year => d.year().to_string(),
        }
    }

    /// `describe` with its preposition: "on May 7, 2023", "in October 2026".
    pub fn with_preposition(&self) -> String {
        let p = match self.granularity {
            Granularity::Day | Granularity::Weekend => "on",
            _ => "in",
        };
        format!("{p} {}", self.describe())
    }
}

/// A time expression found in a clause's words: `start..end` covers it and a
/// preposition before it ("in", "on", "since"), `relative` is false for a
/// date written out ("May 7, 2023"), which can be kept as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TimeMatch {
    pub start: usize,
    pub end: usize,
    pub time: ResolvedTime,
    pub relative: bool,
}

/// Resolves the first time expression in `expr` against the moment `at_millis`
/// (a turn's timestamp): "yesterday", "last week", "last month", "last year",
/// "3 days ago", "two weeks ago", "next week", "in 2 days", "on Monday",
/// "last summer", "May 7, 2023", "7 May 2023", "May 2023", "2023-05-07",
/// "in 2019". None if there is none.
pub fn resolve_relative_time(expr: &str, at_millis: i64) -> Option<ResolvedTime> {
    let today = DateTime::from_timestamp_millis(at_millis)?.date_naive();
    let tokens = tokenize(expr);
    let words: Vec<&str> = tokens.iter().map(|t| t.lower.as_str()).collect();
    let future = words.iter().any(|w| is_in(FUTURE_MARKERS, w));
    find_time(&words, today, future).map(|m| m.time)
}

pub(crate) fn find_time(words: &[&str], today: NaiveDate, future: bool) -> Option<TimeMatch> {
    (0..words.len()).find_map(|i| {
        let (len, time, relative) = match_at(words, i, today, future)?;
        let mut start = i;
        let before = |k: usize| k.checked_sub(1).and_then(|p| words.get(p)).copied();
        if before(start).is_some_and(|w| is_in(&["in", "on", "since", "during", "from"], w)) {
            start -= 1;
            if before(start) == Some("back") {
                start -= 1;
            }
        }
        Some(TimeMatch {
            start,
            end: i + len,
            time,
            relative,
        })
    })
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Unit {
    Day,
    Week,
    Month,
    Year,
}

/// Midnight UTC at the start of `d`, in Unix milliseconds.
pub(super) fn midnight(d: NaiveDate) -> Option<i64> {
    Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

pub(super) fn unit(word: &str) -> Option<Unit> {
    match word {
        "day" | "days" => Some(Unit::Day),
        "week" | "weeks" => Some(Unit::Week),
        "month" | "months" => Some(Unit::Month),
        "year" | "years" => Some(Unit::Year),
        _ => None,
    }
}

pub(super) fn month_number(word: &str) -> Option<u32> {
    let m = match word {
        "january" | "jan" => 1,
        "february" | "feb" => 2,
        "march" | "mar" => 3,
        "april" | "apr" => 4,
        "may" => 5,
        "june" | "jun" => 6,
        "july" | "jul" => 7,
        "august" | "aug" => 8,
        "september" | "sep" | "sept" => 9,
        "october" | "oct" => 10,
        "november" | "nov" => 11,
        "december" | "dec" => 12,
        _ => return None,
    };
    Some(m)
}

fn weekday_number(word: &str) -> Option<u32> {
    let d = match word {
        "monday" => 0,
        "tuesday" => 1,
        "wednesday" => 2,
        "thursday" => 3,
        "friday" => 4,
        "saturday" => 5,
        "sunday" => 6,
        _ => return None,
    };
    Some(d)
}

fn season_month(word: &str) -> Option<u32> {
    match word {
        "spring" => Some(3),
        "summer" => Some(6),
        "autumn" | "fall" => Some(9),
        "winter" => Some(12),
        _ => None,
    }
}

/// "7", "7th", "21st" → 7, 21 (1..=31).
pub(super) fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = word.get(digits.len()..).unwrap_or("");
    if digits.is_empty() || digits.len() > 2 || !is_in(&["", "st", "nd", "rd", "th"], suffix) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

pub(super) fn year_number(word: &str) -> Option<i32> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok().filter(|y| (1900..=2100).contains(y))
}

fn monday_of(d: NaiveDate) -> Option<NaiveDate> {
    d.checked_sub_days(Days::new(u64::from(d.weekday().num_days_from_monday())))
}

fn first_of_month(d: NaiveDate) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(d.year(), d.month(), 1)
}

pub(super) fn shift_days(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    if n >= 0 {
        d.checked_add_days(Days::new(n.unsigned_abs()))
    } else {
        d.checked_sub_days(Days::new(n.unsigned_abs()))
    }
}

pub(super) fn shift_months(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    let m = Months::new(u32::try_from(n.unsigned_abs()).ok()?);
    if n >= 0 {
        d.checked_add_months(m)
    } else {
        d.checked_sub_months(m)
    }
}

fn day(d: Option<NaiveDate>) -> Option<ResolvedTime> {
    ResolvedTime::at(d?, Granularity::Day)
}

/// `n` units away from today (negative: in the past), at the unit's start.
pub(super) fn offset(today: NaiveDate, n: i64, unit: Unit) -> Option<ResolvedTime> {
    match unit {
        Unit::Day => day(shift_days(today, n)),
        Unit::Week => ResolvedTime::at(
            monday_of(shift_days(today, n.checked_mul(7)?)?)?,
            Granularity::Week,
        ),
        Unit::Month => {
            ResolvedTime::at(shift_months(first_of_month(today)?, n)?, Granularity::Month)
        }
        Unit::Year => {
            let year = i32::try_from(i64::from(today.year()).checked_add(n)?).ok()?;
            ResolvedTime::at(NaiveDate::from_ymd_opt(year, 1, 1)?, Granularity::Year)
        }
    }
}

/// The weekday `wd` (0 = Monday) before or after today; never today itself.
fn weekday_near(today: NaiveDate, wd: u32, future: bool) -> Option<ResolvedTime> {
    let now = today.weekday().num_days_from_monday();
    let n = if future {
        (wd + 7 - now) % 7
    } else {
        (now + 7 - wd) % 7
    };
    let n = i64::from(if n == 0 { 7 } else { n });
    day(shift_days(today, if future { n } else { -n }))
}

/// The 1st of `month` in the most recent or next year that has it; `strict`
/// excludes the current month ("last May" said in May is a year ago).
pub(super) fn month_near(
    today: NaiveDate,
    month: u32,
    future: bool,
    strict: bool,
) -> Option<ResolvedTime> {
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, 1)?;
    let current = first_of_month(today)?;
    let year = match (future, this_year.cmp(&current)) {
        (false, std::cmp::Ordering::Greater) => today.year() - 1,
        (false, std::cmp::Ordering::Equal) if strict => today.year() - 1,
        (true, std::cmp::Ordering::Less) => today.year() + 1,
        (true, std::cmp::Ordering::Equal) if strict => today.year() + 1,
        _ => today.year(),
    };
    ResolvedTime::at(NaiveDate::from_ymd_opt(year, month, 1)?, Granularity::Month)
}

/// `month`/`dom` in the most recent (or next) year where it is a real date.
fn date_near(today: NaiveDate, month: u32, dom: u32, future: bool) -> Option<ResolvedTime> {
    let year = today.year();
    let candidates = if future {
        [year, year + 1, year + 2, year + 3, year + 4]
    } else {
        [year, year - 1, year - 2, year - 3, year - 4]
    };
    let d = candidates.iter().find_map(|y| {
        NaiveDate::from_ymd_opt(*y, month, dom).filter(|d| {
            if future {
                *d >= today
            } else {
                *d <= today
            }
        })
    })?;
    day(Some(d))
}

/// The season starting in `start_month`: the last one that ended, the one
/// under way (else this year's), or the next one to start.
fn season(today: NaiveDate, start_month: u32, which: &str) -> Option<ResolvedTime> {
    // (start, end) for the years around today, in order.
    let spans: Vec<(NaiveDate, NaiveDate)> = (today.year() - 2..=today.year() + 1)
        .filter_map(|y| NaiveDate::from_ymd_opt(y, start_month, 1))
        .filter_map(|s| Some((s, s.checked_add_months(Months::new(3))?)))
        .collect();
    let found = match which {
        "last" => spans.iter().rev().find(|(_, end)| *end <= today),
        "this" => spans
            .iter()
            .find(|(s, end)| *s <= today && today < *end)
            .or_else(|| spans.iter().find(|(s, _)| s.year() == today.year())),
        _ => spans.iter().find(|(s, _)| *s > today),
    };
    ResolvedTime::at(found?.0, Granularity::Season)
}

/// "last/this/next" + week, weekend, month, year, season, weekday or month name.
fn relative_unit(today: NaiveDate, which: &str, word: &str) -> Option<ResolvedTime> {
    let n: i64 = match which {
        "last" => -1,
        "this" => 0,
        _ => 1,
    };
    if let Some(u) = unit(word).filter(|_| !word.ends_with('s')) {
        return offset(today, n, u);
    }
    if word == "weekend" {
        let saturday = shift_days(monday_of(today)?, 5 + 7 * n)?;
        return ResolvedTime::at(saturday, Granularity::Weekend);
    }
    if let Some(m) = season_month(word) {
        return season(today, m, which);
    }
    if let Some(wd) = weekday_number(word) {
        return match n {
            0 => day(shift_days(monday_of(today)?, i64::from(wd))),
            _ => weekday_near(today, wd, n > 0),
        };
    }
    let month = month_number(word)?;
    match n {
        0 => ResolvedTime::at(
            NaiveDate::from_ymd_opt(today.year(), month, 1)?,
            Granularity::Month,
        ),
        _ => month_near(today, month, n > 0, true),
    }
}

/// A time expression starting at word `i`: its length, the time, and whether it is relative.
pub(super) fn match_at(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    future: bool,
) -> Option<(usize, ResolvedTime, bool)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let rel = |len: usize, t: Option<ResolvedTime>| t.map(|t| (len, t, true));
    match (w(0), w(1), w(2), w(3)) {
        ("today" | "tonight", ..) => return rel(1, day(Some(today))),
        ("yesterday", ..) => return rel(1, day(shift_days(today, -1))),
        ("tomorrow", ..) => return rel(1, day(shift_days(today, 1))),
        ("the", "day", "before", "yesterday") => return rel(4, day(shift_days(today, -2))),
        ("the", "day", "after", "tomorrow") => return rel(4, day(shift_days(today, 2))),
        ("this", "morning" | "afternoon" | "evening", ..) => return rel(2, day(Some(today))),
        ("last", "night", ..) => return rel(2, day(shift_days(today, -1))),
        ("last" | "this" | "next", unit_word, ..) => {
            if let Some(t) = relative_unit(today, w(0), unit_word) {
                return Some((2, t, true));
            }
        }
        _ => {}
    }
    if let Some(found) = amount_at(words, i, today) {
        return Some(found);
    }
    if let Some(wd) = weekday_number(w(0)) {
        return rel(1, weekday_near(today, wd, future));
    }
    if w(0) == "the" {
        let (len, t, r) = explicit_day_first(words, i + 1, today, future)?;
        return Some((len + 1, t, r));
    }
    explicit_at(words, i, today, future)
}

/// "3 days ago", "a couple of weeks ago", "in two weeks".
fn amount_at(words: &[&str], i: usize, today: NaiveDate) -> Option<(usize, ResolvedTime, bool)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let (ahead, first) = if w(0) == "in" { (true, 1) } else { (false, 0) };
    let mut k = first;
    if is_in(&["a", "an"], w(k)) && is_in(&["few", "couple"], w(k + 1)) {
        k += 1;
    }
    let n = small_number(w(k))?;
    k += 1;
    if w(k) == "of" {
        k += 1;
    }
    let u = unit(w(k))?;
    k += 1;
    let n = i64::from(n);
    if ahead {
        return Some((k, offset(today, n, u)?, true));
    }
    if w(k) == "ago" {
        return Some((k + 1, offset(today, -n, u)?, true));
    }
    None
}

/// "7 May 2023", "7th of May", with the day first.
fn explicit_day_first(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    future: bool,
) -> Option<(usize, ResolvedTime, bool)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let dom = day_number(w(0))?;
    let mut k = 1;
    if w(k) == "of" {
        k += 1;
    }
    let month = month_number(w(k))?;
    k += 1;
    let comma = usize::from(w(k) == ",");
    if let Some(year) = year_number(w(k + comma)) {
        let d = NaiveDate::from_ymd_opt(year, month, dom)?;
        return Some((k + comma + 1, day(Some(d))?, false));
    }
    Some((k, date_near(today, month, dom, future)?, false))
}

/// Written dates: ISO, month-first, day-first, "May 2023", "in May", "in 2019",
/// "summer 2023".
fn explicit_at(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    future: bool,
) -> Option<(usize, ResolvedTime, bool)> {
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let prev = i
        .checked_sub(1)
        .and_then(|p| words.get(p))
        .copied()
        .unwrap_or("");
    let word = w(0);
    if let Some(t) = iso_date(word) {
        return Some((1, t, false));
    }
    if let Some(month) = month_number(word) {
        let comma = usize::from(w(1) == ",");
        if let Some(dom) = day_number(w(1)) {
            let comma2 = usize::from(w(2) == ",");
            if let Some(year) = year_number(w(2 + comma2)) {
                let d = NaiveDate::from_ymd_opt(year, month, dom)?;
                return Some((3 + comma2, day(Some(d))?, false));
            }
            return Some((2, date_near(today, month, dom, future)?, false));
        }
        if let Some(year) = year_number(w(1 + comma)) {
            let d = NaiveDate::from_ymd_opt(year, month, 1)?;
            return Some((2 + comma, ResolvedTime::at(d, Granularity::Month)?, false));
        }
        // A bare month name needs a preposition: "may" is also a verb.
        const BEFORE_MONTH: &[&str] = &[
            "in", "since", "during", "until", "from", "early", "late", "mid", "of", "by",
        ];
        if is_in(BEFORE_MONTH, prev) {
            return Some((1, month_near(today, month, future, false)?, false));
        }
        return None;
    }
    if let Some(m) = season_month(word) {
        let of = usize::from(w(1) == "of");
        let year = year_number(w(1 + of))?;
        let d = NaiveDate::from_ymd_opt(year, m, 1)?;
        return Some((2 + of, ResolvedTime::at(d, Granularity::Season)?, false));
    }
    if let Some(year) = year_number(word) {
        const BEFORE_YEAR: &[&str] = &[
            "in", "since", "of", "from", "during", "until", "back", "early", "late", "mid",
            "around", "by",
        ];
        if is_in(BEFORE_YEAR, prev) || words.len() == 1 {
            let d = NaiveDate::from_ymd_opt(year, 1, 1)?;
            return Some((1, ResolvedTime::at(d, Granularity::Year)?, false));
        }
        return None;
    }
    explicit_day_first(words, i, today, future)
}

/// "2023-05-07", "2023/05/07" (a day) or "2023-05" (a month).
fn iso_date(word: &str) -> Option<ResolvedTime> {
    if !word.starts_with(|c: char| c.is_ascii_digit()) || word.len() < 7 {
        return None;
    }
    let word = word.replace('/', "-");
    if let Ok(d) = NaiveDate::parse_from_str(&word, "%Y-%m-%d") {
        return day(Some(d));
    }
    let d = NaiveDate::parse_from_str(&format!("{word}-01"), "%Y-%m-%d").ok()?;
    ResolvedTime::at(d, Granularity::Month)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sunday 2026-11-15 12:00 UTC.
    const AT: i64 = 1_794_744_000_000;

    fn resolve(expr: &str) -> Option<(String, Granularity)> {
        let t = resolve_relative_time(expr, AT)?;
        Some((t.date()?.to_string(), t.granularity))
    }

    fn on(expr: &str, date: &str, g: Granularity) {
        assert_eq!(
            resolve(expr),
            Some((date.to_string(), g)),
            "resolving {expr:?}"
        );
    }

    #[test]
    fn turn_time_is_a_sunday() {
        let d = DateTime::from_timestamp_millis(AT).unwrap().date_naive();
        assert_eq!(d.to_string(), "2026-11-15");
        assert_eq!(d.weekday(), chrono::Weekday::Sun);
    }

    #[test]
    fn days() {
        use Granularity::Day;
        on("yesterday", "2026-11-14", Day);
        on("today", "2026-11-15", Day);
        on("tomorrow", "2026-11-16", Day);
        on("the day before yesterday", "2026-11-13", Day);
        on("last night", "2026-11-14", Day);
        on("3 days ago", "2026-11-12", Day);
        on("three days ago", "2026-11-12", Day);
        on("in 2 days", "2026-11-17", Day);
    }

    #[test]
    fn weeks_months_years() {
        use Granularity::*;
        on("last week", "2026-11-02", Week);
        on("next week", "2026-11-16", Week);
        on("two weeks ago", "2026-10-26", Week);
        on("last month", "2026-10-01", Month);
        on("this month", "2026-11-01", Month);
        on("a couple of months ago", "2026-09-01", Month);
        on("last year", "2025-01-01", Year);
        on("5 years ago", "2021-01-01", Year);
        on("last weekend", "2026-11-07", Weekend);
        on("last summer", "2026-06-01", Season);
        on("last winter", "2025-12-01", Season);
        on("next summer", "2027-06-01", Season);
    }

    #[test]
    fn weekdays() {
        use Granularity::Day;
        on("on Monday", "2026-11-09", Day);
        on("last Friday", "2026-11-13", Day);
        on("next Monday", "2026-11-16", Day);
        on("I will see her on Friday", "2026-11-20", Day);
        on("on Sunday", "2026-11-08", Day);
    }

    #[test]
    fn written_dates() {
        use Granularity::*;
        on("May 7, 2023", "2023-05-07", Day);
        on("May 7th 2023", "2023-05-07", Day);
        on("7 May 2023", "2023-05-07", Day);
        on("on the 7th of May, 2023", "2023-05-07", Day);
        on("2023-05-07", "2023-05-07", Day);
        on("2023/05/07", "2023-05-07", Day);
        on("2023-05", "2023-05-01", Month);
        on("May 2023", "2023-05-01", Month);
        on("in 2019", "2019-01-01", Year);
        on("2019", "2019-01-01", Year);
        on("summer of 2023", "2023-06-01", Season);
        on("in May", "2026-05-01", Month);
        on("going to Japan in March", "2027-03-01", Month);
        on("May 7", "2026-05-07", Day);
        on("Dec 24", "2025-12-24", Day);
        on("last May", "2026-05-01", Month);
    }

    #[test]
    fn not_times() {
        assert_eq!(resolve("I may go"), None);
        assert_eq!(resolve("I have 2 cats"), None);
        assert_eq!(resolve("my last job"), None);
        assert_eq!(resolve("room 2019 is free"), None);
        assert_eq!(resolve("Feb 30, 2023"), None);
        assert_eq!(resolve(""), None);
        assert_eq!(resolve("99999 years ago"), None);
        assert_eq!(resolve_relative_time("yesterday", i64::MAX), None);
    }

    #[test]
    fn descriptions() {
        let t = |expr: &str| resolve_relative_time(expr, AT).unwrap();
        assert_eq!(t("last month").describe(), "October 2026");
        assert_eq!(t("last month").with_preposition(), "in October 2026");
        assert_eq!(t("yesterday").with_preposition(), "on November 14, 2026");
        assert_eq!(t("last week").describe(), "the week of November 2, 2026");
        assert_eq!(t("last winter").describe(), "winter 2025/26");
        assert_eq!(t("last year").describe(), "2025");
    }

    #[test]
    fn spans_include_the_preposition() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 15).unwrap();
        let words = ["i", "moved", "to", "berlin", "in", "october"];
        let m = find_time(&words, today, false).unwrap();
        assert_eq!((m.start, m.end), (4, 6));
        assert!(!m.relative);
        let words = ["last", "month", "i", "moved"];
        let m = find_time(&words, today, false).unwrap();
        assert_eq!((m.start, m.end, m.relative), (0, 2, true));
    }
}
