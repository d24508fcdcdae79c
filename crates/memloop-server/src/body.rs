//! Request bodies and query strings, Mem0-style: `messages` (a list or one
//! string), `user_id` / `agent_id` / `run_id` (run = memloop's session),
//! `metadata`, `infer`, `query`, `top_k` (or `limit`), `filters`.

use memloop::short_term::Role;
use memloop::{Filter, Kind, Scope};
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Tenant;
use crate::error::ApiError;

/// A memory id from a path, checked before the store is asked: the
/// library's rule (`validate_memory_id`), answered as a 400.
pub fn check_id(id: &str) -> Result<(), ApiError> {
    memloop::validate_memory_id(id).map_err(ApiError::from)
}

/// One message of a conversation.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Message {
    /// user, assistant, system or tool.
    pub role: String,
    pub content: String,
}

/// A list of messages, or one string (taken as a user message).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum Messages {
    List(Vec<Message>),
    Text(String),
}

impl Messages {
    /// The messages, a bare string becoming one user message; every role checked.
    pub fn into_list(self) -> Result<Vec<Message>, ApiError> {
        let list = match self {
            Messages::List(l) => l,
            Messages::Text(t) => vec![Message {
                role: "user".into(),
                content: t,
            }],
        };
        for m in &list {
            Role::parse(&m.role)?;
        }
        Ok(list)
    }
}

fn yes() -> bool {
    true
}

/// Whose memories a request is about, Mem0-style: a user and/or an agent
/// (at least one), optionally narrowed to one run (memloop's session). The
/// fields sit at the top level of the request, as Mem0 sends them.
// Flattened into each request body. A query string (`GET` and `DELETE
// /v1/memories`) is read into it by an extractor of its own, beside the
// route's other parameters: utoipa's IntoParams ignores
// `#[serde(flatten)]` (it would document one required parameter named
// `scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScopeFields {
    /// The user whose memories these are.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The agent whose memories these are (with a user: that user's
    /// memories written by this agent).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The session (memloop's `session_id`, also accepted under that name).
    #[serde(default, alias = "session_id")]
    pub run_id: Option<String>,
}

impl ScopeFields {
    /// The scope in the caller's tenant: a user_id or an agent_id is
    /// required, and every id is checked (a 400 saying which and why).
    pub fn in_tenant(self, tenant: &Tenant) -> Result<Scope, ApiError> {
        let scope = Scope {
            tenant: tenant.0.clone(),
            user_id: self.user_id,
            agent_id: self.agent_id,
            session_id: self.run_id,
        };
        scope.validate().map_err(|_| scope_error(&scope))?;
        Ok(scope)
    }

    /// Mem0's v2 clients send the scope inside the filters: fills the
    /// fields not given from there (see [`memloop::filter::lift_scope`]).
    pub fn lift_from(&mut self, filters: &mut Option<Value>) {
        memloop::filter::lift_scope(
            filters,
            [&mut self.user_id, &mut self.agent_id, &mut self.run_id],
        );
    }
}

/// `POST /v1/memories`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddRequest {
    pub messages: Messages,
    #[serde(flatten)]
    pub scope: ScopeFields,
    /// A JSON object stored with each memory written (as given, or
    /// distilled: the episode and every fact; the keys the write sets, such
    /// as `role`, win).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    /// true (the default, as in Mem0): distil facts from each user message
    /// through the write pipeline and reconcile them with stored ones.
    /// false: store each non-system message as given.
    #[serde(default = "yes")]
    pub infer: bool,
    /// fact (default), episode or procedure (`infer: false` only).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "fact")]
    pub kind: Option<Kind>,
    /// 0 to 1 (`infer: false` only).
    #[serde(default)]
    pub importance: Option<f32>,
    /// Forget the memories after this long: 30s, 15m, 12h, 7d or 2w. With
    /// `infer: true` it applies to the episode and every fact the pipeline
    /// writes; without it each kind's default TTL from `[forgetting]`.
    #[serde(default)]
    #[schema(example = "30d")]
    pub ttl: Option<String>,
    /// Forget the memories at this time (RFC 3339 or Unix milliseconds):
    /// instead of `ttl`.
    #[serde(default, with = "memloop::time::opt_millis")]
    #[schema(value_type = Option<String>, example = "2026-12-31T00:00:00Z")]
    pub expires_at: Option<i64>,
    /// When the messages were said: Unix seconds (as Mem0 sends it), RFC
    /// 3339 or `YYYY-MM-DD`. Now when absent. Becomes the memories'
    /// `valid_from` (a fact about an earlier date keeps that date), which
    /// places the session on the time axis (`GET /v1/sessions`).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "2023-05-08T13:56:00Z")]
    pub timestamp: Option<Value>,
}

