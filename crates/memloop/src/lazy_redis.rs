//! Redis as a long-running front end holds it ([`crate::ShortTermConfig::open`]).
//!
//! A process configured with Redis (the server, `memloop mcp`, an agent
//! embedding the loop) must start, and stay up, while Redis is down: what
//! needs the buffer fails naming Redis and its address, the long-term store
//! works, and the first call after Redis comes back connects.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memloop_core::short_term::*;
use memloop_shortterm::redacted;

use crate::{Error, ErrorClass, Result, Scope, ShortTermConfig};

/// How long a failed connection is remembered before the next call tries
/// again: a burst of calls while Redis is down does not each wait on a
/// connect.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The configured backend: in process, or Redis connected on first use.
pub(crate) fn open(config: &ShortTermConfig, url: &str) -> Result<Arc<dyn ShortTermStore>> {
    let redis = LazyRedis {
        shown: redacted(url),
        config: config.clone(),
        state: Mutex::new(Conn::Never),
    };
    // Connect now when we can, so a misconfiguration shows at start; an
    // unreachable Redis is logged and the caller starts anyway.
    match redis.store() {
        Ok(_) => tracing::debug!(redis = %redis.shown, "short-term store: Redis"),
        Err(e) if e.class() != ErrorClass::InvalidInput => {
            tracing::warn!(error = %e, "starting without Redis: what needs the short-term store fails until it is back");
        }
        // A malformed URL will not get better by waiting.
        Err(e) => return Err(e),
    }
    Ok(Arc::new(redis))
}

/// An error's own words, without the "remote service failed" prefix that
/// our message would otherwise repeat.
fn detail(e: &Error) -> String {
    match e {
        Error::Remote(m) => m.clone(),
        other => other.to_string(),
    }
}

enum Conn {
    Never,
    Up(Arc<dyn ShortTermStore>),
    Down { at: Instant, error: String },
}

struct LazyRedis {
    /// The URL without its password, for messages and logs.
    shown: String,
    config: ShortTermConfig,
    state: Mutex<Conn>,
}

impl LazyRedis {
    /// Transient (`Error::Remote`), so front ends answer "retry may help"
    /// (HTTP 503, exit code 5) rather than blaming the caller.
    fn unavailable(&self, why: impl std::fmt::Display) -> Error {
        Error::Remote(format!(
            "the short-term store (Redis at {}) is unreachable: {why}; sessions and the loop need it, the long-term store works without it",
            self.shown
        ))
    }

    /// The connected backend, connecting if it is not (at most once per
    /// `RETRY_AFTER` after a failure).
    fn store(&self) -> Result<Arc<dyn ShortTermStore>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match &*state {
            Conn::Up(s) => return Ok(s.clone()),
            Conn::Down { at, error } if at.elapsed() < RETRY_AFTER => {
                return Err(self.unavailable(error));
            }
            _ => {}
        }
        match self.config.build() {
            Ok(s) => {
                *state = Conn::Up(s.clone());
                Ok(s)
            }
            // Refused, timed out, or an answer we cannot use yet (a Redis
            // still loading, a password not yet set): all may pass.
            Err(e) if e.class() != ErrorClass::InvalidInput => {
                let error = detail(&e);
                *state = Conn::Down {
                    at: Instant::now(),
                    error: error.clone(),
                };
                Err(self.unavailable(error))
            }
            Err(e) => Err(e),
        }
    }

    /// Runs `op` on the backend; a transient failure says it is Redis.
    fn with<T>(&self, op: impl FnOnce(&dyn ShortTermStore) -> Result<T>) -> Result<T> {
        let store = self.store()?;
        op(store.as_ref()).map_err(|e| match e.class() {
            ErrorClass::Transient => self.unavailable(detail(&e)),
            _ => e,
        })
    }
}

impl ShortTermStore for LazyRedis {
    // Every method delegates, defaults included, so the backend's own
    // versions run.
    fn append(&self, tenant: &str, session: &str, turns: &[Turn]) -> Result<usize> {
        self.with(|s| s.append(tenant, session, turns))
    }

    fn append_for(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        turns: &[Turn],
    ) -> Result<usize> {
        self.with(|s| s.append_for(tenant, user, session, turns))
    }

    fn append_exchange(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        exchange_id: &str,
        turns: &[Turn],
    ) -> Result<bool> {
        self.with(|s| s.append_exchange(tenant, user, session, exchange_id, turns))
    }

    fn clear_user(&self, tenant: &str, user: &str) -> Result<usize> {
        self.with(|s| s.clear_user(tenant, user))
    }

    fn forget_scope(&self, scope: &Scope) -> Result<usize> {
        self.with(|s| s.forget_scope(scope))
    }

    fn read(&self, tenant: &str, session: &str) -> Result<Vec<Turn>> {
        self.with(|s| s.read(tenant, session))
    }

    fn read_window(&self, tenant: &str, session: &str) -> Result<Window> {
        self.with(|s| s.read_window(tenant, session))
    }

    fn stats(&self) -> Result<ShortTermStats> {
        self.with(|s| s.stats())
    }

    fn clear(&self, tenant: &str, session: &str) -> Result<()> {
        self.with(|s| s.clear(tenant, session))
    }

    fn summary(&self, tenant: &str, session: &str) -> Result<Option<Summary>> {
        self.with(|s| s.summary(tenant, session))
    }

    fn set_summary(&self, tenant: &str, session: &str, summary: &Summary) -> Result<()> {
        self.with(|s| s.set_summary(tenant, session, summary))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// A loopback port where nothing listens (bound, then released).
    fn dead_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    /// Redis down: `open` succeeds, every call fails as transient naming
    /// the address without the password, and a later call (past the retry
    /// window) tries again rather than repeating a stale failure forever.
    #[test]
    fn opens_without_redis_and_names_it_on_use() {
        let port = dead_port();
        let config = ShortTermConfig {
            url: Some(format!("redis://:hunter2-secret@127.0.0.1:{port}/0")),
            ..ShortTermConfig::default()
        };
        let store = config.open().expect("opens while Redis is down");
        for _ in 0..2 {
            let e = store.read("t", "s").unwrap_err();
            assert_eq!(e.class(), ErrorClass::Transient, "{e}");
            let m = e.to_string();
            assert!(
                m.contains(&format!("Redis at redis://127.0.0.1:{port}/0")),
                "{m}"
            );
            assert!(!m.contains("hunter2"), "{m}");
            std::thread::sleep(RETRY_AFTER + Duration::from_millis(50));
        }
    }

    /// A URL that is not one fails at open: waiting will not fix it.
    #[test]
    fn a_malformed_url_fails_at_open() {
        let config = ShortTermConfig {
            url: Some("not a url".into()),
            ..ShortTermConfig::default()
        };
        let e = config.open().err().expect("refused");
        assert_eq!(e.class(), ErrorClass::InvalidInput, "{e}");
    }

    /// With Redis up (the real one on this machine), calls go through.
    #[test]
    fn redis_up_works_through_the_wrapper() {
        let config = ShortTermConfig {
            url: Some("redis://127.0.0.1:6379".into()),
            ..ShortTermConfig::default()
        };
        let store = config.open().expect("Redis must run on 127.0.0.1:6379");
        let session = format!("lazy-{}", uuid::Uuid::now_v7());
        let n = store
            .append("lazy-test", &session, &[Turn::new(Role::User, "hello")])
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(store.read("lazy-test", &session).unwrap().len(), 1);
        store.clear("lazy-test", &session).unwrap();
    }
}
