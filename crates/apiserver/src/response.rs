//! The one place errors become a `metav1.Status` response
//! ([`ErrorResponse`], [`status_response`]), and responses with an encoded
//! body ([`bytes_response`]). Below the handlers and the state: every route
//! module uses these, and they use nothing else of the API server.

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use bytes::Bytes;
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
    let body = json_bytes(&e.status()).unwrap_or_default();
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

/// A value as a JSON body: ending with the newline Go's `json.Encoder`
/// writes after each value (kube-apiserver's JSON serializer; found by the
/// difference harness). Pushed onto the encoded buffer, no copy of it.
pub fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::with_capacity(512);
    serde_json::to_writer(&mut body, value).map_err(|e| ApiError::internal(e.to_string()))?;
    body.push(b'\n');
    Ok(body)
}

/// A body of JSON bytes already encoded (shared, e.g. an object's cached
/// encoding) followed by the newline of [`json_bytes`]: two frames, the
/// bytes not copied, the length still known (Content-Length).
pub fn json_body_with_newline(json: Bytes) -> Body {
    Body::new(WithNewline {
        json: Some(json),
        newline: true,
    })
}

struct WithNewline {
    json: Option<Bytes>,
    newline: bool,
}

impl http_body::Body for WithNewline {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let next = match this.json.take() {
            Some(json) => Some(json),
            None if this.newline => {
                this.newline = false;
                Some(Bytes::from_static(b"\n"))
            }
            None => None,
        };
        std::task::Poll::Ready(next.map(|b| Ok(http_body::Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.json.is_none() && !self.newline
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let len = self.json.as_ref().map_or(0, Bytes::len) + usize::from(self.newline);
        http_body::SizeHint::with_exact(len as u64)
    }
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
        if let Some(v) = warning_value(w) {
            resp.headers_mut().append("Warning", v);
        }
    }
    resp
}

/// A `Warning: 299 - "TEXT"` header value (RFC 7234, as kube-apiserver's).
fn warning_value(text: &str) -> Option<HeaderValue> {
    let text = format!(
        "299 - \"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    );
    HeaderValue::from_str(&text).ok()
}

/// Put `warning` before the answer's other warnings (kube-apiserver adds a
/// deprecated resource's warning before the handler runs).
pub fn warn_first(headers: &mut http::HeaderMap, warning: &str) {
    let Some(first) = warning_value(warning) else {
        return;
    };
    let others: Vec<HeaderValue> = headers.get_all("Warning").iter().cloned().collect();
    headers.insert("Warning", first);
    for v in others {
        headers.append("Warning", v);
    }
}

/// What a handler answers.
pub type HandlerResult = Result<axum::response::Response, ErrorResponse>;

/// A response of a path that names nothing served (kube's not-found
/// handler, which is not instrumented): not counted, so that made-up paths
/// cannot grow the label sets.
#[derive(Clone, Copy, Debug)]
pub struct NoRoute;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use http_body::Body as _;
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn json_answers_end_with_one_newline_and_keep_their_length() {
        let body = json_body_with_newline(Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(body.size_hint().exact(), Some(8));
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"{\"a\":1}\n");
        assert_eq!(
            json_bytes(&serde_json::json!({"a": 1})).unwrap(),
            b"{\"a\":1}\n"
        );
        let resp = status_response(&ApiError::not_found("", "configmaps", "x"));
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(bytes.ends_with(b"}\n"), "{bytes:?}");
    }

    #[test]
    fn a_deprecation_warning_goes_before_the_others() {
        let resp = bytes_response(
            StatusCode::OK,
            "application/json",
            "{}",
            &["a \"b\"".into()],
        );
        let mut headers = resp.headers().clone();
        warn_first(&mut headers, "old");
        let all: Vec<_> = headers.get_all("Warning").iter().collect();
        assert_eq!(all, ["299 - \"old\"", "299 - \"a \\\"b\\\"\""]);
    }
}
