//! The in-process buffer: sessions in this process's memory, bounded three
//! ways (`Limits`): a session keeps its newest `max_turns_stored` turns, a
//! session idle for `ttl_secs` is removed, and past `max_bytes` in all the
//! least recently appended-to sessions are dropped.
//!
//! There is no sweeper thread: every call first removes the sessions whose
//! TTL has passed (the oldest sit at the front of the recency order, so a
//! call with nothing to expire looks at one entry). A process that makes no
//! call holds its expired sessions until the next one, and nothing reads
//! them meanwhile.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use memloop_core::short_term::{
    validate_append, validate_session, ShortTermStats, ShortTermStore, Summary, Turn, Window,
};
use memloop_core::time::Clock;
use memloop_core::Result;

use crate::Limits;

/// (tenant, session) or (tenant, user).
type Key = (String, String);

/// A position in the recency order: when last appended to, and a sequence
/// number that breaks ties between appends in the same millisecond.
type Stamp = (i64, u64);

/// What the bookkeeping of an entry costs beyond its text, roughly: the
/// budget is on what the process holds, not only on the words.
const TURN_OVERHEAD: usize = std::mem::size_of::<Turn>() + 16;
const SESSION_OVERHEAD: usize = 320;
const ENTRY_OVERHEAD: usize = 48;

/// How often, at most, the eviction log line is written while the budget
/// keeps evicting (its count says how many sessions since the last line).
const EVICTION_LOG_EVERY_MS: i64 = 60_000;

#[derive(Default)]
struct Session {
    turns: VecDeque<Turn>,
    /// Turns dropped from the front: `turns[0]` is the session's turn `dropped`.
    dropped: usize,
    summary: Option<Summary>,
    /// The newest exchange ids appended (a retry comes soon after its
    /// first try), at most `max_turns_stored` of them.
    exchanges: VecDeque<String>,
    /// The users whose owner entries name this session.
    owners: Vec<String>,
    bytes: usize,
    stamp: Stamp,
}

impl Session {
    fn measure(&self, key: &Key) -> usize {
        let turns: usize = self.turns.iter().map(|t| t.content.len()).sum();
        let exchanges: usize = self.exchanges.iter().map(String::len).sum();
        let owners: usize = self.owners.iter().map(|u| u.len() + key.0.len()).sum();
        SESSION_OVERHEAD
            + 2 * (key.0.len() + key.1.len())
            + turns
            + self.turns.len() * TURN_OVERHEAD
            + exchanges
            + (self.exchanges.len() + 2 * self.owners.len()) * ENTRY_OVERHEAD
            + owners
            + self.summary.as_ref().map_or(0, |s| s.text.len())
            + ENTRY_OVERHEAD
    }
}

#[derive(Default)]
struct State {
    sessions: HashMap<Key, Session>,
    /// (tenant, user) → the sessions appended to for that user.
    owners: HashMap<Key, HashSet<String>>,
    /// Sessions by when they were last appended to, oldest first.
    recency: BTreeMap<Stamp, Key>,
    seq: u64,
    bytes: usize,
    turns: usize,
    evictions: u64,
    expirations: u64,
    trimmed: u64,
    /// Evictions not yet in a log line, and when the last line was written.
    unlogged_evictions: u64,
    last_eviction_log: Option<i64>,
}

impl State {
    fn remove(&mut self, key: &Key) -> Option<Session> {
        let s = self.sessions.remove(key)?;
        self.recency.remove(&s.stamp);
        for user in &s.owners {
            let owner = (key.0.clone(), user.clone());
            if let Some(set) = self.owners.get_mut(&owner) {
                set.remove(&key.1);
                if set.is_empty() {
                    self.owners.remove(&owner);
                }
            }
        }
        self.bytes -= s.bytes;
        self.turns -= s.turns.len();
        Some(s)
    }

    /// Removes every session idle for `ttl_ms` or longer at `now`.
    fn sweep(&mut self, now: i64, ttl_ms: i64) {
        if ttl_ms <= 0 {
            return;
        }
        while let Some((&(at, _), key)) = self.recency.first_key_value() {
            if now.saturating_sub(at) < ttl_ms {
                break;
            }
            let key = key.clone();
            self.remove(&key);
            self.expirations += 1;
        }
    }

