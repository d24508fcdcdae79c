//! The tools' arguments. Their doc comments become the JSON Schema
//! descriptions an MCP client shows the model, so they say what to pass.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whose memories a call is about: a user, optionally narrowed to one agent
/// and/or one session. Flattened into the tools' arguments, so the three
/// fields sit at the top level of each call, next to the tool's own, and
/// the field docs below are what every tool's schema shows for them.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScopeArgs {
    /// The user the memories belong to: whose memories are searched,
    /// written or deleted.
    pub user_id: String,
    /// An agent: searches and deletions keep to the memories this agent
    /// wrote; writes record it as their author.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// A session (run): searches and deletions keep to the memories written
    /// in it; writes record it as the session they were said in.
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for, in natural language (searched by meaning and by keyword).
    pub query: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// How many memories to return, 1 to 1000 (default 10).
    #[serde(default)]
    pub top_k: Option<usize>,
    /// Metadata filter: a Mem0-style object such as {"topic": "food"} or
    /// {"AND": [{"topic": "food"}, {"rating": {"gte": 4}}]}, or a string such
    /// as 'topic = "food" AND rating >= 4'.
    #[serde(default)]
    pub filters: Option<Value>,
    /// Drop memories scoring below this (0 to 1).
    #[serde(default)]
    pub min_score: Option<f32>,
    /// How much meaning counts in the ranking, 0 to 10 (default 0.5).
    #[serde(default)]
    pub vector_weight: Option<f32>,
    /// How much the query's words count in the ranking, 0 to 10 (default
    /// 1). Not both 0.
    #[serde(default)]
    pub keyword_weight: Option<f32>,
    /// Also search superseded and deleted memories (each says so), to find
    /// what used to be true.
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// Return each memory's full record (metadata, provenance, every
    /// timestamp, per-signal scores) instead of the compact form: id,
    /// memory, score, kind, date and, when stale, superseded_by.
    #[serde(default)]
    pub full: Option<bool>,
    /// When the question is asked, for the time its words name ("last
    /// week", "in May", "the last session"): YYYY-MM-DD (its end) or RFC
    /// 3339. Default: now.
    #[serde(default)]
    pub now: Option<String>,
    /// What a time the query names does: "boost" (default: memories from
    /// that time rank higher), "filter" (only they are searched) or "off".
    #[serde(default)]
    pub time_mode: Option<String>,
    /// Search what was true at this time (YYYY-MM-DD: its end, or RFC
    /// 3339) instead of now: superseded and deleted memories as they were.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Also return memories linked to the best hits through a person,
    /// place or thing they both name (default: the server's [search] expand).
    #[serde(default)]
    pub expand: Option<bool>,
    /// Links followed from a hit when expanding, 1 to 3; giving it turns
    /// expansion on.
    #[serde(default)]
    pub hops: Option<usize>,
    /// false: skip the configured reranker for this search; true: ask for it.
    #[serde(default)]
    pub rerank: Option<bool>,
    /// How many of the best hits the reranker reorders, 1 to 200.
    #[serde(default)]
    pub rerank_top_n: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The memory, stored as given (no extraction), at most 32 KiB.
    pub text: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// A JSON object stored with the memory, usable in search filters.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// fact (default), episode or procedure.
    #[serde(default)]
    pub kind: Option<String>,
    /// Forget the memory after this long: 30s, 15m, 12h, 7d or 2w. Without
    /// it the kind's default applies (episodes 180 days, facts kept).
    #[serde(default)]
    pub ttl: Option<String>,
    /// When it was said, to write a past conversation with its own times:
    /// Unix seconds (as Mem0 sends it), RFC 3339 or YYYY-MM-DD. Now when
    /// absent. Places the session on the time axis (memory_sessions).
    #[serde(default)]
    pub timestamp: Option<Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// What the user said. Facts worth keeping are distilled from it and
    /// reconciled with what is stored (ADD, UPDATE, DELETE or NOOP).
    pub text: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Write even when the gate judges the text not worth keeping (small talk).
    #[serde(default)]
    pub skip_gate: Option<bool>,
    /// When it was said, to write a past conversation with its own times:
    /// Unix seconds (as Mem0 sends it), RFC 3339 or YYYY-MM-DD. Now when
    /// absent. Places the session on the time axis (memory_sessions).
    #[serde(default)]
    pub timestamp: Option<Value>,
}

