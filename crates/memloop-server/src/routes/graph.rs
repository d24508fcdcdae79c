//! The entity graph of a user (or agent): the people, places and things
//! its current memories name, and one entity's links. `GET /v1/entities`
//! with a scope answers here; without one it is Mem0's list of users
//! (`mem0::entities`).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::IntoParams;

use crate::auth::Tenant;
use crate::body::ScopeFields;
use crate::error::{ApiError, ApiPath, ApiQuery};
use crate::openapi::{EntityLinksResponse, ErrorBody};
use crate::state::{blocking, AppState};

/// A graph read's moment: the graph as it was then.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AsOf {
    /// Read the graph as it was at this moment (RFC 3339, or YYYY-MM-DD:
    /// the end of that day): the memories true then and the relations
    /// that held then. Default: now.
    #[serde(default)]
    pub as_of: Option<String>,
}

impl AsOf {
    fn millis(&self) -> Result<Option<i64>, ApiError> {
        Ok(self
            .as_of
            .as_deref()
            .map(|s| memloop::parse_reference_time(s, "as_of"))
            .transpose()?)
    }
}

/// The entities named by `scope`'s current memories (or those true at
/// `as_of`), most mentioned first.
pub(crate) async fn scope_entities(
    state: &AppState,
    tenant: &Tenant,
    scope: ScopeFields,
    at: AsOf,
) -> Result<Json<Value>, ApiError> {
    let scope = scope.in_tenant(tenant)?;
    let as_of = at.millis()?;
    let memory = state.memory().clone();
    let list = blocking(move || memory.graph_entities(&scope, as_of)).await?;
    Ok(Json(json!({ "count": list.len(), "results": list })))
}

/// One entity of a user (or agent): the relations it is an end of, the
/// entities named beside it, and the current memories naming it.
#[utoipa::path(
    get, path = "/v1/entities/{name}/links", tag = "graph",
    params(("name" = String, Path, description = "The entity's name, any case, as GET /v1/entities?user_id=… lists it"), ScopeFields, AsOf),
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
    ApiQuery(at): ApiQuery<AsOf>,
) -> Result<Json<Value>, ApiError> {
    let scope = scope.in_tenant(&tenant)?;
    let as_of = at.millis()?;
    let memory = state.memory().clone();
    let asked = name.clone();
    let found = blocking(move || memory.entity_links(&scope, &asked, as_of)).await?;
    match found {
        Some(l) => Ok(Json(serde_json::to_value(&l).map_err(|e| {
            ApiError::from(memloop::Error::Internal(format!("entity links: {e}")))
        })?)),
        None => Err(memloop::Error::EntityNotFound(name).into()),
    }
}
