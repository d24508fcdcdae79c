//! The long-term store, Mem0-style: add (raw or through the write
//! pipeline), search, list, get, update, delete, history, forget a scope.
//! Every call carries the caller's tenant into the store.

use axum::extract::State;
use axum::Json;
use memloop::short_term::Role;
use memloop::{
    AddMessages, Kind, ListQuery, Lookup, MemoryById, MemoryUpdate, SearchHit, SearchQuery,
    TimeReading,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::IntoParams;

use crate::auth::Tenant;
use crate::body::{
    check_id, check_offset, parse_filter_text, parse_filter_value, timestamp_millis, AddRequest,
    ForgetParams, ListParams, ScopeFields, SearchRequest, UpdateRequest,
};
use crate::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::openapi::{
    ErrorBody, ForgetResponse, HistoryResponse, MemoriesResponse, MemoryByIdDoc, SearchResponse,
    WriteResponse,
};
use crate::state::{blocking, AppState};

type ApiResult = Result<Json<Value>, ApiError>;

/// Store memories: each message as given (`infer: false`), or facts
/// distilled from each user message and reconciled with the stored ones
/// (`infer: true`, the default).
#[utoipa::path(
    post, path = "/v1/memories", tag = "memories",
    request_body = AddRequest,
    responses(
        (status = 200, description = "What was written: ADD, UPDATE, DELETE or NOOP per memory", body = WriteResponse),
        (status = 400, description = "Bad scope, text or role", body = ErrorBody),
        (status = 401, description = "No or invalid API key", body = ErrorBody),
        (status = 413, description = "Body over the limit", body = ErrorBody),
        (status = 422, description = "A field of the wrong type", body = ErrorBody),
        (status = 429, description = "Too many requests in flight for this key", body = ErrorBody),
        (status = 503, description = "A dependency is down; retry", body = ErrorBody)
    )
)]
pub async fn add(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(req): ApiJson<AddRequest>,
) -> ApiResult {
    let scope = req.scope.in_tenant(&tenant)?;
    let from_list = matches!(req.messages, crate::body::Messages::List(_));
    let messages = req
        .messages
        .into_list()?
        .into_iter()
        .map(|m| Ok((Role::parse(&m.role)?, m.content)))
        .collect::<Result<Vec<_>, memloop::Error>>()?;
    let add = AddMessages {
        messages,
        from_list,
        infer: req.infer,
        kind: req.kind.unwrap_or_default(),
        metadata: req.metadata.unwrap_or_default(),
        importance: req.importance,
        expires_at: expiry(&state, req.ttl.as_deref(), req.expires_at)?,
        at: req.timestamp.as_ref().map(timestamp_millis).transpose()?,
    };
    let lp = state.memory_loop().clone();
    let added = blocking(move || lp.add_messages(&scope, add)).await?;
    Ok(Json(added.answer()))
}

/// When memories written now expire: from `ttl` ("30d") or `expires_at`,
/// at most one of them; None lets each kind's default TTL apply.
fn expiry(
    state: &AppState,
    ttl: Option<&str>,
    expires_at: Option<i64>,
) -> Result<Option<i64>, ApiError> {
    match (ttl, expires_at) {
        (Some(_), Some(_)) => Err(ApiError::invalid("give ttl or expires_at, not both")),
        (Some(ttl), None) => state
            .memory()
            .expiry_after(ttl)
            .map(Some)
            .map_err(|e| ApiError::invalid(format!("ttl: {}", plain(e)))),
        (None, Some(t)) => {
            memloop::check_time("expires_at", t)?;
            Ok(Some(t))
        }
        (None, None) => Ok(None),
    }
}

/// An error's message without its class prefix.
fn plain(e: memloop::Error) -> String {
    match e {
        memloop::Error::InvalidInput(m) => m,
        other => other.to_string(),
    }
}

