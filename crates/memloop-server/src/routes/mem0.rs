//! The routes Mem0's own clients call beyond the v1 memory routes: the key
//! check its constructor makes, the v3 add / search / list it uses for
//! those calls, and the entity routes behind `users()`, `delete_users()`
//! and `reset()`. Each maps onto memloop's own handlers and store calls.

use axum::extract::State;
use axum::Json;
use memloop::{ListQuery, Scope};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Tenant;
use crate::body::{parse_filter_value, AddRequest, ScopeFields, SearchRequest, MAX_PAGE};
use crate::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::openapi::{
    EntitiesAnswer, ErrorBody, MessageResponse, PageResponse, PingResponse, SearchResponse,
    WriteResponse,
};
use crate::routes::memories;
use crate::state::{blocking, AppState};

type ApiResult = Result<Json<Value>, ApiError>;

/// Checks the key. Mem0's client calls this when it starts and needs an
/// `org_id` and a `project_id`: memloop answers with the key's tenant.
#[utoipa::path(
    get, path = "/v1/ping", tag = "mem0",
    responses(
        (status = 200, description = "The key is valid", body = PingResponse),
        (status = 401, description = "No or invalid API key", body = ErrorBody)
    )
)]
pub async fn ping(tenant: Tenant) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "org_id": "memloop",
        "project_id": tenant.0,
        "user_email": Value::Null,
    }))
}

/// Mem0 v3 add: the same as `POST /v1/memories`.
#[utoipa::path(
    post, path = "/v3/memories/add", tag = "mem0",
    request_body = AddRequest,
    responses(
        (status = 200, body = WriteResponse),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)
    )
)]
pub async fn add(state: State<AppState>, tenant: Tenant, body: ApiJson<AddRequest>) -> ApiResult {
    memories::add(state, tenant, body).await
}

/// Mem0 v3 search: the same as `POST /v1/memories/search` (v3 clients send
/// the scope inside `filters`).
#[utoipa::path(
    post, path = "/v3/memories/search", tag = "mem0",
    request_body = SearchRequest,
    responses(
        (status = 200, body = SearchResponse),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)
    )
)]
pub async fn search(
    state: State<AppState>,
    tenant: Tenant,
    body: ApiJson<SearchRequest>,
) -> Result<Json<memories::SearchAnswer>, ApiError> {
    memories::search(state, tenant, body).await
}

/// `POST /v3/memories` (Mem0's `get_all`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ListRequest {
    /// Mem0 JSON filters or the text form; user_id / agent_id / run_id in
    /// them choose the scope, as in search.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Value>,
    #[serde(flatten)]
    pub scope: ScopeFields,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// From 1 (default 1) to 1,000,000.
    pub page: Option<usize>,
    /// 1 to 1000, default 100.
    pub page_size: Option<usize>,
}

/// Mem0 v3 list: one page of a scope's memories, newest first, with the
/// total count and the neighbouring pages' paths.
#[utoipa::path(
    post, path = "/v3/memories", tag = "mem0",
    params(PageParams),
    request_body = ListRequest,
    responses(
        (status = 200, body = PageResponse),
        (status = 400, description = "No scope, a bad filter or page", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiQuery(page): ApiQuery<PageParams>,
    ApiJson(mut req): ApiJson<ListRequest>,
) -> ApiResult {
    req.scope.lift_from(&mut req.filters);
    let size = memloop::check_limit("page_size", page.page_size.unwrap_or(100))?;
    let number = page.page.unwrap_or(1);
    if number == 0 || number > MAX_PAGE {
        return Err(ApiError::invalid(format!(
            "page must be between 1 and {MAX_PAGE} (got {number})"
        )));
    }
    let q = ListQuery {
        scope: req.scope.in_tenant(&tenant)?,
        filter: parse_filter_value(req.filters)?,
        limit: size,
        // Both bounded above: (MAX_PAGE - 1) × 1000 fits any usize we run on.
        offset: (number - 1) * size,
        ..Default::default()
    };
    let memory = state.memory().clone();
    let (count, results) = blocking(move || Ok((memory.count(&q)?, memory.list(&q)?))).await?;
    let link = |n: usize| format!("/v3/memories?page={n}&page_size={size}");
    let last = count.div_ceil(size).max(1);
    let next = (number < last).then(|| link(number + 1));
    // Past the end, "previous" is the last page that has memories.
    let previous = (number > 1).then(|| link((number - 1).min(last)));
    Ok(Json(json!({
        "count": count,
        "next": next,
        "previous": previous,
        "results": results,
    })))
}

/// Without a scope: the users, and agents without a user, that have
/// memories (Mem0's `users()`). With `user_id` (or `agent_id`): the
/// entity graph's people, places and things that user's current memories
/// name, most mentioned first (`routes::graph`).
#[utoipa::path(
    get, path = "/v1/entities", tag = "mem0",
    params(ScopeFields, crate::routes::graph::AsOf),
    responses(
        (status = 200, description = "Mem0's users list without a scope; the scope's named entities with one", body = EntitiesAnswer),
        (status = 400, description = "A bad id", body = ErrorBody),
        (status = 401, body = ErrorBody)
    )
)]
pub async fn entities(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiQuery(scope): ApiQuery<ScopeFields>,
    ApiQuery(at): ApiQuery<crate::routes::graph::AsOf>,
) -> ApiResult {
    if scope != ScopeFields::default() {
        return crate::routes::graph::scope_entities(&state, &tenant, scope, at).await;
    }
    let memory = state.memory().clone();
    let entities = blocking(move || memory.entities(&tenant.0)).await?;
    let results: Vec<Value> = entities
        .into_iter()
        .map(|e| {
            json!({
                "id": e.name,
                "name": e.name,
                "type": e.kind,
                "total_memories": e.memories,
                "created_at": memloop::time::to_rfc3339(e.created_at),
                "updated_at": memloop::time::to_rfc3339(e.updated_at),
            })
        })
        .collect();
    Ok(Json(json!({ "count": results.len(), "results": results })))
}

/// Forgets every memory of a user or agent (Mem0's `delete_users()` and
/// `reset()`); history is kept, as with `DELETE /v1/memories`.
#[utoipa::path(
    delete, path = "/v2/entities/{kind}/{name}", tag = "mem0",
    params(
        ("kind" = String, Path, description = "user or agent"),
        ("name" = String, Path, description = "The user's or agent's id")
    ),
    responses(
        (status = 200, body = MessageResponse),
        (status = 400, description = "A kind other than user or agent", body = ErrorBody),
        (status = 401, body = ErrorBody)
    )
)]
pub async fn delete_entity(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath((kind, name)): ApiPath<(String, String)>,
) -> ApiResult {
    let scope = match kind.as_str() {
        "user" => Scope::user(name),
        "agent" => Scope::agent(name),
        other => {
            return Err(ApiError::invalid(format!(
                "entities of kind {other:?} cannot be deleted here: use user or agent \
                 (a run's memories go with DELETE /v1/memories?user_id=…&run_id=…)"
            )))
        }
    }
    .with_tenant(tenant.0);
    scope.validate()?;
    let memory = state.memory().clone();
    let report = blocking(move || memory.forget(&scope, false)).await?;
    Ok(Json(json!({
        "message": "Entity deleted successfully.",
        "memories_deleted": report.memories_deleted,
    })))
}
