//! The short-term backend as the server holds it. With Redis configured the
//! server must start, and stay up, while Redis is down: the routes that
//! need it answer 503 naming Redis and its address, everything else works,
//! and the first call after Redis comes back connects.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memloop::short_term::{ShortTermStore, Summary, Turn};
use memloop::{Error, ErrorClass, Result, ShortTermConfig};

/// How long a failed connection is remembered before the next call tries
/// again: a burst of requests while Redis is down does not each wait on a
/// connect.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The configured backend: in process, or Redis connected on first use.
pub fn open(config: &ShortTermConfig) -> Result<Arc<dyn ShortTermStore>> {
    match &config.url {
        None => config.build(),
        Some(url) => {
            let redis = LazyRedis {
                shown: redacted(url),
                config: config.clone(),
                state: Mutex::new(Conn::Never),
            };
            // Connect now when we can, so a misconfiguration shows at start;
            // a refusal is logged and the server starts anyway.
            match redis.store() {
                Ok(_) => tracing::info!(redis = %redis.shown, "short-term store: Redis"),
                Err(e) if e.class() != ErrorClass::InvalidInput => {
                    tracing::warn!(error = %e, "starting without Redis: the routes that need it answer 503 until it is back");
                }
                // A malformed URL will not get better by waiting.
                Err(e) => return Err(e),
            }
            Ok(Arc::new(redis))
        }
    }
}

/// `redis://user:secret@host:6379/0` as `redis://host:6379/0`: messages and
/// logs name the server, never its password.
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    format!("{scheme}://{rest}")
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
    shown: String,
    config: ShortTermConfig,
    state: Mutex<Conn>,
}

impl LazyRedis {
    fn unavailable(&self, why: impl std::fmt::Display) -> Error {
        Error::Remote(format!(
            "the short-term store (Redis at {}) is unreachable: {why}. Sessions, /v1/context and /v1/turn need it; the long-term routes work without it",
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

    fn clear_user(&self, tenant: &str, user: &str) -> Result<usize> {
        self.with(|s| s.clear_user(tenant, user))
    }

    fn forget_scope(&self, scope: &memloop::Scope) -> Result<usize> {
        self.with(|s| s.forget_scope(scope))
    }

    fn read(&self, tenant: &str, session: &str) -> Result<Vec<Turn>> {
        self.with(|s| s.read(tenant, session))
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
    use super::*;

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            redacted("redis://user:s3cret@cache.internal:6379/2"),
            "redis://cache.internal:6379/2"
        );
        assert_eq!(redacted("redis://:p@127.0.0.1:1"), "redis://127.0.0.1:1");
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redacted("rediss://a@b@host/0?x=@"), "rediss://host/0?x=@");
    }
}
