//! The OpenAPI document's frame (title, security) and the schemas of
//! response bodies. The paths come from the handlers' `#[utoipa::path]`
//! attributes, registered together with the routes (utoipa-axum), so the
//! document cannot list a route the router lacks or miss one it has.
//!
//! The response schemas below describe what memloop's own types serialize
//! to (those types live in crates that do not depend on utoipa); a test
//! checks real responses against them.

#![allow(dead_code)] // the structs exist for their schemas only

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "memloop",
        description = "Memory engine for LLM agents: Mem0-style memory routes, the loop (context and turn), short-term sessions. Authenticate with `Authorization: Bearer KEY` or `Authorization: Token KEY`; each key acts in its own tenant.",
        license(name = "Apache-2.0")
    ),
    modifiers(&Security),
    security(("api_key" = [])),
    tags(
        (name = "memories", description = "The long-term store"),
        (name = "loop", description = "Context assembly and whole turns"),
        (name = "sessions", description = "Short-term buffers"),
        (name = "procedures", description = "The procedural layer: runs of tasks, procedures for planning"),
        (name = "graph", description = "The entity graph: the people, places and things memories name, and their links"),
        (name = "operations", description = "Health, readiness, metrics, this document"),
        (name = "inspect", description = "What the inspector (/ui) reads besides the routes above: users with counts, recent turns"),
        (name = "mem0", description = "What Mem0's own clients call: the key check, v3 add / search / list, entities")
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi
            .components
            .get_or_insert_with(utoipa::openapi::Components::new);
        let mut http = Http::new(HttpAuthScheme::Bearer);
        http.description =
            Some("The API key, as `Bearer KEY` or (Mem0 clients) `Token KEY`.".to_string());
        components.add_security_scheme("api_key", SecurityScheme::Http(http));
    }
}

/// `{"error":{"code","message"}}`, and the message again as `detail`,
/// where Mem0's clients look for it.
#[derive(ToSchema)]
pub struct ErrorBody {
    error: ErrorDetail,
    detail: String,
}

#[derive(ToSchema)]
pub struct ErrorDetail {
    /// A stable machine-readable code (`invalid_input`, `not_found`, `unauthorized`, …).
    code: String,
    /// What was wrong and what to do.
    message: String,
}

/// A stored memory. Times are RFC 3339.
#[derive(ToSchema, serde::Serialize)]
pub struct MemoryDoc {
    id: String,
    /// The text.
    memory: String,
    /// Text indexed for keywords but not part of the memory (an episode's neighbouring turns).
    context: Option<String>,
    /// fact, episode or procedure.
    kind: String,
    tenant: String,
    user_id: Option<String>,
    agent_id: Option<String>,
    session_id: Option<String>,
    #[schema(value_type = Object)]
    metadata: Value,
    created_at: String,
    updated_at: String,
    valid_from: String,
    /// Set once the memory was deleted or superseded.
    valid_until: Option<String>,
    expires_at: Option<String>,
    importance: f32,
    access_count: u64,
    last_accessed_at: Option<String>,
    #[schema(value_type = Object)]
    provenance: Value,
    content_hash: String,
}

/// Why a hit ranked where it did.
#[derive(ToSchema, serde::Serialize)]
pub struct SignalScoresDoc {
    /// Cosine similarity to the query.
    vector: Option<f32>,
    vector_rank: Option<usize>,
    /// Taken off `vector` for ranking: the memory is a long text whose
    /// several windows were among the nearest (absent when 0).
    pieces_discount: Option<f32>,
    bm25: Option<f32>,
    bm25_rank: Option<usize>,
    /// Fused score before normalisation.
    fused: f32,
    speaker_boost: f32,
    /// The decay signal, 0..1: recency × importance × use (0 when decay
    /// is off, the default; see `[forgetting] decay_weight`).
    decay: f32,
    /// Reached from a direct hit through an entity both name (entity
    /// expansion): the score that link gave it; 0 for a direct hit.
    graph: f32,
    /// The time signal, 0..1, when the query names a time ("last week",
    /// "in May"): 1 inside its window, less the farther outside; 0 when it
    /// names none.
    time: f32,
    /// Set when a reranker reordered the fused top N and this hit was
    /// among them.
    rerank: Option<RerankScoresDoc>,
}

/// A hit's place in a reranking.
#[derive(ToSchema, serde::Serialize)]
pub struct RerankScoresDoc {
    /// The reranker's score (its own units, higher is better); null when
    /// it left this candidate out.
    score: Option<f32>,
    /// Its position in the fused order (1 = first).
    fused_position: usize,
    /// Its position after reranking.
    position: usize,
}

