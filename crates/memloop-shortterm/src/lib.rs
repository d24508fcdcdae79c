//! Short-term buffer backends: [`InProcessBuffer`] (the default: one
//! process, nothing persisted) and [`RedisBuffer`] (shared by every agent
//! process on the same session, surviving their restarts, idle sessions
//! expiring by TTL).

mod redis_buffer;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use memloop_core::short_term::{validate_append, validate_session, ShortTermStore, Summary, Turn};
use memloop_core::Result;

pub use redis_buffer::{redacted, RedisBuffer};

/// Sessions in this process's memory.
#[derive(Default)]
pub struct InProcessBuffer {
    sessions: Mutex<HashMap<(String, String), Vec<Turn>>>,
    summaries: Mutex<HashMap<(String, String), Summary>>,
    /// (tenant, user) → the sessions appended to for that user.
    owners: Mutex<HashMap<(String, String), HashSet<String>>>,
    /// (tenant, session) → the exchanges appended to it.
    exchanges: Mutex<HashMap<(String, String), HashSet<String>>>,
}

impl InProcessBuffer {
    pub fn new() -> Self {
        Self::default()
    }
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
        let mut map = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(user) = user {
            // Recorded while the sessions lock is held: a clear_user that
            // runs next sees both the turns and their owner.
            self.owners
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry((tenant.to_string(), user.to_string()))
                .or_default()
                .insert(session.to_string());
        }
        let list = map
            .entry((tenant.to_string(), session.to_string()))
            .or_default();
        list.extend_from_slice(turns);
        Ok(list.len())
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
        // Held across the check and the append: a racing retry waits, then sees it.
        let mut seen = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        let ids = seen
            .entry((tenant.to_string(), session.to_string()))
            .or_default();
        if ids.contains(exchange_id) {
            return Ok(false);
        }
        self.append_for(tenant, user, session, turns)?;
        ids.insert(exchange_id.to_string());
        Ok(true)
    }

    fn clear_user(&self, tenant: &str, user: &str) -> Result<usize> {
        let mut map = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let sessions = self
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(tenant.to_string(), user.to_string()))
            .unwrap_or_default();
        let mut sums = self.summaries.lock().unwrap_or_else(|p| p.into_inner());
        let mut seen = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        for s in &sessions {
            let key = (tenant.to_string(), s.clone());
            map.remove(&key);
            sums.remove(&key);
            seen.remove(&key);
        }
        Ok(sessions.len())
    }

    fn read(&self, tenant: &str, session: &str) -> Result<Vec<Turn>> {
        validate_session(session)?;
        let map = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        Ok(map
            .get(&(tenant.to_string(), session.to_string()))
            .cloned()
            .unwrap_or_default())
    }

    fn clear(&self, tenant: &str, session: &str) -> Result<()> {
        validate_session(session)?;
        let mut map = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&(tenant.to_string(), session.to_string()));
        let mut sums = self.summaries.lock().unwrap_or_else(|p| p.into_inner());
        sums.remove(&(tenant.to_string(), session.to_string()));
        let mut seen = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        seen.remove(&(tenant.to_string(), session.to_string()));
        Ok(())
    }

    fn summary(&self, tenant: &str, session: &str) -> Result<Option<Summary>> {
        validate_session(session)?;
        let sums = self.summaries.lock().unwrap_or_else(|p| p.into_inner());
        Ok(sums
            .get(&(tenant.to_string(), session.to_string()))
            .cloned())
    }

    fn set_summary(&self, tenant: &str, session: &str, summary: &Summary) -> Result<()> {
        validate_session(session)?;
        let mut sums = self.summaries.lock().unwrap_or_else(|p| p.into_inner());
        let slot = sums
            .entry((tenant.to_string(), session.to_string()))
            .or_default();
        if summary.covers >= slot.covers {
            *slot = summary.clone();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memloop_core::short_term::Role;

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
