//! `/openapi/v2` and `/openapi/v3[/...]`: serve the documents the openapi
//! crate generates (and caches) from the registry's resources, with ETags so
//! clients (kubectl caches by hash) can skip unchanged documents.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use ubernetes_apimachinery::ApiError;
use ubernetes_openapi::Served;

use crate::response::{HandlerResult, bytes_response};
use crate::state::AppState;

fn serve(doc: &Served, headers: &HeaderMap, immutable: bool) -> HandlerResult {
    let etag = doc.etag();
    if headers
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == etag)
    {
        let mut resp = bytes_response(
            StatusCode::NOT_MODIFIED,
            doc.content_type,
            Body::empty(),
            &[],
        );
        if let Ok(v) = HeaderValue::from_str(&etag) {
            resp.headers_mut().insert(http::header::ETAG, v);
        }
        return Ok(resp);
    }
    let mut resp = bytes_response(
        StatusCode::OK,
        doc.content_type,
        Body::from(doc.bytes.clone()),
        &[],
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        resp.headers_mut().insert(http::header::ETAG, v);
    }
    let cache = if immutable {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    resp.headers_mut()
        .insert(http::header::CACHE_CONTROL, HeaderValue::from_static(cache));
    Ok(resp)
}

/// The resources the OpenAPI documents describe: the stored ones, and
/// core's `bindings` and `componentstatuses` (kube documents both).
fn documented(state: &AppState) -> Vec<ubernetes_apimachinery::ResourceInfo> {
    let mut all = state.registry.resources();
    all.extend(crate::unstored::core_extra_resources());
    all
}

/// `/openapi/v2`: gnostic protobuf when asked for, else JSON.
pub async fn v2(State(state): State<Arc<AppState>>, headers: HeaderMap) -> HandlerResult {
    let resources = documented(&state);
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let doc = if accept.contains("protobuf") {
        ubernetes_openapi::v2_protobuf_bytes(&resources)
    } else {
        ubernetes_openapi::v2_json_bytes(&resources)
    };
    serve(&doc, &headers, false)
}

/// `/openapi/v3`: the index of group-version documents.
pub async fn v3_root(State(state): State<Arc<AppState>>, headers: HeaderMap) -> HandlerResult {
    let doc = ubernetes_openapi::v3_root_bytes(&documented(&state));
    serve(&doc, &headers, false)
}

/// `/openapi/v3/api/v1`, `/openapi/v3/apis/<g>/<v>`. As kube-openapi: a
/// request naming the current `hash` may be cached forever; one naming an
/// older hash is redirected (301) to the current one.
pub async fn v3_doc(
    State(state): State<Arc<AppState>>,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> HandlerResult {
    let doc = ubernetes_openapi::v3_document_bytes(&documented(&state), &path)
        .ok_or_else(ApiError::no_route)?;
    let asked = query.as_deref().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "hash")
            .map(|(_, v)| v.into_owned())
    });
    match asked {
        Some(h) if h == doc.hash => serve(&doc, &headers, true),
        Some(_) => {
            let location = format!("/openapi/v3/{}?hash={}", path.trim_matches('/'), doc.hash);
            let mut resp = bytes_response(
                StatusCode::MOVED_PERMANENTLY,
                "text/plain",
                Body::empty(),
                &[],
            );
            if let Ok(v) = HeaderValue::from_str(&location) {
                resp.headers_mut().insert(http::header::LOCATION, v);
            }
            Ok(resp)
        }
        None => serve(&doc, &headers, false),
    }
}
