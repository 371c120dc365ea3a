//! The cluster proxy (SPEC §3.10): `/apis/federation/v1beta1/clusters/<name>/proxy[/<path>]`
//! forwards to `<path>` on the member cluster `<name>`, with the
//! federation's own credentials for it, as kube-apiserver's `nodes/proxy`
//! and `services/proxy` subresources forward to a node or a service.
//!
//! - **Authorization** is the request's, done by the filter chain
//!   ([`crate::authz`]) like any other: verb from the HTTP method (`get`,
//!   `create`, `update`, `patch`, `delete`), resource `clusters`,
//!   subresource `proxy`, the cluster's name; a refusal is kube's 403
//!   (`clusters.federation "east" is forbidden: User "x" cannot get resource
//!   "clusters/proxy" …`). `cluster-admin` may; anyone else needs a role
//!   granting `clusters/proxy`.
//! - **Which member, which credentials**: the Cluster must exist (else 404
//!   `clusters.federation "x" not found`); the request then goes out with
//!   the client the federation controllers built for that member (the
//!   kubeconfig of the Cluster's Secret, the server picked from
//!   `serverAddressByClientCIDRs`; [`MemberClients`] is filled by
//!   `ubernetes serve` from the federation's member set), without its
//!   retries so the member's answer comes back as it is.
//! - **What passes**: method, path, query string, body and headers go out;
//!   status, headers and body come back, the body streamed as it arrives
//!   (a `?watch=true` through the proxy delivers each event at once). The
//!   member's errors are its own answers, passed on unchanged. The caller's
//!   `Authorization` and `Host`, and hop-by-hop headers (`Connection`,
//!   those it names, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, …) are
//!   not forwarded in either direction.
//! - **What does not**: upgrades (exec, attach, port-forward) are refused
//!   with 400; a Cluster whose member has no client (no usable credentials,
//!   not probed yet, federation controllers off) and a member that cannot be
//!   reached are 503 `ServiceUnavailable` naming the cluster and the error.
//!
//! A proxied request is long-running (kube's rule for the `proxy`
//! subresource): the 60 s request timeout does not apply.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use http::header::{self, HeaderMap, HeaderName};
use http::{Method, Uri};
use ubernetes_apimachinery::ApiError;

use crate::response::status_response;
use crate::state::AppState;

/// The federation group, version and resource the proxy hangs off.
const GROUP: &str = "federation";
const VERSION: &str = "v1beta1";
const RESOURCE: &str = "clusters";

use crate::cluster_proxy::split_path;
pub use crate::cluster_proxy::{ClusterProxy, MemberClients, is_proxy_path};

/// The proxy's routes (more specific than the generic resource route).
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/apis/federation/v1beta1/clusters/{name}/proxy", any(proxy))
        .route(
            "/apis/federation/v1beta1/clusters/{name}/proxy/",
            any(proxy),
        )
        .route(
            "/apis/federation/v1beta1/clusters/{name}/proxy/{*path}",
            any(proxy),
        )
}

async fn proxy(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match forward(&state, request).await {
        Ok(response) => response,
        Err(e) => status_response(&e),
    }
}