/// What the reranking stage did in one search.
#[derive(ToSchema)]
pub struct RerankReportDoc {
    /// "http tei http://127.0.0.1:8080/rerank", "llm claude-…".
    reranker: String,
    /// Fused hits sent to it.
    candidates: usize,
    /// reranked, timed_out or failed (then the fused order stands).
    status: String,
    /// Why the fused order stands.
    error: Option<String>,
    /// Time the search spent on it, in microseconds.
    latency_us: u64,
}

/// One memory read by id: the stored memory, where it stands, and what
/// replaced it.
#[derive(ToSchema, serde::Serialize)]
pub struct MemoryByIdDoc {
    #[schema(inline)]
    #[serde(flatten)]
    memory: MemoryDoc,
    /// current, deleted, superseded or expired (the last three only with
    /// `include_deleted=true`; expired: its TTL passed, gc will delete it).
    status: String,
    /// The id of the memory that replaced this one: set when superseded,
    /// null when deleted or never replaced. On a current episode: the fact
    /// that replaced a claim it holds.
    superseded_by: Option<String>,
}

/// A search hit: the memory's fields plus its scores.
#[derive(ToSchema, serde::Serialize)]
pub struct SearchHitDoc {
    #[schema(inline)]
    #[serde(flatten)]
    memory: MemoryDoc,
    /// 0..1, higher is better.
    score: f32,
    scores: SignalScoresDoc,
}

/// The outcome of one write.
#[derive(ToSchema)]
pub struct WriteResultDoc {
    id: String,
    memory: String,
    /// ADD, UPDATE, DELETE or NOOP.
    event: String,
    /// The text an UPDATE replaced.
    previous_memory: Option<String>,
    /// (infer: true) the kind written and why.
    kind: Option<String>,
    reason: Option<String>,
    /// (infer: true) for a fact: the side it was distilled from and is
    /// attributed to (user or assistant); absent for the episode.
    role: Option<String>,
}

/// One change to a memory.
#[derive(ToSchema)]
pub struct HistoryEntryDoc {
    id: i64,
    memory_id: String,
    /// ADD, UPDATE, DELETE or NOOP.
    event: String,
    old_memory: Option<String>,
    new_memory: Option<String>,
    at: String,
    actor: String,
    reason: Option<String>,
}

#[derive(ToSchema)]
pub struct MemoriesResponse {
    results: Vec<MemoryDoc>,
}

#[derive(ToSchema)]
pub struct SearchResponse {
    results: Vec<SearchHitDoc>,
    /// How a time the query names was read (absent when it names none).
    time: Option<TimeReadingDoc>,
    /// What the reranking stage did (absent when none ran).
    rerank: Option<RerankReportDoc>,
}

/// How a query's time was read: `{"phrase": "in May", "start":
/// "2023-05-01T00:00:00.000Z", "end": "2023-06-01T00:00:00.000Z", "mode": "boost"}`.
#[derive(ToSchema)]
pub struct TimeReadingDoc {
    /// The words read ("in May", "three sessions ago").
    phrase: String,
    /// The window's start (inclusive, RFC 3339); null when open.
    start: Option<String>,
    /// The window's end (exclusive, RFC 3339); null when open.
    end: Option<String>,
    /// boost or filter.
    mode: String,
    /// The session the words named, when they named one.
    session: Option<String>,
    /// Why the words gave no window (a session that does not exist).
    note: Option<String>,
}

#[derive(ToSchema)]
pub struct WriteResponse {
    results: Vec<WriteResultDoc>,
    /// (infer: true) what went wrong without failing the write, e.g. a deferred extraction.
    notes: Option<Vec<String>>,
    message: Option<String>,
}

#[derive(ToSchema)]
pub struct HistoryResponse {
    results: Vec<HistoryEntryDoc>,
}

#[derive(ToSchema)]
pub struct ForgetResponse {
    message: String,
    memories_deleted: usize,
    history_deleted: usize,
    /// Short-term sessions of the scope cleared (a purge only).
    short_term_sessions_cleared: usize,
}

#[derive(ToSchema)]
pub struct ChatMessageDoc {
    role: String,
    content: String,
}

/// `POST /v1/context`: the prompt a turn would send, and its trace.
#[derive(ToSchema)]
pub struct ContextResponse {
    /// System prompt with the memory block and session summary.
    system: String,
    /// Recent turns, oldest first, then the new input.
    messages: Vec<ChatMessageDoc>,
    max_tokens: u32,
    /// The turn's trace: retrieved memories with scores and whether each
    /// was included, token counts, timings.
    #[schema(value_type = Object)]
    trace: Value,
}

/// `POST /v1/turn`.
#[derive(ToSchema)]
pub struct TurnResponse {
    reply: Option<String>,
    /// Retrieved and included memories, gate decision, writes, tokens, timings.
    #[schema(value_type = Object)]
    trace: Value,
}

