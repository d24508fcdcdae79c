//! The forgetting policy (docs/forgetting.md), the `[forgetting]` table:
//! default TTLs per kind for writes that give none, how often a handle
//! held open sweeps (replays queued writes and deletes expired memories),
//! and the decay signal's weight and half-life in ranking.

use memloop_core::{parse_ttl, Error, Kind, Result};
use memloop_longterm::Decay;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// The decay signal's default weight. On LoCoMo's dev split every weight
/// tried (0.05 to 0.2, half-lives of 30 days to 10 years) lowered R@10
/// from 0.807 to 0.801–0.805 (docs/forgetting.md), so decay is off unless
/// configured.
pub const DEFAULT_DECAY_WEIGHT: f32 = 0.0;
/// The decay signal's default half-life: 30 days.
pub const DEFAULT_HALF_LIFE_MS: i64 = 30 * DAY;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ForgettingConfig {
    /// How long a memory of each kind lives when its write gives no
    /// expiry, counted from the write: `ttl = { episode = "180d" }`.
    pub ttl: KindTtls,
    /// How often a `Memory` opened from the configuration sweeps in the
    /// background (due queued writes replayed, then `gc`): `memloop serve`,
    /// `memloop mcp`, `memloop chat`, a library handle from `Memory::open`;
    /// not one-shot CLI commands. "off" (or "0"): no sweeper.
    #[serde(with = "opt_span")]
    pub gc_interval: Option<i64>,
    /// How much the decay signal (recency × importance × use) counts in
    /// ranking beside relevance (whose keyword part weighs 1); 0: not at all.
    pub decay_weight: f32,
    /// Recency halves every `half_life` since a memory became true or was
    /// last retrieved; "off": recency does not count.
    #[serde(with = "opt_span")]
    pub half_life: Option<i64>,
}

impl Default for ForgettingConfig {
    fn default() -> Self {
        ForgettingConfig {
            ttl: KindTtls::default(),
            gc_interval: Some(HOUR),
            decay_weight: DEFAULT_DECAY_WEIGHT,
            half_life: Some(DEFAULT_HALF_LIFE_MS),
        }
    }
}

/// Default TTLs per kind, in milliseconds (None: kept until deleted). In
/// the file each is a duration such as "180d", or "off".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KindTtls {
    /// Facts are what is known now: kept until superseded or deleted.
    #[serde(with = "opt_span")]
    pub fact: Option<i64>,
    /// Episodes are what was said: 180 days, by which time what mattered
    /// in them has been distilled into facts.
    #[serde(with = "opt_span")]
    pub episode: Option<i64>,
    #[serde(with = "opt_span")]
    pub procedure: Option<i64>,
}

impl Default for KindTtls {
    fn default() -> Self {
        KindTtls {
            fact: None,
            episode: Some(180 * DAY),
            procedure: None,
        }
    }
}

impl ForgettingConfig {
    /// The default TTL of a kind, in milliseconds.
    pub fn ttl_for(&self, kind: Kind) -> Option<i64> {
        match kind {
            Kind::Fact => self.ttl.fact,
            Kind::Episode => self.ttl.episode,
            Kind::Procedure => self.ttl.procedure,
        }
    }

    /// The decay a search uses when it names none.
    pub fn decay(&self) -> Decay {
        Decay {
            weight: self.decay_weight,
            half_life_ms: self.half_life.unwrap_or(0),
        }
    }

    /// Refuses a decay weight that is negative or not a number.
    pub fn validate(&self) -> Result<()> {
        if !(self.decay_weight.is_finite() && self.decay_weight >= 0.0) {
            return Err(Error::invalid(format!(
                "[forgetting] decay_weight {} must be 0 or more (0 turns decay off)",
                self.decay_weight
            )));
        }
        Ok(())
    }
}

/// What `Memory::gc` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// Memories deleted because their TTL had passed.
    pub expired_deleted: usize,
    /// Change-log entries the saved indexes no longer needed.
    pub index_log_entries_pruned: usize,
}

/// A duration as written in the file ("30s", "15m", "12h", "7d", "2w") or
/// "off" / "0" for none, read into milliseconds.
mod opt_span {
    use super::*;

    pub fn serialize<S: Serializer>(
        ms: &Option<i64>,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match ms {
            None => s.serialize_str("off"),
            Some(ms) => s.serialize_str(&show(*ms)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<Option<i64>, D::Error> {
        let text = String::deserialize(d)?;
        match text.trim() {
            "off" | "0" | "none" => Ok(None),
            t => parse_ttl(t).map(Some).map_err(|e| {
                serde::de::Error::custom(match e {
                    Error::InvalidInput(m) => format!("{m}, or \"off\""),
                    other => other.to_string(),
                })
            }),
        }
    }

    /// The largest whole unit: 180d, 36h, 90s.
    fn show(ms: i64) -> String {
        for (unit, size) in [("w", 7 * DAY), ("d", DAY), ("h", HOUR), ("m", 60_000)] {
            if ms % size == 0 {
                return format!("{}{unit}", ms / size);
            }
        }
        format!("{}s", ms / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        forgetting: ForgettingConfig,
    }

    fn parse(text: &str) -> std::result::Result<ForgettingConfig, String> {
        toml::from_str::<File>(text)
            .map(|f| f.forgetting)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_keep_facts_and_let_episodes_go_after_180_days() {
        let cfg = parse("").unwrap();
        assert_eq!(cfg, ForgettingConfig::default());
        assert_eq!(cfg.ttl_for(Kind::Fact), None);
        assert_eq!(cfg.ttl_for(Kind::Episode), Some(180 * DAY));
        assert_eq!(cfg.gc_interval, Some(HOUR));
        assert_eq!(cfg.decay().half_life_ms, 30 * DAY);
    }

    #[test]
    fn the_table_sets_ttls_interval_and_decay() {
        let cfg = parse(
            "[forgetting]\nttl = { episode = \"off\", fact = \"2w\" }\ngc_interval = \"0\"\n\
             decay_weight = 0.2\nhalf_life = \"off\"\n",
        )
        .unwrap();
        assert_eq!(cfg.ttl_for(Kind::Episode), None);
        assert_eq!(cfg.ttl_for(Kind::Fact), Some(14 * DAY));
        assert_eq!(cfg.gc_interval, None);
        assert_eq!(
            cfg.decay(),
            Decay {
                weight: 0.2,
                half_life_ms: 0
            }
        );
        // It writes durations back in the form it reads them.
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(json["ttl"]["fact"], "2w");
        assert_eq!(json["ttl"]["episode"], "off");
        assert_eq!(
            serde_json::to_value(ForgettingConfig::default()).unwrap()["gc_interval"],
            "1h"
        );
    }

    #[test]
    fn bad_durations_and_weights_are_refused_saying_what_to_write() {
        let err = parse("[forgetting]\nttl = { episode = \"6 months\" }\n").unwrap_err();
        assert!(
            err.contains("30s, 15m, 12h, 7d or 2w") && err.contains("off"),
            "{err}"
        );
        assert!(parse("[forgetting]\nttl = { memo = \"1d\" }\n").is_err());
        assert!(parse("[forgetting]\ngc_interval = 5\n").is_err());
        let cfg = parse("[forgetting]\ndecay_weight = -1\n").unwrap();
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("decay_weight"));
    }
}