// The user's sessions; an agent narrows them to those it wrote in, a
// session to that one (keeping its ordinal among all of the user's).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionsArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EntitiesArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// At most this many, most mentioned first (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The graph as it was at this moment (RFC 3339 or YYYY-MM-DD).
    #[serde(default)]
    pub as_of: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LinksArgs {
    /// The entity's name, any case, as memory_entities lists it.
    pub entity: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The links as they were at this moment (RFC 3339 or YYYY-MM-DD): the
    /// relations that held then.
    #[serde(default)]
    pub as_of: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetArgs {
    /// The memory's id (as returned by memory_add, memory_search, memory_remember).
    pub id: String,
    /// Also return the memory if it was deleted, superseded or expired
    /// (status says which, superseded_by names the replacement). Without
    /// it such a memory is a not_found error.
    #[serde(default)]
    pub include_deleted: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryArgs {
    /// The memory's id.
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    // Every memory of the scope: all the user's, or only the agent's and/or
    // the session's when named; with `id`, that one memory of the scope.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Delete only this memory (it must be the user's): memory_get then
    /// answers not_found, and its history stays. Without it, every memory
    /// of the user (or of the agent / session named) is deleted.
    #[serde(default)]
    pub id: Option<String>,
    /// Also erase their history and every copy of their text from the
    /// store's files (default: the history is kept). Not with `id`.
    #[serde(default)]
    pub purge: Option<bool>,
}

// The session is required here (the conversation's turns are read from it),
// so these fields are not a flattened `ScopeArgs`, whose session is
// optional: `ContextArgs::scope` hands them over as one.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// The user's new message.
    pub input: String,
    /// Whose memories to recall.
    pub user_id: String,
    /// The conversation the message belongs to (its recent turns are included).
    pub session_id: String,
    /// Only this agent's memories of the user.
    #[serde(default)]
    pub agent_id: Option<String>,
}

impl ContextArgs {
    /// The scope fields, for the same conversion as every other tool's.
    pub fn scope(&self) -> ScopeArgs {
        ScopeArgs {
            user_id: self.user_id.clone(),
            agent_id: self.agent_id.clone(),
            session_id: Some(self.session_id.clone()),
        }
    }
}

/// One message of a recorded exchange, in OpenAI's or Anthropic's shape:
/// tool calls and their results become a procedure (docs/layers.md).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct MessageArg {
    /// user, assistant, system or tool.
    pub role: String,
    /// The text, or a list of content blocks (Anthropic: text, tool_use
    /// {id, name, input}, tool_result {tool_use_id, content, is_error}).
    #[serde(default)]
    pub content: Value,
    /// OpenAI: an assistant message's calls, [{id, type: "function",
    /// function: {name, arguments}}].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
    /// OpenAI: on a tool message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On a tool result: the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordTurnArgs {
    /// The exchange's messages since the last one recorded, oldest first:
    /// the user's are the input, the assistant's the reply; system messages
    /// go to the session buffer. The assistant's tool calls with their
    /// results (tool messages) are recorded as a run of the user's task: a
    /// procedure with its outcome and pitfalls.
    pub messages: Vec<MessageArg>,
    /// Whose exchange it was.
    pub user_id: String,
    /// The conversation it belongs to.
    pub session_id: String,
    /// The agent that took part.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Your id for the exchange: recording it again with the same id writes
    /// nothing twice. A fresh one when absent.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// When it was said: RFC 3339 or YYYY-MM-DD. Now when absent.
    #[serde(default)]
    pub timestamp: Option<String>,
}

impl RecordTurnArgs {
    /// The scope fields, for the same conversion as every other tool's.
    pub fn scope(&self) -> ScopeArgs {
        ScopeArgs {
            user_id: self.user_id.clone(),
            agent_id: self.agent_id.clone(),
            session_id: Some(self.session_id.clone()),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordProcedureArgs {
    /// What the run was for, in words ("deploy the web app"): runs of the
    /// same task merge into one procedure.
    pub task: String,
    /// The tool calls in order, each {"tool", "args" (a summary: the
    /// command line), "result" (a summary), "ok" (false if it failed),
    /// "error" (its error text)}.
    pub steps: Vec<Value>,
    /// How the run ended: success, failure or partial.
    pub outcome: String,
    /// What went wrong, on failure.
    #[serde(default)]
    pub error: Option<String>,
    /// When it ran: RFC 3339. Now when absent.
    #[serde(default)]
    pub at: Option<String>,
    /// Your id for this run: recording it again changes nothing.
    #[serde(default)]
    pub execution_id: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchProceduresArgs {
    /// The task you are about to do, in words.
    pub query: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// How many procedures to return, 1 to 1000 (default 5).
    #[serde(default)]
    pub top_k: Option<usize>,
}