/// `POST /v1/memories/search`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SearchRequest {
    pub query: String,
    #[serde(flatten)]
    pub scope: ScopeFields,
    /// 1 to 1000, default 10 (`limit` is accepted too).
    #[serde(default, alias = "limit")]
    pub top_k: Option<usize>,
    /// Mem0 JSON filters (`{"AND":[{"topic":"food"},{"rating":{"gte":4}}]}`)
    /// or the text form (`topic = "food" AND rating >= 4`). Without a
    /// top-level user_id / agent_id / run_id, those named by equality in the
    /// filters (at the top or in a top-level AND) choose the scope.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Value>,
    /// Only these kinds (fact, episode, procedure).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub kinds: Vec<Kind>,
    /// Drop hits scoring (0..1) below this (`threshold` is accepted too).
    #[serde(default, alias = "threshold")]
    pub min_score: Option<f32>,
    /// When the question is asked, for the time its words name ("last
    /// week", "in May", "the last session"): YYYY-MM-DD (its end) or RFC
    /// 3339. Default: now.
    #[serde(default)]
    pub now: Option<String>,
    /// What a time the query names does: `boost` (default: memories from
    /// then rank higher), `filter` (only they are searched) or `off`.
    #[serde(default)]
    pub time_mode: Option<String>,
    /// Search what was true at this time (YYYY-MM-DD: its end, or RFC
    /// 3339): superseded and deleted memories as they were then.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Follow entity links from the top hits to other memories about the
    /// same people, places and things (default: `[search] expand`).
    #[serde(default)]
    pub expand: Option<bool>,
    /// Links followed from a hit when expanding, 1 to 3 (default:
    /// `[search] hops`); giving it turns expansion on.
    #[serde(default)]
    pub hops: Option<usize>,
    /// The weight of meaning (the vector signal) in the fusion, 0 to 10
    /// (default 0.5).
    #[serde(default)]
    pub vector_weight: Option<f32>,
    /// The weight of keywords (BM25) in the fusion, 0 to 10 (default 1).
    #[serde(default)]
    pub keyword_weight: Option<f32>,
    /// Search superseded and deleted memories too.
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// `false`: no reranking for this search, even with `[rerank]`
    /// configured; `true` asks for it (refused when none is configured).
    #[serde(default)]
    pub rerank: Option<bool>,
    /// How many fused hits the reranker reorders, 1 to 200 (default:
    /// `[rerank] top_n`).
    #[serde(default)]
    pub rerank_top_n: Option<usize>,
}

/// `GET /v1/memories`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// At most 1000, default 100.
    pub limit: Option<usize>,
    pub offset: Option<usize>,
    /// fact, episode or procedure.
    pub kind: Option<String>,
    /// Also deleted and superseded memories.
    pub include_superseded: Option<bool>,
    /// A filter, text or JSON form.
    pub filter: Option<String>,
}

/// `DELETE /v1/memories`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForgetParams {
    /// Also delete their history (deleted pages are zeroed).
    pub purge: Option<bool>,
}

/// `PUT /v1/memories/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateRequest {
    /// The new text (re-embedded; the old one stays in history).
    #[serde(default)]
    pub text: Option<String>,
    /// Replaces the metadata object.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// `POST /v1/context` and `POST /v1/turn`. Here `run_id` is required: the
/// loop keeps a short-term buffer per session.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LoopRequest {
    /// What the user says this turn (`query` and `message` are accepted too).
    #[serde(alias = "query", alias = "message")]
    pub input: String,
    #[serde(flatten)]
    pub scope: ScopeFields,
}

/// `POST /v1/turn/record`: an exchange an agent ran with its own model.
/// `run_id` (the session) is required.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RecordRequest {
    /// The exchange's messages since the last one recorded, oldest first:
    /// the user's are the input, the assistant's the reply; system messages
    /// go to the session buffer only. Tool calls in OpenAI's shape
    /// (`tool_calls` on an assistant message, `role: "tool"` results with
    /// `tool_call_id`) or Anthropic's (`tool_use` / `tool_result` content
    /// blocks) are also recorded as a run of the user's task (a procedure,
    /// docs/layers.md).
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// Your id for the exchange: a retry with the same id writes nothing
    /// twice. A fresh one when absent.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// When it was said: RFC 3339, `YYYY-MM-DD`, or Unix seconds (as Mem0
    /// sends it). Now when absent.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "2026-11-30T09:15:00Z")]
    pub timestamp: Option<Value>,
    #[serde(flatten)]
    pub scope: ScopeFields,
}

