//! The short-term buffer's contract: the turns of one session, in order,
//! shared by whoever holds the same backend. Backends live in memloop-shortterm.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Who said a message. On the wire the lower-case name (`"user"`); any
/// other name is refused where it is read, saying which are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Result<Role> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "system" => Ok(Role::System),
            "tool" => Ok(Role::Tool),
            other => Err(Error::invalid(format!(
                "unknown role {}: use user, assistant, system or tool",
                crate::shown_value(other)
            ))),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Role {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One message of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub role: Role,
    pub content: String,
    /// When it was appended.
    #[serde(with = "crate::time::millis")]
    pub at: i64,
}

impl Turn {
    pub fn new(role: Role, content: impl Into<String>) -> Turn {
        Turn {
            role,
            content: content.into(),
            at: crate::now_millis(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        crate::text::validate_text(&self.content)
    }
}

/// A rolling summary of a session's oldest turns, folded in as they leave
/// the prompt window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub text: String,
    /// How many of the session's first turns it covers.
    pub covers: usize,
}

/// The turns a session still holds, and where they sit in it: a bounded
/// buffer drops a long session's oldest turns, so `turns[0]` is the
/// session's turn number `first` (counted from 0 at the session's start,
/// as [`Summary::covers`] counts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// How many of the session's first turns were dropped before `turns`.
    pub first: usize,
    /// The turns held, oldest first.
    pub turns: Vec<Turn>,
}

impl Window {
    /// The session's length: every turn appended, dropped or held.
    pub fn end(&self) -> usize {
        self.first + self.turns.len()
    }
}

/// What a buffer holds and has let go, for metrics. A figure the backend
/// cannot know cheaply is `None` (Redis keeps no count of its sessions,
/// and expires them itself).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortTermStats {
    /// Sessions held now.
    pub sessions: Option<u64>,
    /// Turns held now, over every session.
    pub turns: Option<u64>,
    /// Bytes held now (the texts and an estimate of their bookkeeping).
    pub bytes: Option<u64>,
    /// Idle sessions dropped to keep within the byte budget, since start.
    pub evictions: Option<u64>,
    /// Sessions dropped idle past the TTL, since start.
    pub expirations: Option<u64>,
    /// The oldest turns of long sessions dropped past `max_turns_stored`,
    /// since start.
    pub trimmed_turns: Option<u64>,
}

/// Where a session's turns are kept. Appends are atomic: turns appended at
/// the same time by several processes are all kept, each call's turns together.
pub trait ShortTermStore: Send + Sync {
    /// Appends turns to a session; returns how many turns it holds after it
    /// (at most the backend's `max_turns_stored`: the oldest are dropped).
    /// The session is not recorded as any user's: prefer [`append_for`]
    /// when the user is known, so a purge of that user can find it.
    ///
    /// [`append_for`]: ShortTermStore::append_for
    fn append(&self, tenant: &str, session: &str, turns: &[Turn]) -> Result<usize> {
        self.append_for(tenant, None, session, turns)
    }
    /// Appends turns to a session and, with a user, records in the same
    /// atomic step that the session holds that user's turns, so
    /// [`clear_user`](ShortTermStore::clear_user) finds it.
    fn append_for(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        turns: &[Turn],
    ) -> Result<usize>;
    /// Appends the turns of one exchange, named by the caller's
    /// `exchange_id`, unless the session already holds that exchange (a
    /// retried call): returns whether it appended. Check and append are one
    /// atomic step, so two retries racing append once. Recorded for `user`
    /// as [`append_for`](ShortTermStore::append_for) does.
    fn append_exchange(
        &self,
        tenant: &str,
        user: Option<&str>,
        session: &str,
        exchange_id: &str,
        turns: &[Turn],
    ) -> Result<bool>;
    /// Forgets every session appended to for `user` in `tenant` (turns and
    /// summaries), for a purge of the user. Returns how many sessions. A
    /// session shared with another user goes too: a purge errs on the side
    /// of forgetting.
    fn clear_user(&self, tenant: &str, user: &str) -> Result<usize>;
    /// What a purge of `scope` forgets here: the scope's session when it
    /// names one, else every session of its user. Returns how many
    /// sessions. An agent-only scope has no sessions of its own (sessions
    /// are recorded by user), so it clears none.
    fn forget_scope(&self, scope: &crate::Scope) -> Result<usize> {
        if let Some(session) = scope.session_id.as_deref() {
            self.clear(&scope.tenant, session)?;
            return Ok(1);
        }
        match scope.user_id.as_deref() {
            Some(user) => self.clear_user(&scope.tenant, user),
            None => Ok(0),
        }
    }
    /// The turns a session holds, oldest first (empty for an unknown
    /// session). A bounded backend may have dropped older ones:
    /// [`read_window`](ShortTermStore::read_window) says how many.
    fn read(&self, tenant: &str, session: &str) -> Result<Vec<Turn>>;
    /// The turns a session holds and how many were dropped before them,
    /// read together. What the loop reads, since it indexes turns from the
    /// session's start (the summary's `covers`). The default is for a
    /// backend that never drops a turn.
    fn read_window(&self, tenant: &str, session: &str) -> Result<Window> {
        Ok(Window {
            first: 0,
            turns: self.read(tenant, session)?,
        })
    }
    /// What the buffer holds and has dropped; the default knows nothing.
    fn stats(&self) -> Result<ShortTermStats> {
        Ok(ShortTermStats::default())
    }
    /// Forgets a session, its summary too.
    fn clear(&self, tenant: &str, session: &str) -> Result<()>;
    /// The session's rolling summary, if one was written.
    fn summary(&self, tenant: &str, session: &str) -> Result<Option<Summary>>;
    /// Replaces the summary. A summary covering fewer turns than the stored
    /// one is ignored, so a slower writer never rolls it back.
    fn set_summary(&self, tenant: &str, session: &str, summary: &Summary) -> Result<()>;
}

/// Checks an append before any backend stores it: the session id and every turn.
pub fn validate_append(session: &str, turns: &[Turn]) -> Result<()> {
    validate_session(session)?;
    turns.iter().try_for_each(Turn::validate)
}

/// Checks a session id: non-empty, at most 256 bytes, no control characters.
pub fn validate_session(session: &str) -> Result<()> {
    if session.trim().is_empty() || session.len() > 256 || session.chars().any(char::is_control) {
        return Err(Error::invalid(
            "the session id must be 1 to 256 bytes without control characters: pass --session ID",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_turns_and_sessions_are_refused() {
        // An unknown role cannot make a Turn: it is refused where it is read.
        assert!(Role::parse("robot").is_err());
        assert!(serde_json::from_str::<Turn>(r#"{"role":"robot","content":"x","at":0}"#).is_err());
        assert!(Turn::new(Role::User, " ").validate().is_err());
        assert!(validate_session("").is_err());
        assert!(validate_session("a\nb").is_err());
        assert!(validate_session("s-1").is_ok());
    }
}
