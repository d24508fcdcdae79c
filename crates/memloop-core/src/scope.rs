use serde::{Deserialize, Serialize};

use crate::{shown_value, Error, Result};

/// Who a memory belongs to. `tenant` is the hard boundary (one per API key);
/// inside it the user, or for agent-only memories the agent, names the
/// partition: every index is per partition, so a search never reads another
/// user's vectors. Agent and session narrow a search inside the partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    #[serde(default = "default_tenant")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            tenant: default_tenant(),
            user_id: None,
            agent_id: None,
            session_id: None,
        }
    }
}

fn default_tenant() -> String {
    Scope::DEFAULT_TENANT.to_string()
}

/// The longest id (memory, tenant, user, agent, session) accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// A memory id as a caller gives it: 1 to 256 bytes without control
/// characters (memloop's own ids are UUIDs). Checked before the store is
/// asked, by every front end alike, so an absurd id is the caller's error
/// (`InvalidInput`) rather than a lookup, and is echoed short.
pub fn validate_memory_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "{} is not a memory id: an id is 1 to {MAX_ID_BYTES} bytes without control characters; memloop's ids are UUIDs such as 0193a5c2-7e41-7b8a-9f3e-2d1c4b5a6e7f, as returned by add",
            shown_value(id)
        )));
    }
    Ok(())
}

impl Scope {
    pub const DEFAULT_TENANT: &'static str = "default";

    pub fn user(user: impl Into<String>) -> Self {
        Scope {
            tenant: default_tenant(),
            user_id: Some(user.into()),
            ..Default::default()
        }
    }

    pub fn agent(agent: impl Into<String>) -> Self {
        Scope {
            tenant: default_tenant(),
            agent_id: Some(agent.into()),
            ..Default::default()
        }
    }

    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent_id = Some(agent.into());
        self
    }

    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session_id = Some(session.into());
        self
    }

    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Checks the ids and that a user or an agent is named.
    pub fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("tenant", Some(&self.tenant)),
            ("user", self.user_id.as_ref()),
            ("agent", self.agent_id.as_ref()),
            ("session", self.session_id.as_ref()),
        ] {
            if let Some(v) = value {
                if v.trim().is_empty() {
                    return Err(Error::invalid(format!(
                        "the {name} id is empty: give a non-empty id"
                    )));
                }
                if v.len() > MAX_ID_BYTES || v.chars().any(char::is_control) {
                    return Err(Error::invalid(format!(
                        "the {name} id must be at most {MAX_ID_BYTES} bytes without control characters"
                    )));
                }
            }
        }
        if self.user_id.is_none() && self.agent_id.is_none() {
            return Err(Error::invalid(
                "no scope: pass a user id (--user / user_id) or an agent id (--agent / agent_id)",
            ));
        }
        Ok(())
    }

    /// The partition key: tenant plus user, or tenant plus agent when no user is named.
    pub fn partition(&self) -> Result<String> {
        self.validate()?;
        Ok(match (&self.user_id, &self.agent_id) {
            (Some(u), _) => format!("{}\u{1f}u\u{1f}{u}", self.tenant),
            (None, Some(a)) => format!("{}\u{1f}a\u{1f}{a}", self.tenant),
            (None, None) => return Err(Error::invalid("no scope: pass a user id or an agent id")),
        })
    }

    /// True when a record stored under `stored` is visible to a query in this scope:
    /// same partition, and the same agent / session where the query names one.
    pub fn admits(&self, stored: &Scope) -> bool {
        self.tenant == stored.tenant
            && match &self.user_id {
                Some(u) => stored.user_id.as_ref() == Some(u),
                None => stored.user_id.is_none(),
            }
            && self
                .agent_id
                .as_ref()
                .is_none_or(|a| stored.agent_id.as_ref() == Some(a))
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| stored.session_id.as_ref() == Some(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_ids_are_checked_and_echoed_short_and_escaped() {
        assert!(validate_memory_id("0193a5c2-7e41-7b8a-9f3e-2d1c4b5a6e7f").is_ok());
        assert!(validate_memory_id("no-such-id").is_ok());
        assert!(validate_memory_id(&"x".repeat(MAX_ID_BYTES)).is_ok());
        for bad in [
            "",
            "a\0b",
            "a\nb",
            "\u{1b}[2J",
            &"x".repeat(MAX_ID_BYTES + 1),
            &"é".repeat(2500),
        ] {
            let e = validate_memory_id(bad).unwrap_err();
            assert_eq!(e.class(), crate::ErrorClass::InvalidInput);
            let m = e.to_string();
            assert!(m.contains("UUID"), "{m}");
            assert!(m.len() < 300, "{m}");
            assert!(!m.chars().any(char::is_control), "{m:?}");
        }
        assert_eq!(shown_value("a\"b"), "\"a\\\"b\"");
        assert_eq!(shown_value("a\0b"), "\"a\\0b\"");
        let long = shown_value(&"é".repeat(5000));
        assert!(long.ends_with("… (10000 bytes)"), "{long}");
        assert!(long.chars().count() < 70);
    }

    /// The not-found message echoes a caller's id the same short, escaped way.
    #[test]
    fn not_found_echoes_the_id_short_and_escaped() {
        let m = Error::NotFound("no-such-id".into()).to_string();
        assert!(m.starts_with("no memory with id \"no-such-id\""), "{m}");
        let m = Error::NotFound(format!("{}\n", "z".repeat(5000))).to_string();
        assert!(m.len() < 200, "{m}");
        assert!(m.contains("(5001 bytes)") && !m.contains('\n'), "{m}");
    }

    #[test]
    fn partition_separates_users_and_tenants() {
        let a = Scope::user("alice").partition().unwrap();
        let b = Scope::user("bob").partition().unwrap();
        let a2 = Scope::user("alice").with_tenant("t2").partition().unwrap();
        assert_ne!(a, b);
        assert_ne!(a, a2);
        // An agent-only partition never collides with a user named the same.
        assert_ne!(Scope::agent("alice").partition().unwrap(), a);
    }

    #[test]
    fn missing_scope_is_refused() {
        let err = Scope::default().partition().unwrap_err();
        assert!(err.to_string().contains("--user"));
        assert!(Scope::user(" ").validate().is_err());
    }

    #[test]
    fn admits_narrows_by_agent_and_session() {
        let stored = Scope::user("u").with_agent("a").with_session("s");
        assert!(Scope::user("u").admits(&stored));
        assert!(Scope::user("u").with_agent("a").admits(&stored));
        assert!(!Scope::user("u").with_agent("b").admits(&stored));
        assert!(!Scope::user("v").admits(&stored));
        assert!(!Scope::agent("a").admits(&stored));
    }
}
