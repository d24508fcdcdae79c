//! Times are Unix milliseconds in memory and storage, RFC 3339 on the wire
//! (what Mem0 clients and people read); either form is accepted back.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
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