/// `POST /v1/procedures`: one run of a task (docs/layers.md).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProcedureRequest {
    /// What the run was for, in words ("deploy the web app").
    pub task: Value,
    /// The tool calls in order: `{"tool", "args", "result", "ok"?, "error"?}`
    /// (`ok` false marks a failed step; `error` its error text).
    #[schema(value_type = Vec<Object>)]
    pub steps: Value,
    /// success, failure or partial.
    #[schema(value_type = String, example = "success")]
    pub outcome: Value,
    /// What went wrong, on failure.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub error: Option<Value>,
    /// When it ran (RFC 3339 or Unix ms); now when absent.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "2026-11-30T09:15:00Z")]
    pub at: Option<Value>,
    /// Your id for the run: recording it again changes nothing.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub execution_id: Option<Value>,
    #[serde(flatten)]
    pub scope: ScopeFields,
}

impl ProcedureRequest {
    /// The run's fields as the library reads them.
    pub fn run(&self) -> Value {
        let mut run = Map::new();
        run.insert("task".into(), self.task.clone());
        run.insert("steps".into(), self.steps.clone());
        run.insert("outcome".into(), self.outcome.clone());
        for (k, v) in [
            ("error", &self.error),
            ("at", &self.at),
            ("execution_id", &self.execution_id),
        ] {
            if let Some(v) = v.as_ref().filter(|v| !v.is_null()) {
                run.insert(k.into(), v.clone());
            }
        }
        Value::Object(run)
    }
}

/// `POST /v1/procedures/search`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProcedureSearchRequest {
    /// The task, in words.
    pub query: String,
    /// At most this many (5 when absent).
    #[serde(default)]
    pub top_k: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeFields,
}

/// A request's `timestamp` in Unix milliseconds: RFC 3339, `YYYY-MM-DD` or
/// Unix seconds, in years 0 to 9999.
pub fn timestamp_millis(v: &Value) -> Result<i64, ApiError> {
    let ms = match v {
        Value::String(s) => memloop::time::parse_date(s.trim()),
        Value::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite())
            .map(|secs| (secs * 1000.0).round() as i64),
        _ => None,
    };
    let ms = ms.ok_or_else(|| {
        ApiError::invalid(
            "timestamp must be an RFC 3339 time (2026-11-30T09:15:00Z), a date (2026-11-30) or Unix seconds",
        )
    })?;
    memloop::check_time("timestamp", ms)?;
    Ok(ms)
}

/// `POST /v1/sessions/{id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AppendRequest {
    pub messages: Messages,
    /// Whose session this is: recorded with the turns, so that purging the
    /// user (`DELETE /v1/memories?user_id=…&purge=true`) clears it too.
    #[serde(default)]
    pub user_id: Option<String>,
}

fn scope_error(scope: &Scope) -> ApiError {
    match scope.validate() {
        Err(memloop::Error::InvalidInput(m)) if m.starts_with("no scope") => {
            ApiError::invalid("no scope: give user_id or agent_id (run_id narrows to a session)")
        }
        Err(e) => ApiError::from(e),
        Ok(()) => ApiError::internal("scope check disagreed with itself"),
    }
}

/// The deepest a list may start (`offset`, and `page` × `page_size`):
/// far beyond any real scope, and small enough that no arithmetic on it
/// overflows or reaches SQLite as a negative number.
pub const MAX_OFFSET: usize = 1_000_000_000;

/// The highest `page` of the Mem0 v3 list.
pub const MAX_PAGE: usize = MAX_OFFSET / memloop::MAX_LIMIT;

pub fn check_offset(n: usize) -> Result<usize, ApiError> {
    if n > MAX_OFFSET {
        return Err(ApiError::invalid(format!(
            "offset must be at most {MAX_OFFSET} (got {n})"
        )));
    }
    Ok(n)
}

