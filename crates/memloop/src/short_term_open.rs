//! The configured short-term buffer: in process, or Redis with the
//! `redis` feature (`lazy_redis.rs`: connected on first use, so a
//! long-running process starts while Redis is down). The buffer's types
//! are the core's, re-exported as `memloop::short_term`.

use std::sync::Arc;

use memloop_core::short_term::ShortTermStore;

use crate::{Result, ShortTermConfig};

impl ShortTermConfig {
    /// The backend, connected now: an unreachable Redis is an error here.
    /// For one-shot work that needs the buffer at once; a process that
    /// should start and keep serving without Redis calls [`Self::open`].
    pub fn build(&self) -> Result<Arc<dyn ShortTermStore>> {
        self.validate()?;
        let limits = self.limits();
        Ok(match &self.url {
            Some(url) => redis_now(url, limits)?,
            None => Arc::new(memloop_shortterm::InProcessBuffer::with_limits(limits)),
        })
    }

    /// The bounds the buffer is built with.
    pub fn limits(&self) -> memloop_shortterm::Limits {
        memloop_shortterm::Limits {
            max_turns_stored: self.max_turns_stored,
            ttl_secs: self.ttl_secs,
            max_bytes: self.max_bytes,
        }
    }

    /// The backend for a process that must start, and stay up, while Redis
    /// is down: Redis is tried now and, if unreachable, on use (at most once
    /// a second), each failing call naming Redis and its address without
    /// the password. Only a malformed URL fails here.
    pub fn open(&self) -> Result<Arc<dyn ShortTermStore>> {
        self.validate()?;
        match &self.url {
            None => self.build(),
            Some(url) => redis_on_use(self, url),
        }
    }
}

#[cfg(feature = "redis")]
fn redis_now(url: &str, limits: memloop_shortterm::Limits) -> Result<Arc<dyn ShortTermStore>> {
    Ok(Arc::new(memloop_shortterm::RedisBuffer::connect_with(
        url, limits,
    )?))
}

#[cfg(feature = "redis")]
fn redis_on_use(config: &ShortTermConfig, url: &str) -> Result<Arc<dyn ShortTermStore>> {
    crate::lazy_redis::open(config, url)
}

#[cfg(not(feature = "redis"))]
fn redis_now(_url: &str, _limits: memloop_shortterm::Limits) -> Result<Arc<dyn ShortTermStore>> {
    Err(no_redis())
}

#[cfg(not(feature = "redis"))]
fn redis_on_use(_config: &ShortTermConfig, _url: &str) -> Result<Arc<dyn ShortTermStore>> {
    Err(no_redis())
}

/// A Redis URL configured in a build without Redis.
#[cfg(not(feature = "redis"))]
fn no_redis() -> crate::Error {
    crate::Error::invalid(
        "[short_term] url names a Redis server, but this build of memloop has no Redis support: \
         build it with the `redis` feature (the memloop binary has it), or remove the url to keep sessions in process",
    )
}
