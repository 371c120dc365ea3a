//! Service-account tokens over HTTP, as kube-apiserver serves them:
//!
//! - `handlers::token::create_token`: `POST …/namespaces/NS/serviceaccounts/NAME/token`,
//!   the TokenRequest subresource (`pkg/registry/core/serviceaccount/storage/token.go`):
//!   `kubectl create token NAME`. Audiences default to `--api-audiences`,
//!   `expirationSeconds` to 3600 (at least 600, at most 2^32; shortened to
//!   `--service-account-max-token-expiration` with a warning), and a
//!   `boundObjectRef` to a Pod, Secret or Node puts that object into the
//!   claims (a pod's node too), so the token dies with it.
//! - [`router`]: the OIDC discovery documents `/.well-known/openid-configuration`
//!   and `/openid/v1/jwks` (RBAC: `system:service-account-issuer-discovery`,
//!   bound to `system:serviceaccounts`, as kube's bootstrap policy).
//! - [`crate::issuer::load_issuer`]: the signing key (`--service-account-signing-key-file`,
//!   else `DATA_DIR/pki/sa.key`, made once) and the other flags.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::IntoResponse as _;
use axum::routing::get;
use serde_json::Value;
use ubernetes_apimachinery::ApiError;

use crate::options::ServerOptions;
use crate::response::{ErrorResponse, HandlerResult, bytes_response};
use crate::state::AppState;

/// The OIDC discovery routes.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(openid_configuration),
        )
        .route("/openid/v1/jwks", get(jwks))
}

/// Where the JWKS is served, as kube-apiserver derives it without
/// `--service-account-jwks-uri`: `https://<external address>/openid/v1/jwks`.
fn jwks_uri(options: &ServerOptions) -> String {
    let host = if options.bind_address.is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        options.bind_address.to_string()
    };
    let addr = std::net::SocketAddr::new(
        host.parse().unwrap_or(std::net::Ipv4Addr::LOCALHOST.into()),
        options.secure_port,
    );
    format!("https://{addr}/openid/v1/jwks")
}

fn cached_json(value: &Value, content_type: &'static str) -> HandlerResult {
    let body = serde_json::to_vec(value).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut resp = bytes_response(StatusCode::OK, content_type, body, &[]);
    // kube-apiserver's `max-age` for both documents.
    resp.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    Ok(resp)
}

async fn openid_configuration(State(state): State<Arc<AppState>>) -> HandlerResult {
    match state
        .service_accounts
        .openid_configuration(&jwks_uri(&state.options))
    {
        Some(doc) => cached_json(&doc, "application/json"),
        None => Err(ErrorResponse(ApiError::no_route())),
    }
}

async fn jwks(State(state): State<Arc<AppState>>) -> axum::response::Response {
    if state.service_accounts.openid_configuration("").is_none() {
        return ErrorResponse(ApiError::no_route()).into_response();
    }
    match cached_json(&state.service_accounts.jwks(), "application/jwk-set+json") {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jwks_uri_is_the_servers_https_address() {
        let mut o = ServerOptions::for_test("/d");
        o.secure_port = 6443;
        assert_eq!(jwks_uri(&o), "https://127.0.0.1:6443/openid/v1/jwks");
        o.bind_address = "::1".parse().expect("ip");
        assert_eq!(jwks_uri(&o), "https://[::1]:6443/openid/v1/jwks");
    }
}
