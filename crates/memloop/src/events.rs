//! The `memory_write` event of writes outside a turn (`remember`, `add`),
//! so every write that reaches the long-term store is in the log, naming
//! whose it was. A turn logs its own events (`TurnTrace::log`). Texts are
//! never in these events: ids, kinds, sizes and counts only.

use memloop_core::{Event, Kind, Scope};
use serde::Serialize;

/// One write as logged: no text.
#[derive(Debug, Serialize)]
pub(crate) struct WriteLog<'a> {
    pub id: &'a str,
    pub event: Event,
    pub kind: Kind,
    pub bytes: usize,
}

impl<'a> WriteLog<'a> {
    pub fn of(w: &'a crate::write::WriteEvent) -> WriteLog<'a> {
        WriteLog {
            id: &w.id,
            event: w.event,
            kind: w.kind,
            bytes: w.memory.len(),
        }
    }
}

/// Emits `memory_write` for writes made by `source` ("remember", "add") in `scope`.
pub(crate) fn log_writes(scope: &Scope, source: &str, persisted: bool, writes: &[WriteLog<'_>]) {
    let writes_json = serde_json::to_string(writes).unwrap_or_default();
    tracing::info!(
        event = "memory_write",
        source,
        tenant = %scope.tenant,
        user_id = scope.user_id.as_deref().unwrap_or(""),
        agent_id = scope.agent_id.as_deref().unwrap_or(""),
        session_id = scope.session_id.as_deref().unwrap_or(""),
        persisted,
        writes = %writes_json,
        "memory_write"
    );
}
