//! Times are Unix milliseconds in memory and storage, RFC 3339 on the wire
//! (what Mem0 clients and people read); either form is accepted back.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serializer};

/// Parses RFC 3339 or `YYYY-MM-DD` (midnight UTC) into Unix milliseconds.
pub fn parse_date(s: &str) -> Option<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
}

/// When something was said, as a caller gives it (`--at`, a tool's
/// `timestamp`): RFC 3339, `YYYY-MM-DD` (midnight UTC), or Unix seconds (a
/// number, as Mem0's add sends it, or a string of digits), in years 0 to
/// 9999. `field` names it in the error.
pub fn parse_said_at(field: &str, v: &serde_json::Value) -> crate::Result<i64> {
    let ms = match v {
        serde_json::Value::String(s) => {
            let s = s.trim();
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse::<i64>()
                    .ok()
                    .and_then(|secs| secs.checked_mul(1000))
            } else {
                parse_date(s)
            }
        }
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite() && f.abs() < 1e15)
            .map(|secs| (secs * 1000.0).round() as i64),
        _ => None,
    };
    let ms = ms.ok_or_else(|| {
        let shown = match v {
            serde_json::Value::String(s) => crate::shown_value(s),
            other => crate::shown_value(&other.to_string()),
        };
        crate::Error::invalid(format!(
            "{field} must be an RFC 3339 time (2023-05-08T13:56:00Z), a date (2023-05-08) or Unix seconds, not {shown}"
        ))
    })?;
    crate::check_time(field, ms)?;
    Ok(ms)
}

pub fn to_rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.to_rfc3339_opts(SecondsFormat::Millis, true),
    )
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Wire {
    Millis(i64),
    Text(String),
}

fn from_wire<E: serde::de::Error>(w: Wire) -> Result<i64, E> {
    match w {
        Wire::Millis(ms) => Ok(ms),
        Wire::Text(s) => parse_date(&s).ok_or_else(|| {
            E::custom(format!(
                "{s:?} is not a date (use RFC 3339, e.g. 2024-05-01T10:00:00Z)"
            ))
        }),
    }
}

pub mod millis {
    use super::*;

    pub fn serialize<S: Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&to_rfc3339(*ms))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        from_wire(Wire::deserialize(d)?)
    }
}

pub mod opt_millis {
    use super::*;

    pub fn serialize<S: Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match ms {
            Some(ms) => s.serialize_str(&to_rfc3339(*ms)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        Option::<Wire>::deserialize(d)?.map(from_wire).transpose()
    }
}

/// The time a store and the facade judge expiry, decay and write times by:
/// the system's, or a manual one that tests set and advance, so a test of a
/// TTL moves the clock instead of waiting for it. Clones share one time:
/// setting a manual clock moves every handle that holds a clone.
#[derive(Clone, Default)]
pub struct Clock(Option<Arc<AtomicI64>>);

impl Clock {
    /// The system clock (Unix milliseconds, [`crate::now_millis`]).
    pub fn system() -> Clock {
        Clock(None)
    }

    /// A clock standing at `ms` until it is set or advanced.
    pub fn manual(ms: i64) -> Clock {
        Clock(Some(Arc::new(AtomicI64::new(ms))))
    }

    /// Now, in Unix milliseconds.
    pub fn now(&self) -> i64 {
        match &self.0 {
            None => crate::now_millis(),
            Some(t) => t.load(Ordering::SeqCst),
        }
    }

    /// Moves a manual clock to `ms`. The system clock cannot be set.
    pub fn set(&self, ms: i64) -> crate::Result<()> {
        self.manual_time()?.store(ms, Ordering::SeqCst);
        Ok(())
    }

    /// Moves a manual clock `ms` forward (backward when negative).
    pub fn advance(&self, ms: i64) -> crate::Result<()> {
        let t = self.manual_time()?;
        // fetch_update never fails with a closure that always answers Some.
        let _ = t.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
            Some(now.saturating_add(ms))
        });
        Ok(())
    }

    fn manual_time(&self) -> crate::Result<&AtomicI64> {
        self.0.as_deref().ok_or_else(|| {
            crate::Error::invalid(
                "the system clock cannot be set: build the store with Clock::manual to control time",
            )
        })
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Clock(system)"),
            Some(_) => write!(f, "Clock(manual at {})", to_rfc3339(self.now())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_its_clones_follow() {
        let clock = Clock::manual(1_000);
        let other = clock.clone();
        assert_eq!(clock.now(), 1_000);
        clock.advance(86_400_000).unwrap();
        assert_eq!(other.now(), 86_401_000);
        other.set(5).unwrap();
        assert_eq!(clock.now(), 5);
        let system = Clock::system();
        assert!(system.now() > 1_600_000_000_000);
        let err = system.set(0).unwrap_err().to_string();
        assert!(err.contains("Clock::manual"), "{err}");
        assert!(system.advance(1).is_err());
    }

    #[test]
    fn said_at_takes_dates_times_and_unix_seconds() {
        use serde_json::json;
        let may8 = 1_683_504_000_000; // 2023-05-08T00:00:00Z
        for (v, want) in [
            (json!("2023-05-08"), may8),
            (json!(" 2023-05-08T13:56:00Z "), may8 + 50_160_000),
            (json!("2023-05-08T15:56:00+02:00"), may8 + 50_160_000),
            (json!(1_683_504_000), may8),
            (json!(1_683_504_000.5), may8 + 500),
            (json!("1683504000"), may8),
        ] {
            assert_eq!(parse_said_at("--at", &v).unwrap(), want, "{v}");
        }
        for v in [
            json!("yesterday"),
            json!(""),
            json!("2023-13-01"),
            json!(true),
            json!(1e300),
            json!(300_000_000_000_i64),
        ] {
            let err = parse_said_at("timestamp", &v).unwrap_err();
            assert_eq!(err.class(), crate::ErrorClass::InvalidInput, "{v}");
            assert!(err.to_string().contains("timestamp"), "{err}");
        }
    }
}
