//! The data the inspector shows that no other route gives: the tenant's
//! users with their counts, and the last loop turns' traces.

use axum::extract::State;
use axum::Json;
use memloop::{Kind, ListQuery, Scope};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::IntoParams;

use crate::auth::Tenant;
use crate::error::{ApiError, ApiQuery};
use crate::openapi::{ErrorBody, TracesResponse, UsersResponse};
use crate::state::{blocking, AppState};

/// The most users one answer lists.
const MAX_USERS: usize = 1000;

/// The tenant's users (and agents without a user) that have current
/// memories: each with its counts by kind, its sessions and its last
/// activity, most recently active first.
#[utoipa::path(
    get, path = "/v1/users", tag = "inspect",
    responses(
        (status = 200, body = UsersResponse),
        (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn users(State(state): State<AppState>, tenant: Tenant) -> Result<Json<Value>, ApiError> {
    let memory = state.memory().clone();
    let results = blocking(move || {
        let mut entities = memory.entities(&tenant.0)?;
        entities.sort_by_key(|e| std::cmp::Reverse(e.updated_at));
        entities.truncate(MAX_USERS);
        let mut out = Vec::with_capacity(entities.len());
        for e in entities {
            let scope = match e.kind {
                "agent" => Scope::agent(&e.name),
                _ => Scope::user(&e.name),
            }
            .with_tenant(&tenant.0);
            let mut counts = serde_json::Map::new();
            for kind in [Kind::Fact, Kind::Episode, Kind::Procedure] {
                let q = ListQuery {
                    scope: scope.clone(),
                    kinds: vec![kind],
                    limit: 1,
                    ..Default::default()
                };
                counts.insert(kind.as_str().into(), json!(memory.count(&q)?));
            }
            let sessions = memory.sessions(&scope)?;
            let last = sessions
                .iter()
                .map(|s| s.ended_at)
                .max()
                .unwrap_or(e.updated_at)
                .max(e.updated_at);
            out.push(json!({
                "id": e.name,
                "type": e.kind,
                "total": e.memories,
                "counts": counts,
                "sessions": sessions.len(),
                "last_activity": memloop::time::to_rfc3339(last),
            }));
        }
        Ok(out)
    })
    .await?;
    Ok(Json(json!({ "count": results.len(), "results": results })))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TraceParams {
    /// 1 to 1000, default 50.
    pub limit: Option<usize>,
}

/// The tenant's last loop turns (`/v1/turn`, `/v1/context`,
/// `/v1/turn/record`), newest first, each with the trace it answered:
/// what was retrieved, the tokens by part, the gate's decision, what was
/// written. Kept in memory, `[server] trace_ring` per tenant; off (and
/// `enabled: false`) unless that is set.
#[utoipa::path(
    get, path = "/v1/traces", tag = "inspect",
    params(TraceParams),
    responses(
        (status = 200, body = TracesResponse),
        (status = 400, description = "limit outside 1..1000", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)
    )
)]
pub async fn traces(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiQuery(p): ApiQuery<TraceParams>,
) -> Result<Json<Value>, ApiError> {
    let limit = memloop::check_limit("limit", p.limit.unwrap_or(50))?;
    let ring = state.traces();
    Ok(Json(json!({
        "enabled": ring.enabled(),
        "capacity": ring.capacity(),
        "results": ring.recent(&tenant.0, limit),
    })))
}
