//! The Redis backend: a session is a list of JSON turns under
//! `{prefix}:{tenant}:{session}`. RPUSH, LTRIM and EXPIRE run in one
//! MULTI/EXEC, so concurrent appends from several processes interleave
//! whole calls and lose nothing but the oldest turns past
//! `max_turns_stored`, and a session idle for the TTL disappears.
//!
//! How many turns the session has had in all is a counter beside the list
//! (`…:total`), raised by INCRBY in the same MULTI and given the same TTL:
//! a read (LRANGE and GET, one MULTI) answers the turns held and, as the
//! total less their number, how many were dropped before them
//! ([`Window::first`]), which the loop needs to index turns as the
//! summary counts them. A list older than its counter (written before
//! counters) reads as dropping none.
//!
//! The exchange ids of a session (`…:exchanges`, a set, for idempotent
//! records) are bounded too: each id is also pushed on `…:exchange-order`,
//! and past `max_turns_stored` ids the oldest leave both.
//!
//! Which sessions hold a user's turns is a set of session ids under
//! `{prefix}#user:["tenant","user"]` (a JSON pair: tenant and user ids may
//! hold colons, and `#` keeps it apart from every session key), added to in
//! the same MULTI as the append and given the same idle TTL, so it outlives
//! every session it names. A purge of the user deletes the sessions it names.

use std::sync::Mutex;

use std::sync::atomic::{AtomicU64, Ordering};

use memloop_core::short_term::{
    validate_append, validate_session, ShortTermStats, ShortTermStore, Summary, Turn, Window,
};
use memloop_core::{Error, Result, StoreError};

pub struct RedisBuffer {
    client: redis::Client,
    conn: Mutex<Option<redis::Connection>>,
    prefix: String,
    ttl_secs: u64,
    max_turns_stored: usize,
    /// Turns this handle's appends trimmed off (Redis keeps no such count).
    trimmed: AtomicU64,
}

/// The keys beside a session's list.
const SIDE_KEYS: [&str; 4] = ["summary", "exchanges", "exchange-order", "total"];

fn redis_err(e: redis::RedisError) -> Error {
    if e.is_io_error() || e.is_connection_refusal() || e.is_timeout() || e.is_connection_dropped() {
        Error::Remote(format!("redis: {e}"))
    } else {
        Error::Storage(StoreError::from_source(e).with_context("redis"))
    }
}

impl RedisBuffer {
    /// Connects to `url` (`redis://host:port/db`). Sessions expire after
    /// `ttl_secs` without an append (0: never) and keep their newest
    /// [`DEFAULT_MAX_TURNS_STORED`](crate::DEFAULT_MAX_TURNS_STORED) turns
    /// ([`Self::with_max_turns_stored`] sets another number).
    pub fn connect(url: &str, ttl_secs: u64) -> Result<RedisBuffer> {
        let client = redis::Client::open(url).map_err(|e| {
            Error::invalid(format!(
                "{:?} is not a Redis URL ({e}): use redis://host:port",
                redacted(url)
            ))
        })?;
        let conn = client.get_connection().map_err(redis_err)?;
        Ok(RedisBuffer {
            client,
            conn: Mutex::new(Some(conn)),
            prefix: "memloop:st".into(),
            ttl_secs,
            max_turns_stored: crate::DEFAULT_MAX_TURNS_STORED,
            trimmed: AtomicU64::new(0),
        })
    }

    /// Connects with `limits` (its `max_bytes` is the in-process buffer's:
    /// Redis keeps to its own `maxmemory`).
    pub fn connect_with(url: &str, limits: crate::Limits) -> Result<RedisBuffer> {
        Ok(Self::connect(url, limits.ttl_secs)?.with_max_turns_stored(limits.max_turns_stored))
    }

    /// A session keeps its newest `n` turns (at least 1).
    pub fn with_max_turns_stored(mut self, n: usize) -> Self {
        self.max_turns_stored = n.max(1);
        self
    }

    /// The session's list and the keys beside it, the list first.
    fn session_keys(&self, tenant: &str, session: &str) -> Vec<String> {
        let key = self.key(tenant, session);
        let mut keys: Vec<String> = SIDE_KEYS.iter().map(|s| format!("{key}:{s}")).collect();
        keys.insert(0, key);
        keys
    }

    /// Counts what an append that left the list `len` long trimmed off.
    fn count_trimmed(&self, len: usize, appended: usize) {
        let over = len.saturating_sub(self.max_turns_stored).min(appended);
        if over > 0 {
            self.trimmed.fetch_add(over as u64, Ordering::Relaxed);
        }
    }

