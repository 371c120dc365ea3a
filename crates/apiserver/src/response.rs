//! The one place errors become a `metav1.Status` response
//! ([`ErrorResponse`], [`status_response`]), and responses with an encoded
//! body ([`bytes_response`]). Below the handlers and the state: every route
//! module uses these, and they use nothing else of the API server.

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use ubernetes_apimachinery::ApiError;

/// An [`ApiError`] on its way out: the one place errors become a
/// `metav1.Status` response.
#[derive(Debug)]
pub struct ErrorResponse(pub ApiError);

impl From<ApiError> for ErrorResponse {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> axum::response::Response {
        status_response(&self.0)
    }
}

/// The HTTP response of an error.
pub fn status_response(e: &ApiError) -> axum::response::Response {
    if e.code >= 500 {
        tracing::warn!(code = e.code, reason = %e.reason, message = %e.message, "request failed");
    } else {
        tracing::debug!(code = e.code, reason = %e.reason, message = %e.message, "request refused");
    }
    let body = serde_json::to_vec(&e.status()).unwrap_or_default();
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = e.status_code();
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut()
        .insert(http::header::CACHE_CONTROL, no_cache());
    if e.code == 404 && *e == ApiError::no_route() {
        // A path that names nothing served: not a request metric's label.
        resp.extensions_mut().insert(NoRoute);
    }
    if let Some(secs) = e.retry_after {
        resp.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

/// kube-apiserver's `WithCacheControl` filter: no API answer may be cached
/// (found by the difference harness, `e2e/tests/diff_vs_kube.rs`).
fn no_cache() -> HeaderValue {
    HeaderValue::from_static("no-cache, private")
}

/// A response with a body already encoded.
pub fn bytes_response(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Body>,
    warnings: &[String],
) -> axum::response::Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    if let Ok(ct) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, ct);
    }
    resp.headers_mut()
        .insert(http::header::CACHE_CONTROL, no_cache());
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("Warning", v);
        }
    }
    resp
}

/// What a handler answers.
pub type HandlerResult = Result<axum::response::Response, ErrorResponse>;

/// A response of a path that names nothing served (kube's not-found
/// handler, which is not instrumented): not counted, so that made-up paths
/// cannot grow the label sets.
#[derive(Clone, Copy, Debug)]
pub struct NoRoute;
