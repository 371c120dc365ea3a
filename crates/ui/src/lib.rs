//! # ubernetes-ui
//!
//! The dashboard (SPEC §3.15): `https://<server>/ui/`, a page for people who
//! would rather look than read. This crate holds its assets, plain
//! JavaScript modules and CSS committed under `assets/` (no build step, no
//! npm: `docs/architecture.md`, "The dashboard"), built into the binary
//! with `include_bytes!`, and [`router`], which serves them.
//!
//! The assets are public (they hold no data): [`router`] is merged outside
//! the API's authentication filter, so a browser loads the page without
//! credentials. Every request the page itself makes goes to the API with
//! the user's bearer token, so RBAC decides what it shows.
//!
//! Every answer carries a strict `Content-Security-Policy` (scripts and
//! styles from the server only, no inline script, `connect-src 'self'`),
//! `X-Content-Type-Options: nosniff`, `Cache-Control: no-cache` and an
//! `ETag`, so a browser revalidates (304) and picks up a new binary's
//! assets at once.
#![forbid(unsafe_code)]

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};

/// Where the dashboard is served.
pub const PREFIX: &str = "/ui";

/// The Content-Security-Policy of every dashboard answer: nothing but the
/// server's own scripts, styles and API; no inline script or style
/// attribute, no frame, no form posted elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One embedded asset.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!("../assets/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the dashboard, by its path under `/ui/`.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("api.js", JS),
    asset!("live.js", JS),
    asset!("dom.js", JS),
    asset!("app.js", JS),
    asset!("pages/clusters.js", JS),
    asset!("pages/member.js", JS),
    asset!("pages/workloads.js", JS),
    asset!("pages/object.js", JS),
    asset!("pages/dns.js", JS),
];

/// The routes of the dashboard: `/ui` redirects to `/ui/`, which is
/// `index.html`; `/ui/PATH` is the asset PATH, 404 (plain text) for any
/// other. Merge it outside the API's filters (it needs no credentials).
pub fn router() -> Router {
    Router::new()
        .route(PREFIX, get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|headers: HeaderMap| async move { serve("index.html", &headers) }))
        .route(
            "/ui/{*path}",
            get(|Path(path): Path<String>, headers: HeaderMap| async move {
                serve(&path, &headers)
            }),
        )
}

/// The answer for asset `path` (relative to `/ui/`).
fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.path == path) else {
        tracing::debug!(path, "no such dashboard asset");
        return with_security_headers(
            (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
        );
    };
    let etag = etag(asset.body);
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(asset.body));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        );
        r
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, v);
    }
    with_security_headers(response)
}

fn with_security_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// A strong ETag: the FNV-1a hash of the content (the assets are fixed for
/// the binary's life).
fn etag(body: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{hash:016x}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::to_bytes;
    use http::Request;
    use tower::ServiceExt as _;

    async fn get(path: &str, if_none_match: Option<&str>) -> Response {
        let mut req = Request::get(path);
        if let Some(tag) = if_none_match {
            req = req.header(header::IF_NONE_MATCH, tag);
        }
        let req = req.body(Body::empty()).expect("request");
        router().oneshot(req).await.expect("infallible")
    }

    fn header_of(r: &Response, name: header::HeaderName) -> &str {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[tokio::test]
    async fn bare_prefix_redirects_to_the_slash() {
        let r = get("/ui", None).await;
        assert_eq!(r.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(header_of(&r, header::LOCATION), "/ui/");
    }

    #[tokio::test]
    async fn index_and_modules_have_their_types_and_a_strict_policy() {
        for (path, type_) in [
            ("/ui/", "text/html; charset=utf-8"),
            ("/ui/app.js", JS),
            ("/ui/pages/clusters.js", JS),
            ("/ui/style.css", "text/css; charset=utf-8"),
        ] {
            let r = get(path, None).await;
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            assert_eq!(header_of(&r, header::CONTENT_TYPE), type_, "{path}");
            let csp = header_of(&r, header::CONTENT_SECURITY_POLICY);
            assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
            assert!(csp.contains("connect-src 'self'"), "{path}: {csp}");
            assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
            assert_eq!(header_of(&r, header::CACHE_CONTROL), "no-cache");
            assert_eq!(header_of(&r, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        }
    }

    #[tokio::test]
    async fn an_unknown_asset_is_404_and_a_known_etag_is_304() {
        assert_eq!(
            get("/ui/nope.js", None).await.status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get("/ui/../api", None).await.status(),
            StatusCode::NOT_FOUND
        );
        let first = get("/ui/app.js", None).await;
        let tag = header_of(&first, header::ETAG).to_string();
        assert!(tag.starts_with('"'), "{tag}");
        let again = get("/ui/app.js", Some(&tag)).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        let body = to_bytes(again.into_body(), 1024).await.expect("body");
        assert!(body.is_empty());
    }

    /// The page loads nothing from elsewhere and runs no inline script.
    #[test]
    fn the_assets_reference_nothing_outside_the_server() {
        for a in ASSETS {
            let text = String::from_utf8_lossy(a.body);
            for bad in ["http://", "https://", "//cdn", "unsafe-inline"] {
                assert!(!text.contains(bad), "{} contains {bad}", a.path);
            }
            if a.path.ends_with(".html") {
                assert!(!text.contains("<script>"), "{}: inline script", a.path);
                for handler in ["onclick", "onload", "onsubmit", "onerror"] {
                    assert!(!text.contains(handler), "{}: inline {handler}", a.path);
                }
                assert!(!text.contains("style="), "{}: inline style", a.path);
            }
        }
    }
}
