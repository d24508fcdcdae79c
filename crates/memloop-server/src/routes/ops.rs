//! Health, readiness, metrics and the OpenAPI document.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use memloop::{Error, Scope};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::openapi::{ErrorBody, StatusResponse};
use crate::state::{blocking, AppState};

/// The document, serialized once when the router is built.
#[derive(Clone)]
pub struct OpenApiJson(pub Arc<str>);

/// The process answers.
#[utoipa::path(
    get, path = "/healthz", tag = "operations", security(()),
    responses((status = 200, body = StatusResponse))
)]
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The store answers and the embedding model is loaded.
#[utoipa::path(
    get, path = "/readyz", tag = "operations", security(()),
    responses(
        (status = 200, body = StatusResponse),
        (status = 503, description = "The store or the embedding model is not usable (the message says which)", body = ErrorBody)
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let memory = state.memory().clone();
    let probe = blocking(
        move || match memory.get_in(Scope::DEFAULT_TENANT, "readyz-probe") {
            Ok(_) | Err(Error::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        },
    )
    .await;
    let unavailable = |what: &str, e: ApiError| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            format!("{what}: {}", e.message),
        )
    };
    probe.map_err(|e| unavailable("the store does not answer", e))?;
    if !state.embedder_ready() {
        let s = state.clone();
        blocking(move || s.warm_up())
            .await
            .map_err(|e| unavailable("the embedding model is not loaded", e))?;
    }
    let embedder = state.memory().embedder().info().to_string();
    Ok(Json(json!({
        "status": "ready",
        "details": { "store": "ok", "embedder": embedder },
    })))
}

/// Prometheus metrics: request latency histograms and counts per route and
/// status, requests in flight, memory counts.
#[utoipa::path(
    get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain", body = String),
        (status = 401, body = ErrorBody)
    )
)]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let memory = state.memory().clone();
    let stats = match blocking(move || memory.stats()).await {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e.message, "store statistics unavailable for /metrics");
            None
        }
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics().render(stats.as_ref()),
    )
        .into_response()
}

/// This document.
#[utoipa::path(
    get, path = "/openapi.json", tag = "operations", security(()),
    responses((status = 200, description = "OpenAPI 3.1", content_type = "application/json", body = Object))
)]
pub async fn openapi(Extension(doc): Extension<OpenApiJson>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.0.to_string(),
    )
        .into_response()
}