/// Hybrid search (meaning and keywords) in a scope.
#[utoipa::path(
    post, path = "/v1/memories/search", tag = "memories",
    request_body = SearchRequest,
    responses(
        (status = 200, description = "Best first, with per-signal scores", body = SearchResponse),
        (status = 400, description = "Bad scope, filter, empty query, or top_k outside 1..1000", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn search(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(mut req): ApiJson<SearchRequest>,
) -> Result<Json<SearchAnswer>, ApiError> {
    req.scope.lift_from(&mut req.filters);
    let scope = req.scope.in_tenant(&tenant)?;
    let mut q = SearchQuery::new(scope, req.query);
    q.top_k = memloop::check_limit("top_k", req.top_k.unwrap_or(10))?;
    q.filter = parse_filter_value(req.filters)?;
    q.kinds = req.kinds;
    q.set_weights(req.vector_weight, req.keyword_weight)?;
    q.include_superseded = req.include_superseded.unwrap_or(false);
    if let Some(s) = req.min_score {
        q.set_min_score("min_score", s)?;
    }
    q.as_of = req
        .as_of
        .as_deref()
        .map(|s| memloop::parse_reference_time(s, "as_of"))
        .transpose()?;
    let now = match req.now.as_deref() {
        Some(s) => memloop::parse_reference_time(s, "now")?,
        None => memloop::now_millis(),
    };
    let mode = memloop::QueryTimeMode::parse_field(req.time_mode.as_deref(), "time_mode")?;
    let memory = state.memory().clone();
    q.expand = memory.expansion_asked(req.expand, req.hops)?;
    q.rerank = memory.rerank_asked(req.rerank, req.rerank_top_n)?;
    let (searched, time) = blocking(move || {
        let time = memory.read_time(&mut q, now, mode)?;
        Ok((memory.search_traced(&q)?, time))
    })
    .await?;
    Ok(Json(SearchAnswer {
        results: searched.hits,
        time,
        rerank: searched.rerank,
    }))
}

/// A search's answer (documented as `SearchResponse`), written straight
/// into the body: through a `serde_json::Value` first, every field was
/// built and freed once more (about half the JSON time of a served
/// search, docs/benchmarks.md).
#[derive(Serialize)]
pub struct SearchAnswer {
    results: Vec<SearchHit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<TimeReading>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rerank: Option<memloop::rerank::RerankReport>,
}

/// The memories of a scope, newest first.
#[utoipa::path(
    get, path = "/v1/memories", tag = "memories",
    params(ScopeFields, ListParams),
    responses(
        (status = 200, body = MemoriesResponse),
        (status = 400, description = "Bad scope, filter, kind or limit", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiQuery(scope): ApiQuery<ScopeFields>,
    ApiQuery(p): ApiQuery<ListParams>,
) -> ApiResult {
    let q = ListQuery {
        scope: scope.in_tenant(&tenant)?,
        filter: parse_filter_text(p.filter.as_deref())?,
        kinds: p
            .kind
            .as_deref()
            .map(Kind::parse)
            .transpose()?
            .into_iter()
            .collect(),
        include_superseded: p.include_superseded.unwrap_or(false),
        as_of: None,
        limit: memloop::check_limit("limit", p.limit.unwrap_or(100))?,
        offset: check_offset(p.offset.unwrap_or(0))?,
    };
    let memory = state.memory().clone();
    let records = blocking(move || memory.list(&q)).await?;
    Ok(Json(json!({ "results": records })))
}

/// Deletes every memory of a scope (narrowed to an agent or run when given).
#[utoipa::path(
    delete, path = "/v1/memories", tag = "memories",
    params(ScopeFields, ForgetParams),
    responses(
        (status = 200, body = ForgetResponse),
        (status = 400, description = "No user_id or agent_id", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn forget(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiQuery(scope): ApiQuery<ScopeFields>,
    ApiQuery(p): ApiQuery<ForgetParams>,
) -> ApiResult {
    let scope = scope.in_tenant(&tenant)?;
    let purge = p.purge.unwrap_or(false);
    let lp = state.memory_loop().clone();
    let report = blocking(move || lp.forget(&scope, purge)).await?;
    Ok(Json(json!({
        "message": "Memories deleted successfully!",
        "memories_deleted": report.memories_deleted,
        "history_deleted": report.history_deleted,
        "short_term_sessions_cleared": report.short_term_sessions_cleared,
    })))
}

/// `GET /v1/memories/{id}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GetParams {
    /// Also answer a deleted or superseded memory (with `valid_until`,
    /// `status` and `superseded_by`) instead of 404.
    pub include_deleted: Option<bool>,
}

/// One current memory by id. A deleted or superseded one answers 404, as
/// Mem0 does, with a message saying which (and by what); with
/// `include_deleted=true` it is returned, `valid_until` set.
#[utoipa::path(
    get, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "The memory's id"), GetParams),
    responses(
        (status = 200, body = MemoryByIdDoc),
        (status = 400, description = "Not an id (empty, over 256 bytes, control characters)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such id in this tenant, or deleted, superseded or expired (without include_deleted)", body = ErrorBody)
    )
)]
pub async fn get(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<GetParams>,
) -> ApiResult {
    check_id(&id)?;
    let lookup = Lookup::include_deleted(p.include_deleted.unwrap_or(false));
    let memory = state.memory().clone();
    let (record, now) = blocking(move || {
        let record = memory.get_with(&tenant.0, &id, lookup)?;
        Ok((record, memory.clock().now()))
    })
    .await?;
    Ok(Json(json!(MemoryById::new(&record, now))))
}

