//! Who is asking: the API key names the tenant; every handler gets it as a
//! `Tenant` and passes it into the store. Also the per-key in-flight limit.

use std::net::IpAddr;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, HOST};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use memloop::Scope;

use crate::error::ApiError;
use crate::state::AppState;

/// The tenant a request acts in, put in the request's extensions by the
/// authentication layer. Handlers (ours and the MCP endpoint's) read it
/// from there and pass it into every store call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Tenant, ApiError> {
        parts
            .extensions
            .get::<Tenant>()
            .cloned()
            .ok_or_else(|| ApiError::internal("the request reached a handler without a tenant"))
    }
}

/// Answered without a key: probes and the API's description.
const PUBLIC: [&str; 3] = ["/healthz", "/readyz", "/openapi.json"];

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
}

/// The key's limiter slot and its tenant.
fn resolve(state: &AppState, headers: &HeaderMap) -> Result<(usize, String), ApiError> {
    let keys = &state.config().api_keys;
    if keys.is_empty() {
        check_loopback_host(headers)?;
        return Ok((0, Scope::DEFAULT_TENANT.to_string()));
    }
    let value = headers.get(AUTHORIZATION).ok_or_else(|| {
        unauthorized("no API key: send `Authorization: Bearer KEY` (or `Token KEY`)")
    })?;
    let (scheme, key) = value
        .to_str()
        .ok()
        .and_then(|v| v.trim().split_once(' '))
        .ok_or_else(|| {
            unauthorized("malformed Authorization header: use `Bearer KEY` or `Token KEY`")
        })?;
    if !(scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token")) {
        return Err(unauthorized(
            "unsupported Authorization scheme: use `Bearer KEY` or `Token KEY`",
        ));
    }
    keys.lookup(key.trim())
        .map(|(slot, tenant)| (slot, tenant.to_string()))
        .ok_or_else(|| unauthorized("invalid API key"))
}

/// Without keys the server answers only requests addressed to a loopback
/// name: a web page the user visits cannot reach it by DNS rebinding.
fn check_loopback_host(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(host) = headers.get(HOST) else {
        return Ok(());
    };
    let host = host.to_str().unwrap_or_default();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let loopback = name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "this server has no API keys and answers only requests addressed to localhost: configure MEMLOOP_API_KEYS to serve other names",
        ))
    }
}

/// Resolves the tenant, holds one of the key's in-flight permits for the
/// request's duration (429 when none is left), then runs the request.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if PUBLIC.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let (slot, tenant) = match resolve(&state, req.headers()) {
        Ok(found) => found,
        Err(e) => return e.into_response(),
    };
    let Some(permit) = state
        .in_flight(slot)
        .and_then(|s| s.clone().try_acquire_owned().ok())
    else {
        return ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "this API key already has {} requests in flight: wait for one to finish, then retry",
                state.config().max_in_flight_per_key
            ),
        )
        .into_response();
    };
    req.extensions_mut().insert(Tenant(tenant));
    let resp = next.run(req).await;
    drop(permit);
    resp
}
