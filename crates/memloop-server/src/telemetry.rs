//! Request ids, one log line per request, and the metrics it feeds.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::state::AppState;

pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The request's id: the client's `x-request-id` when it sent a sensible
/// one (1 to 128 printable ASCII characters), else a fresh UUID v7.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

fn client_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    (!s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| s.to_string())
}

/// The outermost layer: names the request, times it, counts it, logs it.
pub async fn track(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(client_id)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    // The route's template (`/v1/memories/{id}`), never the id: label sets stay small.
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let method = req.method().clone();
    // Sizes and counts, never contents: a body may hold memory texts.
    let bytes_in = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!("request", request_id = %id, method = %method, route = %route);
    let started = Instant::now();
    let counted = state.metrics().start();
    let mut resp = next.run(req).instrument(span.clone()).await;
    drop(counted);
    let took = started.elapsed();
    let status = resp.status().as_u16();
    // Only standard methods become labels: a client cannot grow the label set.
    let method_label = match method.as_str() {
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS") => m,
        _ => "OTHER",
    };
    state.metrics().observe(method_label, &route, status, took);
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(X_REQUEST_ID.clone(), v);
    }
    span.in_scope(|| {
        tracing::info!(
            status,
            micros = took.as_micros() as u64,
            bytes_in,
            "request answered"
        )
    });
    resp
}
