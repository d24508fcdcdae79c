//! The entity graph of a user (or agent): the people, places and things
//! its current memories name, and one entity's links. `GET /v1/entities`
//! with a scope answers here; without one it is Mem0's list of users
//! (`mem0::entities`).

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::body::ScopeFields;
use crate::error::{ApiError, ApiPath, ApiQuery};
use crate::openapi::{EntityLinksResponse, ErrorBody};
use crate::state::{blocking, AppState};

/// The entities named by `scope`'s current memories, most mentioned first.
pub(crate) async fn scope_entities(
    state: &AppState,
    tenant: &Tenant,
    scope: ScopeFields,
) -> Result<Json<Value>, ApiError> {
    let scope = scope.in_tenant(tenant)?;
    let memory = state.memory().clone();
    let list = blocking(move || memory.graph_entities(&scope)).await?;
    Ok(Json(json!({ "count": list.len(), "results": list })))
}

/// One entity of a user (or agent): the relations it is an end of, the
/// entities named beside it, and the current memories naming it.
#[utoipa::path(
    get, path = "/v1/entities/{name}/links", tag = "graph",
    params(("name" = String, Path, description = "The entity's name, any case, as GET /v1/entities?user_id=… lists it"), ScopeFields),
    responses(
        (status = 200, body = EntityLinksResponse),
        (status = 400, description = "No user_id or agent_id, or a bad id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No current memory of this user names the entity", body = ErrorBody)
    )
)]
pub async fn links(
    State(state): State<AppState>,
    tenant: Tenant,
    ApiPath(name): ApiPath<String>,
    ApiQuery(scope): ApiQuery<ScopeFields>,
) -> Result<Json<Value>, ApiError> {
    let scope = scope.in_tenant(&tenant)?;
    let memory = state.memory().clone();
    let asked = name.clone();
    let found = blocking(move || memory.entity_links(&scope, &asked)).await?;
    match found {
        Some(l) => Ok(Json(serde_json::to_value(&l).map_err(|e| {
            ApiError::from(memloop::Error::Internal(format!("entity links: {e}")))
        })?)),
        None => Err(memloop::Error::NotFound(format!(
            "entity {name:?}: no current memory of this user names it (GET /v1/entities?user_id=… lists those that do)"
        ))
        .into()),
    }
}
