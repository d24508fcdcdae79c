//! Sessions: a user's sessions on the time axis (from the long-term
//! store), and the short-term buffers (the turns of a session), in the
//! caller's tenant.

use axum::extract::State;
use axum::Json;
use memloop::short_term::{validate_session, Role, Turn};
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::body::{AppendRequest, ScopeFields};
use crate::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::openapi::{AppendResponse, ErrorBody, SessionResponse, SessionsResponse};
use crate::state::{blocking, AppState};

/// Appends messages to a session, atomically (all of them or none).
#[utoipa::path(
    post, path = "/v1/sessions/{id}/messages", tag = "sessions",
    params(("id" = String, Path, description = "The session (run) id")),
    request_body = AppendRequest,
    responses(
        (status = 200, body = AppendResponse),
        (status = 400, description = "Bad session id, role or text", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 503, description = "The short-term backend (Redis) is unreachable", body = ErrorBody)
    )
)]
pub async fn append(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(session): ApiPath<String>,
    ApiJson(req): ApiJson<AppendRequest>,
) -> Result<Json<Value>, ApiError> {
    validate_session(&session)?;
    let turns: Vec<Turn> = req
        .messages
        .into_list()?
        .into_iter()
        .map(|m| Ok(Turn::new(Role::parse(&m.role)?, m.content)))
        .collect::<memloop::Result<_>>()?;
    if turns.is_empty() {
        return Err(ApiError::invalid("no messages to append"));
    }
    for t in &turns {
        t.validate()?;
    }
    if let Some(user) = &req.user_id {
        memloop::Scope::user(user.as_str()).validate()?;
    }
    let lp = state.memory_loop().clone();
    let id = session.clone();
    let user = req.user_id;
    let len = blocking(move || {
        lp.short_term()
            .append_for(&tenant.0, user.as_deref(), &id, &turns)
    })
    .await?;
    Ok(Json(json!({ "session_id": session, "turns": len })))
}

/// A session's turns, oldest first, how many older ones the bounded buffer
/// dropped, and its rolling summary (an unknown session is empty).
#[utoipa::path(
    get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session (run) id")),
    responses(
        (status = 200, body = SessionResponse),
        (status = 400, description = "Bad session id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 503, description = "The short-term backend (Redis) is unreachable", body = ErrorBody)
    )
)]
pub async fn show(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(session): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    validate_session(&session)?;
    let lp = state.memory_loop().clone();
    let id = session.clone();
    let (window, summary) = blocking(move || {
        let st = lp.short_term();
        Ok((st.read_window(&tenant.0, &id)?, st.summary(&tenant.0, &id)?))
    })
    .await?;
    Ok(Json(json!({
        "session_id": session,
        "turns": window.turns,
        "turns_dropped": window.first,
        "summary": summary,
    })))
}

/// Forgets a session's turns and summary.
#[utoipa::path(
    delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session (run) id")),
    responses(
        (status = 200, body = AppendResponse),
        (status = 400, description = "Bad session id", body = ErrorBody),
        (status = 401, body = ErrorBody)
    )
)]
pub async fn clear(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(session): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    validate_session(&session)?;
    let lp = state.memory_loop().clone();
    let id = session.clone();
    blocking(move || lp.short_term().clear(&tenant.0, &id)).await?;
    Ok(Json(json!({ "session_id": session, "turns": 0 })))
}

/// A user's sessions on the time axis, newest first: each with its ordinal
/// (1 = the first), start and end (when its turns were said: a past
/// conversation written with `timestamp` sits where it happened) and its
/// current memories. Narrowed to an agent (or one session, keeping its
/// ordinal) when given.
#[utoipa::path(
    get, path = "/v1/sessions", tag = "sessions",
    params(ScopeFields),
    responses(
        (status = 200, body = SessionsResponse),
        (status = 400, description = "No user_id or agent_id, or a bad id", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn timeline(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiQuery(scope): ApiQuery<ScopeFields>,
) -> Result<Json<Value>, ApiError> {
    let scope = scope.in_tenant(&tenant)?;
    let memory = state.memory().clone();
    let sessions = blocking(move || memory.sessions(&scope)).await?;
    Ok(Json(json!({ "sessions": sessions })))
}
