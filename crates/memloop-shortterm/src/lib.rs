//! Short-term buffer backends: [`InProcessBuffer`] (the default: one
//! process, nothing persisted) and [`RedisBuffer`] (shared by every agent
//! process on the same session, surviving their restarts). Both keep a
//! session's newest `max_turns_stored` turns and let a session idle for
//! `ttl_secs` go; the in-process one also keeps within `max_bytes` in all
//! ([`Limits`]). The Redis buffer is behind the `redis` feature (on by
//! default).

mod in_process;
#[cfg(feature = "redis")]
mod redis_buffer;

pub use in_process::InProcessBuffer;
#[cfg(feature = "redis")]
pub use redis_buffer::{redacted, RedisBuffer};

/// Turns a session keeps by default: the prompt window (`[loop.budget]
/// max_turns`, 12) many times over, so the loop has folded a turn into the
/// session's summary long before it is dropped; 200 turns of 1 KB are
/// 200 KB a session.
pub const DEFAULT_MAX_TURNS_STORED: usize = 200;
/// An idle session lives a day by default.
pub const DEFAULT_TTL_SECS: u64 = 24 * 3600;
/// The in-process buffer's total by default: 64 MiB, some 6,000 sessions
/// of ten 1 KB turns. The least recently used idle sessions go past it.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// The bounds of a short-term buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Turns a session keeps: past it, the oldest are dropped (at least 1).
    pub max_turns_stored: usize,
    /// A session not appended to for this long is removed (0: never).
    pub ttl_secs: u64,
    /// The in-process buffer's total in bytes, texts and bookkeeping
    /// (estimated); past it, the least recently appended-to sessions other
    /// than the one being written are dropped (0: no budget). Redis has its
    /// own (`maxmemory`) and ignores this.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns_stored: DEFAULT_MAX_TURNS_STORED,
            ttl_secs: DEFAULT_TTL_SECS,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memloop_core::short_term::{Role, ShortTermStore, Summary, Turn};

    #[test]
    fn clear_user_forgets_that_users_sessions_only() {
        let b = InProcessBuffer::new();
        b.append_for(
            "t",
            Some("alice"),
            "a1",
            &[Turn::new(Role::User, "alice one")],
        )
        .unwrap();
        b.append_for(
            "t",
            Some("alice"),
            "a2",
            &[Turn::new(Role::User, "alice two")],
        )
        .unwrap();
        b.append_for("t", Some("bob"), "b1", &[Turn::new(Role::User, "bob")])
            .unwrap();
        b.append_for(
            "t2",
            Some("alice"),
            "a1",
            &[Turn::new(Role::User, "other tenant")],
        )
        .unwrap();
        b.set_summary(
            "t",
            "a1",
            &Summary {
                text: "alice said one".into(),
                covers: 1,
            },
        )
        .unwrap();
        assert_eq!(b.clear_user("t", "alice").unwrap(), 2);
        assert!(b.read("t", "a1").unwrap().is_empty());
        assert!(b.read("t", "a2").unwrap().is_empty());
        assert_eq!(b.summary("t", "a1").unwrap(), None);
        assert_eq!(b.read("t", "b1").unwrap().len(), 1);
        assert_eq!(b.read("t2", "a1").unwrap().len(), 1);
        assert_eq!(b.clear_user("t", "alice").unwrap(), 0);
        let scope = memloop_core::Scope::user("bob");
        let scope = memloop_core::Scope {
            tenant: "t".into(),
            ..scope
        };
        assert_eq!(b.forget_scope(&scope).unwrap(), 1);
        assert!(b.read("t", "b1").unwrap().is_empty());
    }

    #[test]
    fn in_process_keeps_order_and_separates_sessions_and_tenants() {
        let b = InProcessBuffer::new();
        b.append(
            "t",
            "s1",
            &[
                Turn::new(Role::User, "hi"),
                Turn::new(Role::Assistant, "hello"),
            ],
        )
        .unwrap();
        assert_eq!(
            b.append("t", "s1", &[Turn::new(Role::User, "bye")])
                .unwrap(),
            3
        );
        b.append("t2", "s1", &[Turn::new(Role::User, "other tenant")])
            .unwrap();
        let got: Vec<String> = b
            .read("t", "s1")
            .unwrap()
            .into_iter()
            .map(|t| t.content)
            .collect();
        assert_eq!(got, vec!["hi", "hello", "bye"]);
        assert!(b.read("t", "s2").unwrap().is_empty());
        assert!(b
            .append(
                "t",
                "s1",
                &[Turn::new(Role::User, "ok"), Turn::new(Role::User, " ")]
            )
            .is_err());
        assert_eq!(
            b.read("t", "s1").unwrap().len(),
            3,
            "a bad batch appends nothing"
        );
        b.set_summary(
            "t",
            "s1",
            &Summary {
                text: "greetings".into(),
                covers: 2,
            },
        )
        .unwrap();
        b.set_summary(
            "t",
            "s1",
            &Summary {
                text: "older".into(),
                covers: 1,
            },
        )
        .unwrap();
        assert_eq!(b.summary("t", "s1").unwrap().unwrap().text, "greetings");
        b.clear("t", "s1").unwrap();
        assert_eq!(b.summary("t", "s1").unwrap(), None);
        assert!(b.read("t", "s1").unwrap().is_empty());
        assert_eq!(b.read("t2", "s1").unwrap().len(), 1);
    }
}