/// `POST /v1/turn/record`.
#[derive(ToSchema)]
pub struct RecordResponse {
    turn_id: String,
    /// The session already held this exchange: nothing appended again, and
    /// the writes are NOOPs.
    replayed: bool,
    /// The gate's decision for the exchange (`trace.gates` has each side's).
    #[schema(value_type = Object)]
    gate: Value,
    /// What was written: the episode, and each fact with the `role` it was
    /// distilled from.
    #[schema(value_type = Vec<Object>)]
    writes: Value,
    #[schema(value_type = Object)]
    trace: Value,
}

#[derive(ToSchema)]
pub struct TurnDoc {
    role: String,
    content: String,
    at: String,
}

#[derive(ToSchema)]
pub struct SessionResponse {
    session_id: String,
    /// The turns the session holds, oldest first: its newest `[short_term]
    /// max_turns_stored`.
    turns: Vec<TurnDoc>,
    /// How many of the session's first turns were dropped before `turns`
    /// (the summary's `covers` counts from the session's start).
    turns_dropped: usize,
    /// The rolling summary of turns that left the window.
    #[schema(value_type = Option<Object>)]
    summary: Option<Value>,
}

/// One session on the time axis.
#[derive(ToSchema)]
pub struct SessionInfoDoc {
    /// The session (run) id its memories were written with.
    id: String,
    /// Its place by start among the scope's sessions: 1 is the first.
    ordinal: u32,
    /// When its first turn was said (RFC 3339).
    started_at: String,
    /// When its last turn was said (RFC 3339).
    ended_at: String,
    /// Current memories written in it.
    memories: i64,
}

/// `GET /v1/sessions`: newest first.
#[derive(ToSchema)]
pub struct SessionsResponse {
    sessions: Vec<SessionInfoDoc>,
}

#[derive(ToSchema)]
pub struct AppendResponse {
    session_id: String,
    /// The turns the session holds after the append (at most `[short_term]
    /// max_turns_stored`: the oldest are dropped past it).
    turns: usize,
}

#[derive(ToSchema)]
pub struct StatusResponse {
    status: String,
    #[schema(value_type = Option<Object>)]
    details: Option<BTreeMap<String, String>>,
}

/// `GET /readyz`: each dependency (`store`, `embedder`, `short_term`) is
/// `ok` (the embedder: its model) or `down: why`. When one is down the
/// status is `not_ready` and the error fields say which.
#[derive(ToSchema)]
pub struct ReadyResponse {
    /// ready or not_ready.
    status: String,
    #[schema(value_type = Object)]
    details: BTreeMap<String, String>,
    error: Option<ErrorDetail>,
    detail: Option<String>,
}

/// `GET /v1/ping`.
#[derive(ToSchema)]
pub struct PingResponse {
    status: String,
    /// Always "memloop".
    org_id: String,
    /// The key's tenant.
    project_id: String,
    /// Always null.
    user_email: Option<String>,
}

/// `POST /v3/memories`: one page.
#[derive(ToSchema)]
pub struct PageResponse {
    /// Memories in the scope (all pages).
    count: usize,
    /// The next page's path, or null.
    next: Option<String>,
    previous: Option<String>,
    results: Vec<MemoryDoc>,
}

#[derive(ToSchema)]
pub struct EntityDoc {
    id: String,
    name: String,
    /// user or agent.
    #[schema(rename = "type")]
    kind: String,
    /// Current memories.
    total_memories: i64,
    created_at: String,
    updated_at: String,
}

#[derive(ToSchema)]
pub struct EntitiesResponse {
    count: usize,
    results: Vec<EntityDoc>,
}

/// `GET /v1/entities`: Mem0's users list, or with a scope its entity graph.
#[derive(ToSchema)]
#[allow(dead_code)] // documents the two answers; never built
pub enum EntitiesAnswer {
    Users(EntitiesResponse),
    Graph(GraphEntitiesResponse),
}

/// The people, places and things a user's current memories name.
#[derive(ToSchema)]
pub struct GraphEntitiesResponse {
    count: usize,
    results: Vec<GraphEntityDoc>,
}

#[derive(ToSchema)]
pub struct GraphEntityDoc {
    /// As first written ("Anna", "Acme Corp").
    name: String,
    /// person, place, organisation, pet or thing.
    kind: String,
    /// Current memories that name it.
    memories: i64,
}