    /// The session under `key`, made if new; moved to the newest end of
    /// the recency order.
    fn touch(&mut self, key: &Key, now: i64) -> &mut Session {
        self.seq += 1;
        let stamp = (now, self.seq);
        let s = self.sessions.entry(key.clone()).or_default();
        self.recency.remove(&s.stamp);
        s.stamp = stamp;
        self.recency.insert(stamp, key.clone());
        s
    }

    /// Measures the session again after a change, keeping the totals right.
    fn remeasure(&mut self, key: &Key) {
        if let Some(s) = self.sessions.get_mut(key) {
            let bytes = s.measure(key);
            self.bytes = self.bytes - s.bytes + bytes;
            s.bytes = bytes;
        }
    }

    /// Drops the least recently appended-to sessions, never `active` (the
    /// one being written), until the total is within `max_bytes`.
    fn enforce_budget(&mut self, active: &Key, max_bytes: usize, now: i64) {
        if max_bytes == 0 || self.bytes <= max_bytes {
            return;
        }
        let mut evicted = 0u64;
        while self.bytes > max_bytes {
            let Some(key) = self.recency.values().find(|k| *k != active).cloned() else {
                break; // only the active session is left: it stays
            };
            self.remove(&key);
            evicted += 1;
        }
        self.evictions += evicted;
        self.unlogged_evictions += evicted;
        let due = self
            .last_eviction_log
            .is_none_or(|at| now.saturating_sub(at) >= EVICTION_LOG_EVERY_MS);
        if due && self.unlogged_evictions > 0 {
            tracing::warn!(
                sessions_evicted = self.unlogged_evictions,
                evictions_total = self.evictions,
                bytes_held = self.bytes,
                max_bytes,
                "short-term buffer over its byte budget: the least recently used idle sessions were dropped ([short_term] max_bytes)"
            );
            self.unlogged_evictions = 0;
            self.last_eviction_log = Some(now);
        }
    }
}

/// Sessions in this process's memory, within [`Limits`].
pub struct InProcessBuffer {
    state: Mutex<State>,
    limits: Limits,
    clock: Clock,
}

impl Default for InProcessBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcessBuffer {
    /// A buffer with the default [`Limits`].
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    pub fn with_limits(limits: Limits) -> Self {
        InProcessBuffer {
            state: Mutex::default(),
            limits,
            clock: Clock::system(),
        }
    }

    /// Judges idleness by `clock` (tests move a manual one instead of waiting).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The state, with the sessions idle past the TTL already removed.
    fn state(&self) -> (std::sync::MutexGuard<'_, State>, i64) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.clock.now();
        st.sweep(now, self.limits.ttl_ms());
        (st, now)
    }

    /// Appends to the session under `key` with the state locked: records
    /// the owner, trims to `max_turns_stored`, keeps within the budget.
    fn append_locked(
        &self,
        st: &mut State,
        now: i64,
        key: &Key,
        user: Option<&str>,
        turns: &[Turn],
        exchange_id: Option<&str>,
    ) -> usize {
        let max_turns = self.limits.max_turns_stored.max(1);
        let s = st.touch(key, now);
        let mut new_owner = None;
        if let Some(user) = user.filter(|u| !s.owners.iter().any(|o| o == u)) {
            s.owners.push(user.to_string());
            new_owner = Some(user);
        }
        s.turns.extend(turns.iter().cloned());
        let over = s.turns.len().saturating_sub(max_turns);
        s.turns.drain(..over);
        s.dropped += over;
        if let Some(id) = exchange_id {
            s.exchanges.push_back(id.to_string());
            let extra = s.exchanges.len().saturating_sub(max_turns);
            s.exchanges.drain(..extra);
        }
        let held = s.turns.len();
        st.turns = st.turns + turns.len() - over;
        st.trimmed += over as u64;
        if let Some(user) = new_owner {
            st.owners
                .entry((key.0.clone(), user.to_string()))
                .or_default()
                .insert(key.1.clone());
        }
        st.remeasure(key);
        st.enforce_budget(key, self.limits.max_bytes, now);
        held
    }
}

fn key(tenant: &str, session: &str) -> Key {
    (tenant.to_string(), session.to_string())
}

