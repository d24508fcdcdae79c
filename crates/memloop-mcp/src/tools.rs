//! The MCP server: nine memory tools over one shared [`Engine`].

use std::sync::Arc;

use memloop::{Config, MemoryLoop};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Extensions};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler};
use serde_json::{json, Value};

use crate::args::{
    AddArgs, ContextArgs, EntitiesArgs, ForgetArgs, GetArgs, HistoryArgs, LinksArgs,
    RecordProcedureArgs, RecordTurnArgs, RememberArgs, SearchArgs, SearchProceduresArgs,
    SessionsArgs,
};
use crate::engine::Engine;
use crate::tenant::TenantResolver;

/// The memloop MCP server. Cheap to clone (the store is shared); one clone
/// serves each connection. Every call runs on a blocking thread, and every
/// failure comes back as a tool error (`isError: true`) whose text is
/// `code: message`, with `{"error": {"code", "message"}}` as structured content.
#[derive(Clone)]
pub struct MemoryTools {
    engine: Arc<Engine>,
    tenant: TenantResolver,
    traces: Option<TraceSink>,
    tool_router: ToolRouter<MemoryTools>,
}

/// Where the traces of `memory_context` and `memory_record_turn` go, with
/// the caller's tenant and which of them ran (`context`, `record`): what a
/// server keeps for its inspector, as it does for its REST loop routes.
pub type TraceSink = Arc<dyn Fn(&str, &'static str, &Value) + Send + Sync>;

type ToolResult = Result<CallToolResult, ErrorData>;

impl MemoryTools {
    /// Tools over a loop of your own (a server sharing its store): its gate
    /// and long-term writer remember, its context answers `memory_context`.
    /// Calls act in the default tenant until [`Self::with_tenant`].
    pub fn new(lp: MemoryLoop) -> MemoryTools {
        MemoryTools::from_engine(Engine::new(lp))
    }

    /// Tools over the store configured in `cfg` (data dir, embedder,
    /// short-term buffer, LLM for extraction: none means rules).
    pub fn open(cfg: &Config) -> memloop::Result<MemoryTools> {
        Ok(MemoryTools::from_engine(Engine::open(cfg)?))
    }

    fn from_engine(engine: Engine) -> MemoryTools {
        MemoryTools {
            engine: Arc::new(engine),
            tenant: TenantResolver::default(),
            traces: None,
            tool_router: MemoryTools::tool_router(),
        }
    }

    /// How each call's tenant is found (see [`TenantResolver`]).
    pub fn with_tenant(mut self, tenant: TenantResolver) -> MemoryTools {
        self.tenant = tenant;
        self
    }

    /// Hands every loop trace these tools answer with to `sink` (see [`TraceSink`]).
    pub fn with_trace_sink(mut self, sink: TraceSink) -> MemoryTools {
        self.traces = Some(sink);
        self
    }

    /// Loads the embedding model now, so the first call does not wait for
    /// it. Blocking; call from a blocking thread.
    pub fn warm_up(&self) -> memloop::Result<()> {
        self.engine.memory().embedder().embed("warm up").map(|_| ())
    }

    /// Resolves the tenant, then runs `op` on a blocking thread.
    async fn run<A: Send + 'static>(
        &self,
        ext: &Extensions,
        args: A,
        op: fn(&Engine, &str, A) -> memloop::Result<Value>,
    ) -> ToolResult {
        self.run_keeping_trace(ext, args, op, None).await
    }

    /// As `run`; a successful answer's `trace` also goes to the trace sink,
    /// as from `route`.
    async fn run_keeping_trace<A: Send + 'static>(
        &self,
        ext: &Extensions,
        args: A,
        op: fn(&Engine, &str, A) -> memloop::Result<Value>,
        route: Option<&'static str>,
    ) -> ToolResult {
        let tenant = match self.tenant.resolve(ext.get::<http::request::Parts>()) {
            Ok(t) => t,
            Err(message) => return Ok(tool_error("unauthorized", &message)),
        };
        let engine = Arc::clone(&self.engine);
        let caller = tenant.clone();
        let joined = tokio::task::spawn_blocking(move || op(&engine, &caller, args)).await;
        Ok(match joined {
            Ok(Ok(value)) => {
                if let (Some(route), Some(sink)) = (route, &self.traces) {
                    sink(&tenant, route, &value["trace"]);
                }
                CallToolResult::structured(value)
            }
            Ok(Err(e)) => tool_error(e.code(), &e.to_string()),
            Err(e) => {
                tracing::error!(error = %e, "an MCP tool call failed inside memloop");
                tool_error("internal", "internal error: the call failed inside memloop; nothing more is known (see the server log)")
            }
        })
    }
}

fn tool_error(code: &str, message: &str) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))]);
    r.structured_content = Some(json!({"error": {"code": code, "message": message}}));
    r
}