/// `GET /v1/entities/{name}/links`.
#[derive(ToSchema)]
pub struct EntityLinksResponse {
    entity: GraphEntityDoc,
    /// Relations it is an end of that hold now (or held at `as_of`),
    /// stated by current memories (memories true then).
    relations: Vec<GraphRelationDoc>,
    /// Entities named in the same current memories, with how many.
    co_mentioned: Vec<GraphEntityDoc>,
    /// Current memories that name it, newest first.
    memories: Vec<MemoryDoc>,
}

/// "Anna works_at Acme", and the memory that says so.
#[derive(ToSchema)]
pub struct GraphRelationDoc {
    subject: String,
    relation: String,
    object: String,
    memory_id: String,
    /// When it began to hold (its memory's valid_from), Unix ms.
    valid_from: i64,
    /// When it stopped holding (a later memory gave the subject another
    /// object of a single-valued relation such as works_at), Unix ms;
    /// null while it holds.
    valid_until: Option<i64>,
}

#[derive(ToSchema)]
pub struct MessageResponse {
    message: String,
    memories_deleted: usize,
}

/// `POST /v1/procedures`: what recording the run did.
#[derive(ToSchema)]
pub struct ProcedureWriteResponse {
    results: Vec<ProcedureWriteDoc>,
}

#[derive(ToSchema)]
pub struct ProcedureWriteDoc {
    /// The current version's id.
    id: String,
    /// ADD (a new task), UPDATE (merged; the stored version superseded and
    /// kept in history) or NOOP (this run was counted already).
    event: String,
    /// The memory's text: task, steps, counts, pitfalls.
    memory: String,
    procedure: ProcedureDoc,
    /// The version this one replaced (UPDATE), or that counted the run (NOOP).
    previous_id: Option<String>,
}

/// A procedure: the task, the steps to follow, how its runs went, the
/// pitfalls learnt (also in the memory's `metadata.procedure`).
#[derive(ToSchema)]
pub struct ProcedureDoc {
    task: String,
    /// `{"tool", "args", "result", "ok", "error"?}`, in order.
    steps: Vec<Object>,
    successes: u32,
    failures: u32,
    partials: u32,
    /// success, failure or partial.
    last_outcome: String,
    last_error: Option<String>,
    last_run: String,
    /// `{"step", "error"?, "replaced_by"?, "seen", "position"}`.
    pitfalls: Vec<Object>,
    /// The execution ids (or run hashes) already counted.
    execution_ids: Vec<String>,
}

/// `POST /v1/procedures/search`: best first.
#[derive(ToSchema)]
pub struct ProcedureSearchResponse {
    results: Vec<ProcedureHitDoc>,
}

#[derive(ToSchema)]
pub struct ProcedureHitDoc {
    id: String,
    memory: String,
    /// similarity × success_rate × recency.
    score: f32,
    scores: ProcedureScoresDoc,
    /// The search's own signals (cosine, BM25, ranks).
    signals: SignalScoresDoc,
    /// Null for a procedure memory stored as plain text (an always/never instruction).
    procedure: Option<ProcedureDoc>,
    /// "`npm run deploy` failed with EACCES; `sudo -u deploy npm run deploy` worked".
    pitfalls: Vec<String>,
}

#[derive(ToSchema)]
pub struct ProcedureScoresDoc {
    /// The hybrid search's score, 0..1.
    similarity: f32,
    /// (successes + partials/2 + 1) / (runs + 2).
    success_rate: f32,
    /// 0.5..1 by the age of the last run (half-life 30 days).
    recency: f32,
    score: f32,
}

/// Any JSON object.
#[derive(ToSchema)]
pub struct Object {}

/// `GET /v1/users`: the tenant's users and agents with memories.
#[derive(ToSchema)]
pub struct UsersResponse {
    count: usize,
    results: Vec<UserDoc>,
}

#[derive(ToSchema)]
pub struct UserDoc {
    /// The user's (or agent's) id.
    id: String,
    /// user or agent.
    #[schema(rename = "type")]
    kind: String,
    /// Current memories.
    total: i64,
    /// Current memories by kind: fact, episode, procedure.
    counts: BTreeMap<String, usize>,
    /// Sessions on the time axis.
    sessions: usize,
    /// The latest write or turn (RFC 3339).
    last_activity: String,
}

/// `GET /v1/traces`: the last loop turns of the caller's tenant.
#[derive(ToSchema)]
pub struct TracesResponse {
    /// Whether the server keeps turns (`[server] trace_ring` above 0).
    enabled: bool,
    /// Turns kept per tenant.
    capacity: usize,
    /// Newest first.
    results: Vec<TraceEntryDoc>,
}

#[derive(ToSchema)]
pub struct TraceEntryDoc {
    /// turn, context or record.
    route: String,
    /// When the route answered (RFC 3339).
    at: String,
    /// The turn's trace, as the route answered it.
    #[schema(value_type = Object)]
    trace: Value,
}