    /// Keys under another prefix (tests, or several deployments on one Redis).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    fn key(&self, tenant: &str, session: &str) -> String {
        format!("{}:{}:{}", self.prefix, tenant, session)
    }

    fn user_key(&self, tenant: &str, user: &str) -> Result<String> {
        let pair =
            serde_json::to_string(&(tenant, user)).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(format!("{}#user:{pair}", self.prefix))
    }

    /// Runs `f` on the connection, reconnecting once if it was dropped.
    fn with_conn<T>(
        &self,
        f: impl Fn(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        for attempt in 0..2 {
            if guard.is_none() {
                *guard = Some(self.client.get_connection().map_err(redis_err)?);
            }
            let Some(conn) = guard.as_mut() else { continue };
            match f(conn) {
                Ok(v) => return Ok(v),
                Err(e) if attempt == 0 && (e.is_io_error() || e.is_connection_dropped()) => {
                    *guard = None
                }
                Err(e) => return Err(redis_err(e)),
            }
        }
        Err(Error::Remote("redis: the connection dropped twice".into()))
    }
}

impl ShortTermStore for RedisBuffer {
    fn append_for(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        turns: &[Turn],
    ) -> Result<usize> {
        validate_append(session, turns)?;
        if turns.is_empty() {
            return Ok(self.read(tenant, session)?.len());
        }
        let values = encode(turns)?;
        let key = self.key(tenant, session);
        let total = format!("{key}:total");
        let owner = user.map(|u| self.user_key(tenant, u)).transpose()?;
        let keep = self.max_turns_stored as i64;
        let len = self.with_conn(|c| {
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("RPUSH").arg(&key).arg(&values);
            pipe.cmd("LTRIM").arg(&key).arg(-keep).arg(-1).ignore();
            pipe.cmd("INCRBY").arg(&total).arg(values.len()).ignore();
            if self.ttl_secs > 0 {
                pipe.cmd("EXPIRE").arg(&key).arg(self.ttl_secs).ignore();
                pipe.cmd("EXPIRE").arg(&total).arg(self.ttl_secs).ignore();
            }
            if let Some(owner) = &owner {
                pipe.cmd("SADD").arg(owner).arg(session).ignore();
                if self.ttl_secs > 0 {
                    pipe.cmd("EXPIRE").arg(owner).arg(self.ttl_secs).ignore();
                }
            }
            let (len,): (usize,) = pipe.query(c)?;
            Ok(len)
        })?;
        self.count_trimmed(len, values.len());
        Ok(len.min(self.max_turns_stored))
    }

