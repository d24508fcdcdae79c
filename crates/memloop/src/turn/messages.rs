//! Mem0's `add`: a conversation's messages stored as given (`infer: false`)
//! or each user message distilled through the loop's gate and write
//! pipeline (`infer: true`). The REST server and the Python package both
//! add through here, so a list of messages means the same on both.

use memloop_core::short_term::Role;
use memloop_core::{Error, Kind, NewMemory, Result, Scope, WriteResult};
use serde_json::{json, Map, Value};

use super::{MemoryLoop, RememberOptions};
use crate::write::WriteEvent;

/// The messages and how to add them.
#[derive(Debug, Clone, Default)]
pub struct AddMessages {
    /// Oldest first.
    pub messages: Vec<(Role, String)>,
    /// The messages came as a list (not one bare string): each memory
    /// stored as given then carries its message's role in its metadata, as
    /// Mem0 does.
    pub from_list: bool,
    /// Distil facts from the user messages (true) or store every
    /// non-system message as given (false).
    pub infer: bool,
    /// Stored on every memory written (as given or distilled).
    pub metadata: Map<String, Value>,
    /// As given only: the kind and importance of each memory.
    pub kind: Kind,
    pub importance: Option<f32>,
    /// When what is written expires (ms); each kind's default TTL when absent.
    pub expires_at: Option<i64>,
    /// When the messages were said (ms); now when absent.
    pub at: Option<i64>,
}

/// What adding wrote.
#[derive(Debug, Clone)]
pub enum Added {
    /// One memory per message, as given.
    Stored(Vec<WriteResult>),
    /// The write pipeline's events, and why a message wrote nothing.
    Distilled {
        events: Vec<WriteEvent>,
        notes: Vec<String>,
    },
}

impl Added {
    /// The answer Mem0's clients read: `{"results": [...]}` (plus `notes`
    /// when distilling).
    pub fn answer(&self) -> Value {
        match self {
            Added::Stored(written) => json!({ "results": written }),
            Added::Distilled { events, notes } => json!({ "results": events, "notes": notes }),
        }
    }
}

impl MemoryLoop {
    /// Adds `add.messages` to the long-term store of `scope`. Every text is
    /// checked before anything is written.
    pub fn add_messages(&self, scope: &Scope, add: AddMessages) -> Result<Added> {
        scope.validate()?;
        for (_, text) in &add.messages {
            memloop_core::text::validate_text(text)?;
        }
        if !add.infer {
            let memories = as_given(add)?;
            return Ok(Added::Stored(self.memory.add_batch(scope, memories)?));
        }
        if !add.messages.iter().any(|(role, _)| *role == Role::User) {
            return Err(Error::invalid(
                "infer: true distils facts from user messages and none was given (send infer: false to store text as given)",
            ));
        }
        // The loop's remember for each user message: the configured gate (a
        // greeting is not distilled), the configured writer, the message
        // before it as context. Idempotent: the same message in the same
        // session is the same turn.
        let mut events = Vec::new();
        let mut notes = Vec::new();
        let mut previous: Option<&str> = None;
        for (role, text) in &add.messages {
            if *role == Role::User {
                let options = RememberOptions {
                    context: previous,
                    expires_at: add.expires_at,
                    at: add.at,
                    metadata: Some(&add.metadata).filter(|m| !m.is_empty()),
                    ..RememberOptions::default()
                };
                let r = self.remember(scope, text, options)?;
                if !r.gate.persist {
                    notes.push(format!("a user message was not kept: {}", r.gate.reason));
                }
                events.extend(r.events);
                notes.extend(r.notes);
            }
            previous = Some(text);
        }
        Ok(Added::Distilled { events, notes })
    }
}

/// `infer: false`: every non-system message becomes one memory.
fn as_given(add: AddMessages) -> Result<Vec<NewMemory>> {
    let memories: Vec<NewMemory> = add
        .messages
        .into_iter()
        .filter(|(role, _)| *role != Role::System)
        .map(|(role, text)| {
            let mut meta = add.metadata.clone();
            if add.from_list {
                meta.entry("role").or_insert_with(|| role.as_str().into());
            }
            let mut m = NewMemory::text(text)
                .kind(add.kind)
                .metadata(Value::Object(meta));
            m.importance = add.importance;
            m.expires_at = add.expires_at;
            m.valid_from = add.at;
            m
        })
        .collect();
    if memories.is_empty() {
        return Err(Error::invalid(
            "nothing to add: give at least one message that is not a system message",
        ));
    }
    Ok(memories)
}