impl ShortTermStore for InProcessBuffer {
    fn append_for(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        turns: &[Turn],
    ) -> Result<usize> {
        validate_append(session, turns)?;
        let (mut st, now) = self.state();
        Ok(self.append_locked(&mut st, now, &key(tenant, session), user, turns, None))
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
        // One lock across the check and the append: a racing retry waits, then sees it.
        let (mut st, now) = self.state();
        let key = key(tenant, session);
        if st
            .sessions
            .get(&key)
            .is_some_and(|s| s.exchanges.iter().any(|x| x == exchange_id))
        {
            return Ok(false);
        }
        self.append_locked(&mut st, now, &key, user, turns, Some(exchange_id));
        Ok(true)
    }

    fn clear_user(&self, tenant: &str, user: &str) -> Result<usize> {
        let (mut st, _) = self.state();
        let sessions = st.owners.remove(&key(tenant, user)).unwrap_or_default();
        for s in &sessions {
            st.remove(&key(tenant, s));
        }
        Ok(sessions.len())
    }

    fn read(&self, tenant: &str, session: &str) -> Result<Vec<Turn>> {
        Ok(self.read_window(tenant, session)?.turns)
    }

    fn read_window(&self, tenant: &str, session: &str) -> Result<Window> {
        validate_session(session)?;
        let (st, _) = self.state();
        Ok(st
            .sessions
            .get(&key(tenant, session))
            .map(|s| Window {
                first: s.dropped,
                turns: s.turns.iter().cloned().collect(),
            })
            .unwrap_or_default())
    }

    fn clear(&self, tenant: &str, session: &str) -> Result<()> {
        validate_session(session)?;
        let (mut st, _) = self.state();
        st.remove(&key(tenant, session));
        Ok(())
    }

    fn summary(&self, tenant: &str, session: &str) -> Result<Option<Summary>> {
        validate_session(session)?;
        let (st, _) = self.state();
        Ok(st
            .sessions
            .get(&key(tenant, session))
            .and_then(|s| s.summary.clone()))
    }

    fn set_summary(&self, tenant: &str, session: &str, summary: &Summary) -> Result<()> {
        validate_session(session)?;
        let (mut st, now) = self.state();
        let key = key(tenant, session);
        let s = st.touch(&key, now);
        if s.summary
            .as_ref()
            .is_none_or(|cur| summary.covers >= cur.covers)
        {
            s.summary = Some(summary.clone());
        }
        st.remeasure(&key);
        st.enforce_budget(&key, self.limits.max_bytes, now);
        Ok(())
    }

