//! Who is asking: the API key names the tenant; every handler gets it as a
//! `Tenant` and passes it into the store. Also the per-key in-flight limit.

use std::net::IpAddr;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, HOST};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use memloop::Scope;

use crate::config::ServerConfig;
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

/// The name part of a `Host` header: `[::1]:8420` is `::1`, `a.b:80` is `a.b`.
fn host_name(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    }
}

/// Whether a `Host` header names this server: a loopback name, the address
/// it was told to listen on (unless that is 0.0.0.0 / ::), or one of
/// `allowed_hosts` (a name, or `name:port` to pin the port too).
fn host_allowed(config: &ServerConfig, host: &str) -> bool {
    let name = host_name(host);
    if name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    {
        return true;
    }
    let bind = host_name(&config.addr);
    let bind_is_a_name = !bind.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified());
    if bind_is_a_name && !bind.is_empty() && name.eq_ignore_ascii_case(bind) {
        return true;
    }
    config.allowed_hosts.iter().any(|allowed| {
        // `[::1]:80` and `a.b:80` pin the port; `a.b` and a bare IPv6 do not.
        let pins_port = match allowed.strip_prefix('[') {
            Some(rest) => rest.contains("]:"),
            None => allowed.matches(':').count() == 1,
        };
        if pins_port {
            host.eq_ignore_ascii_case(allowed)
        } else {
            name.eq_ignore_ascii_case(allowed.trim_start_matches('[').trim_end_matches(']'))
        }
    })
}

/// The DNS-rebinding guard: a web page the user visits can point a name of
/// its own at 127.0.0.1 and make the browser send requests there, but the
/// browser then sends that name as `Host`. Without keys every route is
/// guarded (anyone reaching it reads everything); with keys `/mcp` is, as
/// MCP's transport asks, since MCP clients run on the user's machine.
fn check_host(config: &ServerConfig, headers: &HeaderMap, path: &str) -> Result<(), ApiError> {
    let guarded = config.api_keys.is_empty() || path == "/mcp" || path.starts_with("/mcp/");
    let Some(host) = headers.get(HOST) else {
        return Ok(());
    };
    if !guarded || host.to_str().is_ok_and(|h| host_allowed(config, h)) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_host",
        if config.api_keys.is_empty() {
            "this server has no API keys and answers only requests addressed to localhost or a name in [server] allowed_hosts (a guard against DNS rebinding)"
        } else {
            "/mcp answers only requests addressed to localhost, the server's address or a name in [server] allowed_hosts (a guard against DNS rebinding)"
        },
    ))
}

/// Reads the whole body within `body_read_timeout` and `max_body_bytes`,
/// so the handler finds it in memory. Done before the key's in-flight
/// permit is taken: a client that stalls halfway through an upload holds
/// a connection (bounded per IP, closed at the deadline), never a permit.
async fn read_body(config: &ServerConfig, req: Request) -> Result<Request, ApiError> {
    let limit = config.max_body_bytes;
    let (parts, mut body) = req.into_parts();
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::body_too_large());
    }
    let collect = async {
        let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_body",
                    format!("the body could not be read: {e}"),
                )
            })?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > limit {
                    return Err(ApiError::body_too_large());
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(bytes)
    };
    match tokio::time::timeout(config.body_read_timeout, collect).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the body did not arrive within {} s (body_read_timeout): send it at once, then retry",
                config.body_read_timeout.as_secs_f32()
            ),
        )),
    }
}

/// Resolves the tenant, reads the body, then holds one of the key's
/// in-flight permits while the request is worked on (429 when none is
/// left).
pub async fn authenticate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if PUBLIC.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    if let Err(e) = check_host(state.config(), req.headers(), req.uri().path()) {
        return e.into_response();
    }
    // The inspector's files hold no data: the page asks for a key itself.
    if crate::ui::is_ui_path(req.uri().path()) {
        return next.run(req).await;
    }
    let (slot, tenant) = match resolve(&state, req.headers()) {
        Ok(found) => found,
        Err(e) => return e.into_response(),
    };
    let mut req = match read_body(state.config(), req).await {
        Ok(r) => r,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(addr: &str, allowed: &[&str]) -> ServerConfig {
        ServerConfig {
            addr: addr.into(),
            allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
            ..ServerConfig::default()
        }
    }

    #[test]
    fn hosts_are_loopback_the_bind_address_or_allowed() {
        let c = config("0.0.0.0:8420", &["memory.example", "api.example:443"]);
        for ok in [
            "localhost",
            "LOCALHOST:8420",
            "127.0.0.1:8420",
            "[::1]:8420",
            "memory.example",
            "memory.example:8420",
            "api.example:443",
        ] {
            assert!(host_allowed(&c, ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "api.example:8420",
            "0.0.0.0:8420",
            "localhost.evil.example",
            "",
        ] {
            assert!(!host_allowed(&c, bad), "{bad}");
        }
        let c = config("192.0.2.7:8420", &[]);
        assert!(host_allowed(&c, "192.0.2.7:8420"));
        assert!(!host_allowed(&c, "192.0.2.8:8420"));
    }
}
