//! The endpoint a pull member's agent opens its reverse tunnel at (SPEC
//! §3.12, issue 24): `POST /apis/federation/v1beta1/clusters/NAME/tunnel`
//! with `Connection: Upgrade` and `Upgrade: ubernetes-tunnel`.
//!
//! - **Who may**: the filter chain authorizes it like any request: verb
//!   `create`, resource `clusters`, subresource `tunnel`, name NAME. The
//!   identity `ubernetes join NAME --pull` makes for the agent has exactly
//!   that (and its Lease), so one agent cannot open another cluster's
//!   tunnel (403 in kube's words).
//! - **Which clusters**: the Cluster must exist (404) and say
//!   `spec.syncMode: Pull` (else 400: the federation reaches a push member
//!   itself). A request that is not an HTTP/1.1 upgrade to
//!   `ubernetes-tunnel` is 400; a server without federation controllers
//!   (nothing to take the tunnel) is 503.
//! - **Then**: 101 Switching Protocols, and the upgraded connection goes to
//!   the acceptor `ubernetes serve` set ([`set_acceptor`]: the federation's
//!   tunnel registry, `ubernetes_federation::pull`), which runs an HTTP/2
//!   client over it. The request is long-running (no 60 s timeout).

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::Response;
use axum::routing::post;
use futures::future::BoxFuture;
use http::header;
use ubernetes_apimachinery::ApiError;

use crate::response::status_response;
use crate::state::AppState;

/// The `Upgrade` protocol of a tunnel.
pub const PROTOCOL: &str = "ubernetes-tunnel";

/// Takes a pull cluster's upgraded connection: (cluster name, connection).
pub type Acceptor = Arc<
    dyn Fn(String, hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>) -> BoxFuture<'static, ()>
        + Send
        + Sync,
>;

fn acceptor() -> &'static OnceLock<Acceptor> {
    static ACCEPTOR: OnceLock<Acceptor> = OnceLock::new();
    &ACCEPTOR
}

/// Hand every tunnel this process accepts to `accept` (set once, when the
/// federation starts; later calls are ignored).
pub fn set_acceptor(accept: Acceptor) {
    if acceptor().set(accept).is_err() {
        tracing::debug!("the tunnel acceptor was already set");
    }
}

pub use crate::cluster_proxy::is_tunnel_path;

/// The tunnel route.
pub fn router() -> Router<Arc<AppState>> {
    Router::new().route(
        "/apis/federation/v1beta1/clusters/{name}/tunnel",
        post(open),
    )
}

async fn open(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    match upgrade(&state, name, request).await {
        Ok(response) => response,
        Err(e) => status_response(&e),
    }
}

/// Whether `headers` ask for an upgrade to the tunnel protocol.
fn asks_for_tunnel(headers: &http::HeaderMap) -> bool {
    let connection_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    let protocol = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case(PROTOCOL));
    connection_upgrade && protocol
}

async fn upgrade(
    state: &AppState,
    name: String,
    mut request: Request,
) -> Result<Response, ApiError> {
    let clusters = state
        .registry
        .get("federation", "v1beta1", "clusters")
        .ok_or_else(ApiError::no_route)?;
    let cluster: serde_json::Value = serde_json::from_slice(&clusters.get(None, &name).await?)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mode = cluster
        .pointer("/spec/syncMode")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("Push");
    if mode != "Pull" {
        return Err(ApiError::bad_request(format!(
            "cluster {name:?} is not in pull mode (spec.syncMode is {mode}): the federation reaches it itself"
        )));
    }
    if !asks_for_tunnel(request.headers()) {
        return Err(ApiError::bad_request(format!(
            "the tunnel of cluster {name:?} needs an HTTP/1.1 upgrade (Connection: Upgrade, Upgrade: {PROTOCOL})"
        )));
    }
    let Some(accept) = acceptor().get().cloned() else {
        return Err(ApiError::service_unavailable(format!(
            "the federation controllers are not running here: no tunnel for cluster {name:?}"
        )));
    };
    let upgraded = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        match upgraded.await {
            Ok(io) => accept(name, hyper_util::rt::TokioIo::new(io)).await,
            Err(e) => tracing::debug!(cluster = %name, error = %e, "a tunnel did not start"),
        }
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    response.headers_mut().insert(
        header::CONNECTION,
        http::HeaderValue::from_static("Upgrade"),
    );
    response
        .headers_mut()
        .insert(header::UPGRADE, http::HeaderValue::from_static(PROTOCOL));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_paths_name_one_cluster() {
        assert!(is_tunnel_path(
            "/apis/federation/v1beta1/clusters/edge/tunnel"
        ));
        assert!(!is_tunnel_path("/apis/federation/v1beta1/clusters//tunnel"));
        assert!(!is_tunnel_path(
            "/apis/federation/v1beta1/clusters/a/b/tunnel"
        ));
        assert!(!is_tunnel_path(
            "/apis/federation/v1beta1/clusters/edge/proxy"
        ));
    }

    #[test]
    fn only_an_upgrade_to_the_tunnel_protocol_is_a_tunnel() {
        let mut h = http::HeaderMap::new();
        h.insert(
            header::CONNECTION,
            "keep-alive, Upgrade"
                .parse()
                .unwrap_or(http::HeaderValue::from_static("")),
        );
        assert!(!asks_for_tunnel(&h));
        h.insert(header::UPGRADE, http::HeaderValue::from_static("websocket"));
        assert!(!asks_for_tunnel(&h));
        h.insert(header::UPGRADE, http::HeaderValue::from_static(PROTOCOL));
        assert!(asks_for_tunnel(&h));
    }
}