#[tool_router]
impl MemoryTools {
    #[tool(
        description = "Search the user's long-term memories by meaning and keyword. Returns {\"results\": [{id, memory, score, kind, date, superseded_by?}]}, best first; superseded_by (the current memory) marks a memory no longer true. full: true returns whole records. A time the query names (\"last week\", \"in May\", \"the last session\") is read against now (or the now given) and boosts memories from then (time_mode: filter keeps only them); how it was read is returned as time.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_search(
        &self,
        Parameters(a): Parameters<SearchArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::search).await
    }

    #[tool(
        description = "Store a memory for the user exactly as given (no extraction). Storing the same text again is a NOOP returning the existing id. Returns {\"results\": [{id, memory, event}]}.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_add(&self, Parameters(a): Parameters<AddArgs>, ext: Extensions) -> ToolResult {
        self.run(&ext, a, Engine::add).await
    }

    #[tool(
        description = "Remember what the user said: the write pipeline keeps the turn as an episode, distils its facts and reconciles them with stored ones. Returns {\"results\": [{id, memory, event: ADD|UPDATE|DELETE|NOOP, kind, reason, previous_memory?}], \"persisted\", \"reason\", \"notes\"}.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_remember(
        &self,
        Parameters(a): Parameters<RememberArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::remember).await
    }

    #[tool(
        description = "One current memory by id, with status and superseded_by. A deleted, superseded or expired memory is a not_found error saying which (and what replaced it, or when it expired), unless include_deleted is true: then it is returned with its status (valid_until set when deleted or superseded).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_get(&self, Parameters(a): Parameters<GetArgs>, ext: Extensions) -> ToolResult {
        self.run(&ext, a, Engine::get).await
    }

    #[tool(
        description = "Delete every memory of a user (optionally only an agent's or a session's), returning the counts deleted; or, with id, that one memory of the user, returning {\"results\": [{id, memory, event: DELETE}]}. purge also erases their history and every copy of their text in the store.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_forget(
        &self,
        Parameters(a): Parameters<ForgetArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::forget).await
    }

    #[tool(
        description = "Every change to one memory, oldest first: {\"results\": [{event, old_memory, new_memory, at, ...}]}.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_history(
        &self,
        Parameters(a): Parameters<HistoryArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::history).await
    }

    #[tool(
        description = "The user's sessions on the time axis, newest first: {\"sessions\": [{id, ordinal, started_at, ended_at, memories}]}; ordinal 1 is the first session, and the times are when its turns were said. Use it to find \"the last session\" or \"three sessions ago\".",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_sessions(
        &self,
        Parameters(a): Parameters<SessionsArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::sessions).await
    }

    #[tool(
        description = "The people, places and things the user's memories name (the entity graph), most mentioned first: {\"entities\": [{name, kind, memories}]}. Follow one with memory_links.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_entities(
        &self,
        Parameters(a): Parameters<EntitiesArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::entities).await
    }

    #[tool(
        description = "One entity of the user's memories with its links: {entity, relations: [{subject, relation, object, memory_id}], co_mentioned: [{name, kind, memories}], memories: [...]}. relations are current facts such as \"Anna works_at Acme\".",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_links(
        &self,
        Parameters(a): Parameters<LinksArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::links).await
    }

    #[tool(
        description = "Assemble the context for the user's next message without calling a model: the system prompt with the relevant memories, the session's recent turns and the message, within the token budget. Returns {system, messages, max_tokens, trace}.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_context(
        &self,
        Parameters(a): Parameters<ContextArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run_keeping_trace(&ext, a, Engine::context, Some("context"))
            .await
    }

    #[tool(
        description = "Record an exchange your own model ran: the user's and the assistant's messages go to the session, each side is judged by role, and what is worth keeping is written long-term (one episode with both sides; facts attributed to who said them). Tool calls with their results (OpenAI tool_calls and tool messages, or Anthropic tool_use and tool_result blocks) are recorded as a run of the user's task: a procedure with its outcome and pitfalls. The same turn_id again writes nothing twice. Returns {turn_id, replayed, gate, writes: [{id, memory, event, kind, role?, reason}], trace}.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_record_turn(
        &self,
        Parameters(a): Parameters<RecordTurnArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run_keeping_trace(&ext, a, Engine::record_turn, Some("record"))
            .await
    }

    #[tool(
        description = "Record one run of a task you did with tools: the task in words, the steps in order ({tool, args, result, ok, error}), the outcome (success, failure, partial) and the error. Runs of the same task merge into one procedure: success and failure counts, the last outcome, and failed steps kept as pitfalls with what worked instead. The same execution_id again changes nothing. Returns {\"results\": [{id, event: ADD|UPDATE|NOOP, memory, procedure}]}.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_record_procedure(
        &self,
        Parameters(a): Parameters<RecordProcedureArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::record_procedure).await
    }

    #[tool(
        description = "Before a task with tools, find how it was done before: procedures ranked by similarity × success rate × recency, with their steps and pitfalls (\"`npm run deploy` failed with EACCES; `sudo -u deploy npm run deploy` worked\"). Returns {\"results\": [{id, procedure, score, scores: {similarity, success_rate, recency}, pitfalls}]}.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_search_procedures(
        &self,
        Parameters(a): Parameters<SearchProceduresArgs>,
        ext: Extensions,
    ) -> ToolResult {
        self.run(&ext, a, Engine::search_procedures).await
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "memloop",
    instructions = "Long-term memory for the user. Before answering, call memory_search (or memory_context for a ready system prompt) with the user's id; when the user says something worth keeping, call memory_remember (facts are distilled and reconciled) or memory_add (stored verbatim)."
)]
impl ServerHandler for MemoryTools {}