/// Headers never forwarded, in either direction: hop-by-hop (RFC 9110
/// §7.6.1, as Go's `httputil.ReverseProxy`) and what the outgoing
/// connection sets itself.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// `headers` without the hop-by-hop ones (and those `Connection` names)
/// and without `also`.
fn end_to_end(headers: &HeaderMap, also: &[HeaderName]) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || named.iter().any(|x| x == n) || also.contains(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Whether the request asks for a protocol upgrade (SPDY, WebSocket, or
/// HTTP/2's extended CONNECT).
fn is_upgrade(request: &Request) -> bool {
    request.method() == Method::CONNECT
        || request.headers().contains_key(header::UPGRADE)
        || request
            .headers()
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// An error and its causes, one after the other (`a: b: c`).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

async fn forward(state: &AppState, request: Request) -> Result<Response, ApiError> {
    let path = request.uri().path().to_string();
    let (name, member_path) = split_path(&path).ok_or_else(ApiError::no_route)?;
    let name = name.to_string();
    // 404 for a Cluster that does not exist, as any read of it.
    let clusters = state
        .registry
        .get(GROUP, VERSION, RESOURCE)
        .ok_or_else(ApiError::no_route)?;
    clusters.get(None, &name).await?;
    if is_upgrade(&request) {
        return Err(ApiError::bad_request(format!(
            "the proxy of cluster {name:?} does not support upgrade requests \
             (exec, attach, port-forward): connect to the member cluster directly"
        )));
    }
    let client = state.cluster_proxy.client(&name).ok_or_else(|| {
        ApiError::service_unavailable(format!(
            "error trying to reach cluster {name:?}: the federation has no client for it \
             (its credentials are not usable yet; see the Cluster's Ready condition)"
        ))
    })?;
    let target = match request.uri().query() {
        Some(q) => format!("{member_path}?{q}"),
        None => member_path.to_string(),
    };
    let uri: Uri = target
        .parse()
        .map_err(|e| ApiError::bad_request(format!("invalid proxy path {target:?}: {e}")))?;
    let (parts, body) = request.into_parts();
    let limit = usize::try_from(state.options.max_request_body_bytes).unwrap_or(usize::MAX);
    let body = axum::body::to_bytes(body, limit)
        .await
        .map_err(|e| ApiError::bad_request(format!("error reading the request body: {e}")))?;
    let mut out = http::Request::new(kube::client::Body::from(body));
    *out.method_mut() = parts.method;
    *out.uri_mut() = uri;
    *out.headers_mut() = end_to_end(
        &parts.headers,
        &[
            header::AUTHORIZATION,
            header::HOST,
            header::CONTENT_LENGTH,
            header::EXPECT,
        ],
    );
    tracing::debug!(cluster = %name, method = %out.method(), path = %target, "proxying to member");
    let response = client.send(out).await.map_err(|e| {
        ApiError::service_unavailable(format!(
            "error trying to reach cluster {name:?}: {}",
            error_chain(&e)
        ))
    })?;
    let (parts, body) = response.into_parts();
    let mut response = Response::new(Body::new(body));
    *response.status_mut() = parts.status;
    *response.headers_mut() = end_to_end(&parts.headers, &[]);
    Ok(response)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn proxy_paths_name_the_cluster_and_the_member_path() {
        let p = |s| split_path(s);
        assert_eq!(
            p("/apis/federation/v1beta1/clusters/east/proxy/api/v1/namespaces"),
            Some(("east", "/api/v1/namespaces"))
        );
        assert_eq!(
            p("/apis/federation/v1beta1/clusters/east/proxy"),
            Some(("east", "/"))
        );
        assert_eq!(
            p("/apis/federation/v1beta1/clusters/east/proxy/"),
            Some(("east", "/"))
        );
        assert_eq!(p("/apis/federation/v1beta1/clusters/east/proxyx"), None);
        assert_eq!(p("/apis/federation/v1beta1/clusters/east/status"), None);
        assert_eq!(p("/apis/federation/v1beta1/clusters/east"), None);
        assert_eq!(p("/apis/federation/v1beta1/clusters//proxy"), None);
    }

    #[test]
    fn hop_by_hop_headers_and_the_ones_connection_names_stay_behind() {
        let mut h = HeaderMap::new();
        h.insert("connection", "close, X-Private".parse().unwrap());
        h.insert("x-private", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("transfer-encoding", "chunked".parse().unwrap());
        h.insert("authorization", "Bearer caller".parse().unwrap());
        h.insert("accept", "application/json".parse().unwrap());
        h.append("warning", "299 - \"a\"".parse().unwrap());
        h.append("warning", "299 - \"b\"".parse().unwrap());
        let out = end_to_end(&h, &[header::AUTHORIZATION]);
        let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["accept", "warning"]);
        assert_eq!(out.get_all("warning").iter().count(), 2);
    }

    #[test]
    fn upgrades_are_recognised() {
        let req = |h: &[(&str, &str)], m: Method| {
            let mut r = http::Request::builder().method(m).uri("/x");
            for (k, v) in h {
                r = r.header(*k, *v);
            }
            r.body(Body::empty()).unwrap()
        };
        assert!(is_upgrade(&req(
            &[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")],
            Method::POST
        )));
        assert!(is_upgrade(&req(&[("upgrade", "websocket")], Method::GET)));
        assert!(is_upgrade(&req(&[], Method::CONNECT)));
        assert!(!is_upgrade(&req(
            &[("connection", "keep-alive")],
            Method::GET
        )));
    }
}
