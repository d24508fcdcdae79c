//! The tools' arguments. Their doc comments become the JSON Schema
//! descriptions an MCP client shows the model, so they say what to pass.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for, in natural language (searched by meaning and by keyword).
    pub query: String,
    /// Whose memories to search.
    pub user_id: String,
    /// Only memories written by this agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only memories written in this session (run).
    #[serde(default)]
    pub session_id: Option<String>,
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
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The memory, stored as given (no extraction), at most 32 KiB.
    pub text: String,
    /// Whose memory it is.
    pub user_id: String,
    /// The agent writing it (narrows later searches that name it).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The session (run) it was said in.
    #[serde(default)]
    pub session_id: Option<String>,
    /// A JSON object stored with the memory, usable in search filters.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// fact (default), episode or procedure.
    #[serde(default)]
    pub kind: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// What the user said. Facts worth keeping are distilled from it and
    /// reconciled with what is stored (ADD, UPDATE, DELETE or NOOP).
    pub text: String,
    /// Whose memory it is.
    pub user_id: String,
    /// The agent writing it (narrows later searches that name it).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The session (run) it was said in.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Write even when the gate judges the text not worth keeping (small talk).
    #[serde(default)]
    pub skip_gate: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetArgs {
    /// The memory's id (as returned by memory_add, memory_search, memory_remember).
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryArgs {
    /// The memory's id.
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// Whose memories to delete, all of them.
    pub user_id: String,
    /// Only this agent's memories of the user.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only this session's memories of the user.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Also erase their history (default: the history is kept).
    #[serde(default)]
    pub purge: Option<bool>,
}

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
