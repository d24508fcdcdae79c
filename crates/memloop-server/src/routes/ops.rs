//! Health, readiness, metrics and the OpenAPI document.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use memloop::{Error, Scope};
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::openapi::{ErrorBody, ReadyResponse, StatusResponse};
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

/// Every dependency answers: the store, the embedding model, the
/// short-term backend (Redis when configured). Each is reported in
/// `details`; one down makes it 503.
#[utoipa::path(
    get, path = "/readyz", tag = "operations", security(()),
    responses(
        (status = 200, body = ReadyResponse),
        (status = 503, description = "A dependency is down: `details` says which, `error.message` why", body = ReadyResponse)
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Response {
    let mut details = Map::new();
    let mut down = Vec::new();
    let mut report = |name: &str, r: Result<String, ApiError>| match r {
        Ok(v) => {
            details.insert(name.into(), Value::String(v));
        }
        Err(e) => {
            details.insert(name.into(), Value::String(format!("down: {}", e.message)));
            down.push(format!("{name}: {}", e.message));
        }
    };

    let memory = state.memory().clone();
    let store = blocking(
        move || match memory.get_in(Scope::DEFAULT_TENANT, "readyz-probe") {
            Ok(_) | Err(Error::NotFound(_)) => Ok("ok".to_string()),
            Err(e) => Err(e),
        },
    )
    .await;
    report("store", store);

    let s = state.clone();
    let embedder = blocking(move || {
        if !s.embedder_ready() {
            s.warm_up()?;
        }
        Ok(s.memory().embedder().info().to_string())
    })
    .await;
    report("embedder", embedder);

    // Reading an unknown session touches the backend and nothing else.
    let lp = state.memory_loop().clone();
    let short_term = blocking(move || {
        lp.short_term().read("readyz", "readyz-probe")?;
        Ok("ok".to_string())
    })
    .await;
    report("short_term", short_term);

    if down.is_empty() {
        return Json(json!({ "status": "ready", "details": details })).into_response();
    }
    let e = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "not_ready",
        down.join("; "),
    );
    let mut body = e.body();
    if let Some(o) = body.as_object_mut() {
        o.insert("status".into(), json!("not_ready"));
        o.insert("details".into(), Value::Object(details));
    }
    let mut resp = e.into_response();
    *resp.body_mut() = axum::body::Body::from(body.to_string());
    resp
}

/// Prometheus metrics: request latency histograms and counts per route and
/// status, requests in flight, memory counts, what the short-term buffer
/// holds and has let go, and the long-term sweeper's runs.
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
    let lp = state.memory_loop().clone();
    let short_term = match blocking(move || lp.short_term().stats()).await {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e.message, "short-term statistics unavailable for /metrics");
            None
        }
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics().render(
            stats.as_ref(),
            short_term.as_ref(),
            state.memory().sweeps().as_ref(),
        ),
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