    fn append_exchange(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        exchange_id: &str,
        turns: &[Turn],
    ) -> Result<bool> {
        validate_append(session, turns)?;
        let values = encode(turns)?;
        let key = self.key(tenant, session);
        let owner = user.map(|u| self.user_key(tenant, u)).transpose()?;
        // The session's exchange ids are a set beside its list; the check,
        // the append, the trims and the owner's record are one script, so
        // atomic. Answers the list's length before its trim (-1: a replay).
        let script = redis::Script::new(
            r#"if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return -1 end
local keep = tonumber(ARGV[4])
redis.call('RPUSH', KEYS[3], ARGV[1])
while redis.call('LLEN', KEYS[3]) > keep do
  redis.call('SREM', KEYS[2], redis.call('LPOP', KEYS[3]))
end
local len = redis.call('LLEN', KEYS[1])
for i = 5, #ARGV do len = redis.call('RPUSH', KEYS[1], ARGV[i]) end
redis.call('LTRIM', KEYS[1], -keep, -1)
redis.call('INCRBY', KEYS[4], #ARGV - 4)
local ttl = tonumber(ARGV[2])
if KEYS[5] then redis.call('SADD', KEYS[5], ARGV[3]) end
if ttl > 0 then
  for _, k in ipairs(KEYS) do redis.call('EXPIRE', k, ttl) end
end
return len"#,
        );
        let keys = self.session_keys(tenant, session);
        let len = self.with_conn(|c| {
            let mut call = script.key(&key);
            call.key(&keys[2]).key(&keys[3]).key(&keys[4]);
            if let Some(owner) = &owner {
                call.key(owner);
            }
            call.arg(exchange_id)
                .arg(self.ttl_secs)
                .arg(session)
                .arg(self.max_turns_stored)
                .arg(&values)
                .invoke::<i64>(c)
        })?;
        if len < 0 {
            return Ok(false);
        }
        self.count_trimmed(len as usize, values.len());
        Ok(true)
    }

    fn clear_user(&self, tenant: &str, user: &str) -> Result<usize> {
        let owner = self.user_key(tenant, user)?;
        let sessions: Vec<String> =
            self.with_conn(|c| redis::cmd("SMEMBERS").arg(&owner).query(c))?;
        if sessions.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = sessions
            .iter()
            .flat_map(|s| self.session_keys(tenant, s))
            .collect();
        // SREM only the sessions read above: one appended to meanwhile stays
        // recorded (its turns came after the purge, and a later purge finds it).
        self.with_conn(|c| {
            redis::pipe()
                .atomic()
                .cmd("DEL")
                .arg(&keys)
                .ignore()
                .cmd("SREM")
                .arg(&owner)
                .arg(&sessions)
                .ignore()
                .query::<()>(c)
        })?;
        Ok(sessions.len())
    }

    fn read(&self, tenant: &str, session: &str) -> Result<Vec<Turn>> {
        Ok(self.read_window(tenant, session)?.turns)
    }

    fn read_window(&self, tenant: &str, session: &str) -> Result<Window> {
        validate_session(session)?;
        let key = self.key(tenant, session);
        let total = format!("{key}:total");
        // One MULTI: the list and its counter as of the same moment.
        let (raw, total): (Vec<String>, Option<usize>) = self.with_conn(|c| {
            redis::pipe()
                .atomic()
                .cmd("LRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .cmd("GET")
                .arg(&total)
                .query(c)
        })?;
        let turns = raw
            .iter()
            .map(|s| {
                serde_json::from_str(s).map_err(|e| {
                    Error::Storage(StoreError::from_source(e).with_context(format!(
                        "redis key {key} holds a turn that is not memloop's JSON"
                    )))
                })
            })
            .collect::<Result<Vec<Turn>>>()?;
        Ok(Window {
            first: total.unwrap_or(0).saturating_sub(turns.len()),
            turns,
        })
    }

    fn stats(&self) -> Result<ShortTermStats> {
        Ok(ShortTermStats {
            trimmed_turns: Some(self.trimmed.load(Ordering::Relaxed)),
            ..ShortTermStats::default()
        })
    }

    fn clear(&self, tenant: &str, session: &str) -> Result<()> {
        validate_session(session)?;
        let keys = self.session_keys(tenant, session);
        self.with_conn(|c| redis::cmd("DEL").arg(&keys).query::<i64>(c))?;
        Ok(())
    }

    fn summary(&self, tenant: &str, session: &str) -> Result<Option<Summary>> {
        validate_session(session)?;
        let key = format!("{}:summary", self.key(tenant, session));
        let raw: Option<String> = self.with_conn(|c| redis::cmd("GET").arg(&key).query(c))?;
        raw.map(|s| {
            serde_json::from_str(&s).map_err(|e| {
                Error::Storage(
                    StoreError::from_source(e)
                        .with_context(format!("redis key {key} is not a memloop summary")),
                )
            })
        })
        .transpose()
    }

    fn set_summary(&self, tenant: &str, session: &str, summary: &Summary) -> Result<()> {
        validate_session(session)?;
        let key = format!("{}:summary", self.key(tenant, session));
        let value = serde_json::to_string(summary).map_err(|e| Error::Internal(e.to_string()))?;
        // Compare and set in one script: concurrent writers never roll the
        // summary back to one covering fewer turns.
        let script = redis::Script::new(
            r#"local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, old = pcall(cjson.decode, cur)
  if ok and old.covers and old.covers > tonumber(ARGV[2]) then return 0 end
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1"#,
        );
        self.with_conn(|c| {
            script
                .key(&key)
                .arg(&value)
                .arg(summary.covers)
                .arg(self.ttl_secs)
                .invoke::<i64>(c)
        })?;
        Ok(())
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

/// The turns as the list holds them: one JSON document each.
fn encode(turns: &[Turn]) -> Result<Vec<String>> {
    turns
        .iter()
        .map(serde_json::to_string)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Internal(e.to_string()))
}

#[cfg(test)]
mod redaction_tests {
    #![allow(clippy::unwrap_used)]
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

    #[test]
    fn a_malformed_url_is_named_without_its_password() {
        let err = RedisBuffer::connect("redis://user:s3cret@[bad/0", 0)
            .err()
            .unwrap()
            .to_string();
        assert!(!err.contains("s3cret"), "{err}");
        assert!(err.contains("is not a Redis URL"), "{err}");
    }
}