/// A filter in either form; an empty object or string is no filter.
pub fn parse_filter_value(v: Option<Value>) -> Result<Option<Filter>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_filter_text(Some(&s)),
        Some(Value::Object(o)) if o.is_empty() => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(Filter::from_json(&v)?)),
        Some(_) => Err(ApiError::invalid(
            "filters must be a JSON object (Mem0 form) or a string (text form)",
        )),
    }
}

/// A filter given as a string: JSON if it starts with `{`, else the text form.
pub fn parse_filter_text(s: Option<&str>) -> Result<Option<Filter>, ApiError> {
    match s.map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) if s.starts_with('{') => {
            let v: Value = serde_json::from_str(s)
                .map_err(|e| ApiError::invalid(format!("bad filter: not valid JSON: {e}")))?;
            parse_filter_value(Some(v))
        }
        Some(s) => Ok(Some(Filter::parse(s)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memloop::shown_value as shown;

    #[test]
    fn the_scope_fields_sit_at_the_top_of_every_body() {
        let scope = |u: Option<&str>, a: Option<&str>, r: Option<&str>| ScopeFields {
            user_id: u.map(str::to_string),
            agent_id: a.map(str::to_string),
            run_id: r.map(str::to_string),
        };
        for run in ["run_id", "session_id"] {
            let v = serde_json::json!({
                "query": "q", "input": "i", "messages": "m",
                "user_id": "u", "agent_id": "a", run: "s",
            });
            let want = scope(Some("u"), Some("a"), Some("s"));
            let add: AddRequest = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(add.scope, want, "{run}");
            assert!(add.infer, "the other defaults still apply");
            let search: SearchRequest = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(search.scope, want, "{run}");
            let mut v = v;
            v.as_object_mut().unwrap().remove("query"); // an alias of input
            let lp: LoopRequest = serde_json::from_value(v).unwrap();
            assert_eq!(lp.scope, want, "{run}");
        }
        // Absent and null are both "not given"; other fields stay typed.
        let s: SearchRequest =
            serde_json::from_value(serde_json::json!({"query": "q", "agent_id": null, "top_k": 3}))
                .unwrap();
        assert_eq!(s.scope, ScopeFields::default());
        assert_eq!(s.top_k, Some(3));
        for bad in [
            serde_json::json!({"query": "q", "user_id": 5}),
            serde_json::json!({"query": "q", "run_id": ["s"]}),
            // Both names of the session, as before: a duplicate field.
            serde_json::json!({"query": "q", "user_id": "u", "run_id": "a", "session_id": "b"}),
        ] {
            assert!(serde_json::from_value::<SearchRequest>(bad).is_err());
        }
        // lift_from fills only what the body did not name.
        let mut f = Some(serde_json::json!({"AND": [{"user_id": "x"}, {"run_id": "r"}]}));
        let mut fields = scope(None, Some("a"), None);
        fields.lift_from(&mut f);
        assert_eq!(fields, scope(Some("x"), Some("a"), Some("r")));
        assert_eq!(f, Some(serde_json::json!({})));
    }

    #[test]
    fn filters_in_both_forms() {
        assert!(parse_filter_value(None).unwrap().is_none());
        assert!(parse_filter_value(Some(serde_json::json!({})))
            .unwrap()
            .is_none());
        assert!(
            parse_filter_value(Some(serde_json::json!({"topic": "food"})))
                .unwrap()
                .is_some()
        );
        assert!(parse_filter_value(Some(serde_json::json!("topic = food")))
            .unwrap()
            .is_some());
        assert!(parse_filter_value(Some(serde_json::json!(3))).is_err());
        assert!(parse_filter_text(Some("topic = ")).is_err());
    }

    #[test]
    fn ids_are_checked_and_echoed_short_and_escaped() {
        assert!(check_id("0193a5c2-7e41-7b8a-9f3e-2d1c4b5a6e7f").is_ok());
        assert!(check_id("no-such-id").is_ok());
        for bad in ["", "a\0b", "a\nb", &"x".repeat(memloop::MAX_ID_BYTES + 1)] {
            let e = check_id(bad).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.contains("UUID"), "{}", e.message);
            assert!(e.message.len() < 300, "{}", e.message);
            assert!(!e.message.contains('\0') && !e.message.contains('\n'));
        }
        assert_eq!(shown("a\"b"), "\"a\\\"b\"");
        let long = shown(&"é".repeat(5000));
        assert!(long.ends_with("… (10000 bytes)"), "{long}");
        assert!(long.chars().count() < 70);
    }
}
