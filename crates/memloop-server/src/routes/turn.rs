//! The loop over HTTP: the context a turn would send (for callers with their
//! own LLM), and whole turns with the configured LLM.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::body::{timestamp_millis, LoopRequest, RecordRequest};
use crate::error::{ApiError, ApiJson};
use crate::openapi::{ContextResponse, ErrorBody, RecordResponse, TurnResponse};
use crate::state::{blocking, AppState};

fn loop_scope(tenant: &Tenant, req: LoopRequest) -> Result<(memloop::Scope, String), ApiError> {
    if req.scope.run_id.is_none() {
        return Err(ApiError::invalid(
            "the loop works per session: give run_id (the session id)",
        ));
    }
    let scope = req.scope.in_tenant(tenant)?;
    Ok((scope, req.input))
}

/// Assembles the context for an input without calling an LLM or writing
/// anything: the system prompt (with the memories that fit) and the
/// messages, plus the trace of what was retrieved and included.
#[utoipa::path(
    post, path = "/v1/context", tag = "loop",
    request_body = LoopRequest,
    responses(
        (status = 200, body = ContextResponse),
        (status = 400, description = "No run_id, bad scope or empty input", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn context(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(req): ApiJson<LoopRequest>,
) -> Result<Json<Value>, ApiError> {
    let (scope, input) = loop_scope(&tenant, req)?;
    let lp = state.memory_loop().clone();
    let (request, trace) = blocking(move || lp.context(&scope, &input)).await?;
    let answer = json!({
        "system": request.system,
        "messages": request.messages,
        "max_tokens": request.max_tokens,
        "trace": trace,
    });
    state.keep_trace(&tenant.0, "context", &answer["trace"]);
    Ok(Json(answer))
}

/// One whole turn: recall, assemble, call the configured LLM, write the
/// session, decide what to keep, write it; the reply and the trace.
#[utoipa::path(
    post, path = "/v1/turn", tag = "loop",
    request_body = LoopRequest,
    responses(
        (status = 200, body = TurnResponse),
        (status = 400, description = "No run_id, bad scope or empty input", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 502, description = "The LLM provider refused the request", body = ErrorBody),
        (status = 503, description = "No LLM configured, or the LLM is unreachable", body = ErrorBody)
    )
)]
pub async fn turn(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(req): ApiJson<LoopRequest>,
) -> Result<Json<Value>, ApiError> {
    if !state.has_llm() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "llm_not_configured",
            "no LLM is configured, so the server cannot run a turn: set [llm] in the configuration file (or MEMLOOP_LLM_PROVIDER and MEMLOOP_LLM_MODEL) and restart; POST /v1/context assembles the same prompt for an LLM of your own",
        ));
    }
    let (scope, input) = loop_scope(&tenant, req)?;
    let lp = state.memory_loop().clone();
    let outcome = blocking(move || lp.turn(&scope, &input)).await?;
    let answer = json!({ "reply": outcome.reply, "trace": outcome.trace });
    state.keep_trace(&tenant.0, "turn", &answer["trace"]);
    Ok(Json(answer))
}

/// Records an exchange your agent ran with its own model: appends the
/// messages to the session, judges the user's and the assistant's side by
/// role, and writes the kept sides long-term (one episode holding both,
/// facts attributed to who said them); tool calls in OpenAI's or
/// Anthropic's shape become a run of the user's task (a procedure).
/// Idempotent on `turn_id`.
#[utoipa::path(
    post, path = "/v1/turn/record", tag = "loop",
    request_body = RecordRequest,
    responses(
        (status = 200, body = RecordResponse),
        (status = 400, description = "No run_id, no messages, a bad role, turn id or timestamp", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 503, description = "The short-term backend (Redis) is unreachable", body = ErrorBody)
    )
)]
pub async fn record(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiJson(req): ApiJson<RecordRequest>,
) -> Result<Json<Value>, ApiError> {
    if req.scope.run_id.is_none() {
        return Err(ApiError::invalid(
            "an exchange belongs to a session: give run_id (the session id)",
        ));
    }
    let at = req.timestamp.as_ref().map(timestamp_millis).transpose()?;
    let scope = req.scope.in_tenant(&tenant)?;
    let lp = state.memory_loop().clone();
    let recorded =
        blocking(move || lp.record_messages(&scope, req.turn_id.as_deref(), &req.messages, at))
            .await?;
    let answer = recorded.answer();
    state.keep_trace(&tenant.0, "record", &answer["trace"]);
    Ok(Json(answer))
}