    fn stats(&self) -> Result<ShortTermStats> {
        let (st, _) = self.state();
        Ok(ShortTermStats {
            sessions: Some(st.sessions.len() as u64),
            turns: Some(st.turns as u64),
            bytes: Some(st.bytes as u64),
            evictions: Some(st.evictions),
            expirations: Some(st.expirations),
            trimmed_turns: Some(st.trimmed),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use memloop_core::short_term::Role;

    const T0: i64 = 1_800_000_000_000;

    fn limits(max_turns_stored: usize, ttl_secs: u64, max_bytes: usize) -> Limits {
        Limits {
            max_turns_stored,
            ttl_secs,
            max_bytes,
        }
    }

    fn said(text: impl Into<String>) -> Turn {
        Turn::new(Role::User, text)
    }

    #[test]
    fn a_long_session_keeps_its_newest_turns_and_says_how_many_went() {
        let b = InProcessBuffer::with_limits(limits(200, 0, 0));
        for i in 0..5_000 {
            let held = b.append("t", "s", &[said(format!("turn {i}"))]).unwrap();
            assert_eq!(held, (i + 1).min(200));
        }
        let w = b.read_window("t", "s").unwrap();
        assert_eq!(w.first, 4_800);
        assert_eq!(w.turns.len(), 200);
        assert_eq!(w.end(), 5_000);
        assert_eq!(w.turns[0].content, "turn 4800");
        assert_eq!(w.turns[199].content, "turn 4999");
        // A batch larger than the bound keeps its own newest turns.
        let batch: Vec<Turn> = (0..250).map(|i| said(format!("batch {i}"))).collect();
        assert_eq!(b.append("t", "s", &batch).unwrap(), 200);
        let w = b.read_window("t", "s").unwrap();
        assert_eq!((w.first, w.turns[0].content.as_str()), (5_050, "batch 50"));
        let st = b.stats().unwrap();
        assert_eq!(st.turns, Some(200));
        assert_eq!(st.trimmed_turns, Some(5_050));
        assert_eq!(st.sessions, Some(1));
    }

    #[test]
    fn exchange_ids_are_bounded_with_the_turns() {
        let b = InProcessBuffer::with_limits(limits(4, 0, 0));
        for i in 0..10 {
            assert!(b
                .append_exchange("t", None, "s", &format!("x{i}"), &[said(format!("{i}"))])
                .unwrap());
        }
        // A recent retry is still refused; the turns are bounded.
        assert!(!b
            .append_exchange("t", None, "s", "x9", &[said("9")])
            .unwrap());
        assert_eq!(b.read("t", "s").unwrap().len(), 4);
        let (st, _) = b.state();
        assert_eq!(st.sessions[&key("t", "s")].exchanges.len(), 4);
    }

    #[test]
    fn idle_sessions_are_swept_after_the_ttl_by_the_clock() {
        let clock = Clock::manual(T0);
        let b = InProcessBuffer::with_limits(limits(200, 2, 0)).with_clock(clock.clone());
        b.append_for("t", Some("alice"), "idle", &[said("I live in Paris")])
            .unwrap();
        b.append_exchange("t", Some("alice"), "idle", "x1", &[said("again")])
            .unwrap();
        b.set_summary(
            "t",
            "idle",
            &Summary {
                text: "Paris".into(),
                covers: 1,
            },
        )
        .unwrap();
        b.append("t", "busy", &[said("one")]).unwrap();
        clock.advance(1_500).unwrap();
        b.append("t", "busy", &[said("two")]).unwrap();
        clock.advance(499).unwrap();
        assert_eq!(b.read("t", "idle").unwrap().len(), 2, "1.999 s idle: kept");
        clock.advance(1).unwrap();
        // Two seconds without an append: gone, summary, exchange ids and
        // owner entry with it; the session appended to since stays.
        assert!(b.read("t", "idle").unwrap().is_empty());
        assert_eq!(b.summary("t", "idle").unwrap(), None);
        assert_eq!(b.read("t", "busy").unwrap().len(), 2);
        {
            let (st, _) = b.state();
            assert!(!st.sessions.contains_key(&key("t", "idle")));
            assert!(st.owners.is_empty(), "the owner entry went with it");
            assert_eq!(st.recency.len(), 1);
        }
        assert!(
            b.append_exchange("t", None, "idle", "x1", &[said("new")])
                .unwrap(),
            "its exchange ids went too"
        );
        assert_eq!(b.clear_user("t", "alice").unwrap(), 0);
        let st = b.stats().unwrap();
        assert_eq!(st.expirations, Some(1));
        assert_eq!(st.sessions, Some(2));
        assert_eq!(st.turns, Some(3));
        // Swept by any call, not only a read of the session itself.
        clock.advance(10_000).unwrap();
        assert_eq!(b.stats().unwrap().sessions, Some(0));
        assert_eq!(b.stats().unwrap().bytes, Some(0));
        assert_eq!(b.stats().unwrap().expirations, Some(3));
    }

    #[test]
    fn ttl_zero_never_expires() {
        let clock = Clock::manual(T0);
        let b = InProcessBuffer::with_limits(limits(200, 0, 0)).with_clock(clock.clone());
        b.append("t", "s", &[said("kept")]).unwrap();
        clock.advance(i64::MAX / 2).unwrap();
        assert_eq!(b.read("t", "s").unwrap().len(), 1);
    }

    #[test]
    fn the_byte_budget_drops_the_least_recently_used_idle_session() {
        let clock = Clock::manual(T0);
        let text = "x".repeat(1_000);
        // Room for about three sessions of ten 1 KB turns.
        let b = InProcessBuffer::with_limits(limits(200, 0, 36_000)).with_clock(clock.clone());
        for s in ["a", "b", "c"] {
            clock.advance(1).unwrap();
            let turns: Vec<Turn> = (0..10).map(|_| said(text.clone())).collect();
            b.append_for("t", Some("u"), s, &turns).unwrap();
        }
        assert_eq!(b.stats().unwrap().evictions, Some(0));
        // "a" is used again, so "b" is now the least recently used.
        clock.advance(1).unwrap();
        b.append("t", "a", &[said("back")]).unwrap();
        clock.advance(1).unwrap();
        let turns: Vec<Turn> = (0..10).map(|_| said(text.clone())).collect();
        b.append("t", "d", &turns).unwrap();
        assert!(b.read("t", "b").unwrap().is_empty(), "b was evicted");
        for s in ["a", "c", "d"] {
            assert!(!b.read("t", s).unwrap().is_empty(), "{s} kept");
        }
        let st = b.stats().unwrap();
        assert_eq!(st.evictions, Some(1));
        assert!(st.bytes.unwrap() <= 36_000, "{st:?}");
        // The owner entry no longer names it.
        let (g, _) = b.state();
        assert!(!g.owners[&key("t", "u")].contains("b"));
        drop(g);
        // One session larger than the whole budget is the active one: it
        // stays, every other goes.
        let huge: Vec<Turn> = (0..50).map(|_| said(text.clone())).collect();
        b.append("t", "huge", &huge).unwrap();
        assert_eq!(b.read("t", "huge").unwrap().len(), 50);
        assert_eq!(b.stats().unwrap().sessions, Some(1));
        assert_eq!(b.stats().unwrap().evictions, Some(4));
    }

    #[test]
    fn tenants_never_see_each_others_sessions_after_eviction() {
        let clock = Clock::manual(T0);
        let text = "y".repeat(2_000);
        let b = InProcessBuffer::with_limits(limits(200, 0, 30_000)).with_clock(clock.clone());
        for round in 0..40 {
            for tenant in ["t1", "t2"] {
                clock.advance(1).unwrap();
                let s = format!("s{}", round % 7);
                b.append_for(
                    tenant,
                    Some("same-user"),
                    &s,
                    &[said(format!("{tenant} {round} {text}"))],
                )
                .unwrap();
            }
        }
        assert!(b.stats().unwrap().evictions.unwrap() > 0);
        for tenant in ["t1", "t2"] {
            for s in 0..7 {
                for t in b.read(tenant, &format!("s{s}")).unwrap() {
                    assert!(
                        t.content.starts_with(&format!("{tenant} ")),
                        "{tenant}: {}",
                        t.content
                    );
                }
            }
        }
        // A purge of one tenant's user leaves the other's sessions alone.
        let held_t2 = (0..7)
            .filter(|s| !b.read("t2", &format!("s{s}")).unwrap().is_empty())
            .count();
        b.clear_user("t1", "same-user").unwrap();
        let after = (0..7)
            .filter(|s| !b.read("t2", &format!("s{s}")).unwrap().is_empty())
            .count();
        assert_eq!(held_t2, after);
        assert!((0..7).all(|s| b.read("t1", &format!("s{s}")).unwrap().is_empty()));
    }

    /// The running totals match the sessions after any mix of operations.
    #[test]
    fn totals_stay_consistent() {
        let clock = Clock::manual(T0);
        let b = InProcessBuffer::with_limits(limits(5, 3, 4_000)).with_clock(clock.clone());
        for i in 0..500u32 {
            clock.advance(i64::from(i % 700)).unwrap();
            let s = format!("s{}", i % 11);
            let t = if i % 3 == 0 { "a" } else { "b" };
            match i % 9 {
                0 => b.clear(t, &s).unwrap(),
                1 => {
                    b.clear_user(t, "u").unwrap();
                }
                2 => b
                    .set_summary(
                        t,
                        &s,
                        &Summary {
                            text: "sum".into(),
                            covers: i as usize,
                        },
                    )
                    .unwrap(),
                3 => {
                    b.append_exchange(t, Some("u"), &s, &format!("x{}", i % 4), &[said("ex")])
                        .unwrap();
                }
                _ => {
                    b.append_for(t, Some("u"), &s, &[said(format!("{i}")), said("r")])
                        .unwrap();
                }
            }
            let (st, _) = b.state();
            let turns: usize = st.sessions.values().map(|s| s.turns.len()).sum();
            let bytes: usize = st.sessions.iter().map(|(k, s)| s.measure(k)).sum();
            assert_eq!(st.turns, turns);
            assert_eq!(st.bytes, bytes);
            assert_eq!(st.recency.len(), st.sessions.len());
            for ((tenant, _), set) in &st.owners {
                for s in set {
                    assert!(
                        st.sessions.contains_key(&key(tenant, s)),
                        "owner names a gone session"
                    );
                }
            }
        }
    }
}
