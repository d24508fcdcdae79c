//! Every error a client sees, in one place: memloop's error classes, body
//! and query rejections, auth and limits, all as
//! `{"error":{"code","message"}}` with the matching status.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use memloop::{Error, ErrorClass};
use serde::de::DeserializeOwned;

/// An error answered to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// A body over `max_body_bytes`, whichever layer found it.
    pub fn body_too_large() -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "the body is larger than the server's limit (max_body_bytes, 1 MiB by default)",
        )
    }

    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {"code": self.code, "message": self.message},
            // Mem0's clients show `detail`: with it they report what was wrong.
            "detail": self.message,
        })
    }
}

/// The one mapping from memloop's error classes to HTTP.
impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match (&e, e.class()) {
            // The LLM provider refused our request (a bad provider key, a
            // model id it does not know): the server's fault, not the client's.
            (Error::RemoteRejected(_), _) => StatusCode::BAD_GATEWAY,
            (_, ErrorClass::InvalidInput) => StatusCode::BAD_REQUEST,
            (_, ErrorClass::NotFound) => StatusCode::NOT_FOUND,
            (_, ErrorClass::Transient) => StatusCode::SERVICE_UNAVAILABLE,
            (_, ErrorClass::Corruption | ErrorClass::Internal) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match &e {
            // The store's message points at the CLI; here the id is all there is to say.
            Error::NotFound(id) => format!("no memory with id {}", memloop::shown_value(id)),
            Error::InvalidInput(m) => m.clone(),
            other => other.to_string(),
        };
        if status.is_server_error() {
            tracing::error!(code = e.code(), error = %e, "request failed");
        }
        ApiError::new(status, e.code(), message)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        match &r {
            JsonRejection::JsonSyntaxError(_) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the body is not valid JSON: {}", r.body_text()),
            ),
            JsonRejection::JsonDataError(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                r.body_text(),
            ),
            JsonRejection::MissingJsonContentType(_) => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as JSON with `Content-Type: application/json`",
            ),
            _ if r.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::body_too_large(),
            _ => ApiError::new(r.status(), "invalid_body", r.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        match self.status {
            // Not configured is not temporary: no Retry-After for it.
            StatusCode::SERVICE_UNAVAILABLE if self.code == "llm_not_configured" => {}
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            // The rest of a body that timed out is not coming: this
            // connection cannot carry another request.
            StatusCode::REQUEST_TIMEOUT => {
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            StatusCode::UNAUTHORIZED => {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"memloop\""),
                );
            }
            _ => {}
        }
        resp
    }
}

/// `axum::Json` with our error bodies.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        axum::Json::<T>::from_request(req, state)
            .await
            .map(|axum::Json(v)| ApiJson(v))
            .map_err(ApiError::from)
    }
}

/// `axum::extract::Query` with our error bodies.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| ApiQuery(v))
            .map_err(ApiError::from)
    }
}

/// `axum::extract::Path` with our error bodies.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| ApiPath(v))
            .map_err(ApiError::from)
    }
}

/// Unknown routes and methods answer with the same body shape.
pub async fn no_route() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_route",
        "no such route: see GET /openapi.json for the routes",
    )
}

pub async fn no_method() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method: see GET /openapi.json",
    )
}

/// Turns a handler's panic into a 500 with a body, instead of a dropped connection.
pub fn panic_response(err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    panic_api_error(err).into_response()
}

pub(crate) fn panic_api_error(err: Box<dyn std::any::Any + Send + 'static>) -> ApiError {
    let detail = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = detail, "a handler panicked");
    ApiError::internal(
        "the server hit a bug handling this request (it is logged); retrying will not help until it is fixed",
    )
}
