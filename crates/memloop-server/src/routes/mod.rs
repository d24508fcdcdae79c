//! The router: handlers registered with their OpenAPI descriptions, then
//! the layers every request passes through.

pub mod graph;
pub mod inspect;
pub mod mem0;
pub mod memories;
pub mod ops;
pub mod procedures;
pub mod sessions;
pub mod turn;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::{Extension, Router};
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{no_method, no_route, panic_response};
use crate::openapi::ApiDoc;
use crate::state::AppState;
use crate::{auth, telemetry};

/// The routes and their document, from the same attributes.
pub fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(memories::add, memories::list, memories::forget))
        .routes(routes!(memories::search))
        .routes(routes!(memories::get, memories::update, memories::delete))
        .routes(routes!(memories::history))
        .routes(routes!(turn::context))
        .routes(routes!(turn::turn))
        .routes(routes!(turn::record))
        .routes(routes!(procedures::record))
        .routes(routes!(procedures::search))
        .routes(routes!(sessions::timeline))
        .routes(routes!(sessions::append))
        .routes(routes!(sessions::show, sessions::clear))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .routes(routes!(ops::openapi))
        .routes(routes!(mem0::ping))
        .routes(routes!(mem0::add))
        .routes(routes!(mem0::search))
        .routes(routes!(mem0::list))
        .routes(routes!(mem0::entities))
        .routes(routes!(mem0::delete_entity))
        .routes(routes!(graph::links))
        .routes(routes!(inspect::users))
        .routes(routes!(inspect::traces))
        .split_for_parts()
}

pub fn build(state: AppState, mcp: Option<Router>) -> Router {
    let (routes, doc) = api();
    let doc_json = doc
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"the document did not serialize: {e}\"}}"));
    let mut router = routes
        .merge(crate::ui::router())
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .with_state(state.clone());
    // ---- MCP mount point -------------------------------------------------
    // memloop-mcp's router (serving /mcp) joins here, before the layers, so
    // it is authenticated, tenant-scoped, limited, timed and logged like
    // every other route. It must not set a fallback of its own.
    if let Some(mcp) = mcp {
        router = router.merge(mcp);
    }
    // -----------------------------------------------------------------------
    // Outermost last: request id and metrics see every answer, panics
    // included; the body limit and auth run before any handler.
    router
        .layer(Extension(ops::OpenApiJson(Arc::from(doc_json))))
        .layer(from_fn_with_state(state.clone(), auth::authenticate))
        .layer(DefaultBodyLimit::max(state.config().max_body_bytes))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn_with_state(state, telemetry::track))
}