/// Replaces a memory's text (re-embedded) and/or metadata; the old text stays in history.
#[utoipa::path(
    put, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "The memory's id")),
    request_body = UpdateRequest,
    responses(
        (status = 200, description = "The UPDATE, with the text it replaced", body = WriteResponse),
        (status = 400, description = "Not an id, nothing to update, a bad text, or the memory is no longer current", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such id in this tenant", body = ErrorBody),
        (status = 422, body = ErrorBody)
    )
)]
pub async fn update(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<UpdateRequest>,
) -> ApiResult {
    check_id(&id)?;
    if req.text.is_none() && req.metadata.is_none() {
        return Err(ApiError::invalid(
            "nothing to update: give text and/or metadata",
        ));
    }
    if let Some(t) = &req.text {
        memloop::text::validate_text(t)?;
    }
    let memory = state.memory().clone();
    let result = blocking(move || {
        // The id is checked first: nothing is embedded for an id the tenant
        // does not have. A deleted one is the store's to refuse (400, "kept
        // only as history"), as before.
        memory.get_with(&tenant.0, &id, Lookup::IncludeDeleted)?;
        let text = match req.text {
            Some(t) => {
                let v = memory.embedder().embed(&t)?;
                Some((t, v))
            }
            None => None,
        };
        let change = MemoryUpdate {
            text,
            metadata: req.metadata.map(Value::Object),
            ..Default::default()
        };
        memory.update_in(&tenant.0, &id, change)
    })
    .await?;
    Ok(Json(json!({
        "message": "Memory updated successfully!",
        "results": [result],
    })))
}

/// Ends a memory's validity: gone from search, list and get (404 unless
/// `include_deleted=true`), kept in history.
#[utoipa::path(
    delete, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "The memory's id")),
    responses(
        (status = 200, description = "The DELETE", body = WriteResponse),
        (status = 400, description = "Not an id, or already deleted or superseded", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such id in this tenant", body = ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(id): ApiPath<String>,
) -> ApiResult {
    check_id(&id)?;
    let memory = state.memory().clone();
    let result = blocking(move || memory.delete_in(&tenant.0, &id)).await?;
    Ok(Json(json!({
        "message": "Memory deleted successfully!",
        "results": [result],
    })))
}

/// Every change to one memory, oldest first.
#[utoipa::path(
    get, path = "/v1/memories/{id}/history", tag = "memories",
    params(("id" = String, Path, description = "The memory's id")),
    responses(
        (status = 200, body = HistoryResponse),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such id in this tenant", body = ErrorBody)
    )
)]
pub async fn history(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(id): ApiPath<String>,
) -> ApiResult {
    check_id(&id)?;
    let memory = state.memory().clone();
    let entries = blocking(move || memory.history_in(&tenant.0, &id)).await?;
    Ok(Json(json!({ "results": entries })))
}
