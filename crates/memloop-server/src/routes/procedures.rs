//! The procedural layer over HTTP: record a run of a task, find the
//! procedures for one (docs/layers.md).

use axum::extract::State;
use axum::Json;
use memloop::{ProcedureQuery, ProcedureRun};
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::body::{ProcedureRequest, ProcedureSearchRequest};
use crate::error::{ApiError, ApiJson};
use crate::openapi::{ErrorBody, ProcedureSearchResponse, ProcedureWriteResponse};
use crate::state::{blocking, AppState};

/// Records one run of a task: its steps (tool, arguments, result), its
/// outcome and error. The first run of a task adds a procedure; a run of a
/// task already stored merges into it (counts, last outcome, pitfalls),
/// superseding the stored version (UPDATE, kept in history); a run already
/// counted (same `execution_id`, or the same run with the same `at`) is a NOOP.
#[utoipa::path(
    post, path = "/v1/procedures", tag = "procedures",
    request_body = ProcedureRequest,
    responses(
        (status = 200, body = ProcedureWriteResponse),
        (status = 400, description = "A bad scope or run: the message names the field", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn record(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(req): ApiJson<ProcedureRequest>,
) -> Result<Json<Value>, ApiError> {
    let run = ProcedureRun::from_json(req.run())?;
    let scope = req.scope.in_tenant(&tenant)?;
    let memory = state.memory_loop().shared_memory();
    let w = blocking(move || memory.record_procedure(&scope, run)).await?;
    Ok(Json(json!({ "results": [w] })))
}

/// The procedures for a task, best first by similarity × success rate ×
/// recency, each factor in `scores`, pitfalls as sentences.
#[utoipa::path(
    post, path = "/v1/procedures/search", tag = "procedures",
    request_body = ProcedureSearchRequest,
    responses(
        (status = 200, body = ProcedureSearchResponse),
        (status = 400, description = "No query, a bad scope or top_k", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn search(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(req): ApiJson<ProcedureSearchRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = req.scope.in_tenant(&tenant)?;
    let mut q = ProcedureQuery::new(scope, req.query);
    if let Some(k) = req.top_k {
        q.top_k = memloop::check_limit("top_k", k)?;
    }
    let memory = state.memory_loop().shared_memory();
    let hits = blocking(move || memory.search_procedures(&q)).await?;
    Ok(Json(json!({ "results": hits })))
}
