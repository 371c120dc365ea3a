//! Service-account tokens over HTTP, as kube-apiserver serves them:
//!
//! - [`create_token`]: `POST …/namespaces/NS/serviceaccounts/NAME/token`,
//!   the TokenRequest subresource (`pkg/registry/core/serviceaccount/storage/token.go`):
//!   `kubectl create token NAME`. Audiences default to `--api-audiences`,
//!   `expirationSeconds` to 3600 (at least 600, at most 2^32; shortened to
//!   `--service-account-max-token-expiration` with a warning), and a
//!   `boundObjectRef` to a Pod, Secret or Node puts that object into the
//!   claims (a pod's node too), so the token dies with it.
//! - [`router`]: the OIDC discovery documents `/.well-known/openid-configuration`
//!   and `/openid/v1/jwks` (RBAC: `system:service-account-issuer-discovery`,
//!   bound to `system:serviceaccounts`, as kube's bootstrap policy).
//! - [`load_issuer`]: the signing key (`--service-account-signing-key-file`,
//!   else `DATA_DIR/pki/sa.key`, made once) and the other flags.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse as _;
use axum::routing::get;
use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::error::field;
use ubernetes_registry::jwt::{Binding, JwtConfig, ObjectRef, ServiceAccountJwt};

use crate::handlers::negotiate;
use crate::handlers::resource::{Target, render_value};
use crate::handlers::{ErrorResponse, HandlerResult, bytes_response};
use crate::options::ServerOptions;
use crate::state::AppState;

/// The group and kind of the subresource's body.
const AUTHN: &str = "authentication.k8s.io";
const TOKEN_REQUEST: &str = "TokenRequest";
/// `SetDefaults_TokenRequestSpec`: one hour.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// `ValidateTokenRequest`: ten minutes.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// `ValidateTokenRequest`: 2^32 seconds.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// The service-account token issuer of `options`.
pub fn load_issuer(options: &ServerOptions) -> anyhow::Result<Arc<ServiceAccountJwt>> {
    let (signing_key_pem, signing_key_name) = match &options.service_account_signing_key_file {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| {
                format!(
                    "cannot read --service-account-signing-key-file {}",
                    path.display()
                )
            })?,
            format!("--service-account-signing-key-file {}", path.display()),
        ),
        None => {
            let dir = options.pki_dir();
            let (pem, outcome) =
                ubernetes_certs::ensure_service_account_key(&dir).with_context(|| {
                    format!(
                        "cannot prepare the service-account key in {}",
                        dir.display()
                    )
                })?;
            tracing::info!(dir = %dir.display(), ?outcome, "service-account signing key");
            (
                pem,
                dir.join(ubernetes_certs::SERVICE_ACCOUNT_KEY_FILE)
                    .display()
                    .to_string(),
            )
        }
    };
    let mut verification_keys = Vec::new();
    for path in &options.service_account_key_file {
        let pem = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read --service-account-key-file {}", path.display())
        })?;
        verification_keys.push((
            pem,
            format!("--service-account-key-file {}", path.display()),
        ));
    }
    let jwt = ServiceAccountJwt::new(JwtConfig {
        issuers: options.service_account_issuer.clone(),
        api_audiences: options.api_audiences.clone(),
        signing_key_pem,
        signing_key_name,
        verification_keys,
        max_expiration_seconds: i64::try_from(
            options.service_account_max_token_expiration.as_secs(),
        )
        .unwrap_or(i64::MAX),
    })
    .map_err(|e| anyhow::anyhow!("service-account keys: {e}"))?;
    tracing::info!(issuer = jwt.issuer(), algorithm = jwt.algorithm(), audiences = ?jwt.api_audiences(), "service-account tokens");
    Ok(jwt)
}

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

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `schema.GroupVersionKind.String()` of a reference.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// `POST …/serviceaccounts/NAME/token` (kube's `TokenREST.Create`).
pub async fn create_token(
    state: &AppState,
    target: &Target,
    name: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> HandlerResult {
    let info = target.store.info().clone();
    let namespace = target
        .namespace
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
    let mut req = negotiate::decode_body(headers, body, TOKEN_REQUEST)?;
    let kind = str_at(&req, "/kind");
    if !kind.is_empty() && kind != TOKEN_REQUEST {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {TOKEN_REQUEST}): couldn't get version/kind; json parse error: expected {AUTHN}/v1, Kind={TOKEN_REQUEST}, got {}, Kind={kind}",
            str_at(&req, "/apiVersion")
        ))
        .into());
    }
    if !req.is_object() {
        return Err(ApiError::bad_request("the body of the request is not a TokenRequest").into());
    }
    let invalid = |name: &str, cause| ApiError::invalid(AUTHN, TOKEN_REQUEST, name, vec![cause]);
    let req_name = str_at(&req, "/metadata/name").to_string();
    if !req_name.is_empty() && req_name != name {
        return Err(invalid(
            name,
            field::invalid(
                "metadata.name",
                &json!(req_name),
                "must match the service account name if specified",
            ),
        )
        .into());
    }
    let req_ns = str_at(&req, "/metadata/namespace").to_string();
    if !req_ns.is_empty() && req_ns != namespace {
        return Err(invalid(
            name,
            field::invalid(
                "metadata.namespace",
                &json!(req_ns),
                "must match the service account namespace if specified",
            ),
        )
        .into());
    }
    let account = target.store.get_value(Some(namespace), name).await?;
    let account_uid = str_at(&account, "/metadata/uid").to_string();
    let req_uid = str_at(&req, "/metadata/uid").to_string();
    if !req_uid.is_empty() && req_uid != account_uid {
        return Err(ApiError::conflict(
            AUTHN,
            TOKEN_REQUEST,
            name,
            &format!(
                "the UID in the token request ({req_uid}) does not match the UID of the service account ({account_uid})"
            ),
        )
        .into());
    }
    let jwt = &state.service_accounts;
    let mut audiences: Vec<String> = req
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = jwt.api_audiences().to_vec();
    }
    let mut expiration = match req.pointer("/spec/expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "json: cannot unmarshal {v} into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64"
            ))
        })?,
    };
    if expiration == 0 {
        expiration = DEFAULT_EXPIRATION_SECONDS;
    }
    let now = jiff::Timestamp::now();
    // Static validation (`ValidateTokenRequest`).
    let mut causes = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(AUTHN, TOKEN_REQUEST, "", causes).into());
    }
    let mut binding = Binding::default();
    if let Some(r) = req.pointer("/spec/boundObjectRef").filter(|r| !r.is_null()) {
        binding = bind(state, namespace, name, r).await?;
    }
    let mut warnings = Vec::new();
    let max = jwt.max_expiration_seconds();
    if max > 0 && expiration > max {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {max} seconds"
        ));
        expiration = max;
    }
    let account_ref = ObjectRef {
        name: name.to_string(),
        uid: account_uid.clone(),
    };
    let now_secs = now.as_second();
    let (token, _exp) = jwt
        .bound_token(
            namespace,
            &account_ref,
            &binding,
            &audiences,
            expiration,
            now_secs,
        )
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
    let expires = jiff::Timestamp::from_second(now_secs.saturating_add(expiration))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let created =
        jiff::Timestamp::from_second(now_secs).map_err(|e| ApiError::internal(e.to_string()))?;
    if let Some(obj) = req.as_object_mut() {
        obj.insert("apiVersion".into(), json!(format!("{AUTHN}/v1")));
        obj.insert("kind".into(), json!(TOKEN_REQUEST));
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        meta["name"] = json!(name);
        meta["namespace"] = json!(namespace);
        meta["uid"] = json!(account_uid);
        meta["creationTimestamp"] = json!(created.to_string());
        let spec = obj.entry("spec").or_insert_with(|| json!({}));
        if !spec.is_object() {
            *spec = json!({});
        }
        spec["audiences"] = json!(audiences);
        spec["expirationSeconds"] = json!(expiration);
        if spec.get("boundObjectRef").is_some_and(Value::is_null)
            && let Some(s) = spec.as_object_mut()
        {
            s.remove("boundObjectRef");
        }
        obj.insert(
            "status".into(),
            json!({"token": token, "expirationTimestamp": expires.to_string()}),
        );
    }
    render_value(
        &info,
        &req,
        negotiate::output(headers)?,
        StatusCode::CREATED,
        &warnings,
    )
}

/// Resolve `spec.boundObjectRef` (Pod, Secret or Node of the core group).
async fn bind(
    state: &AppState,
    namespace: &str,
    account: &str,
    r: &Value,
) -> Result<Binding, ApiError> {
    let api_version = str_at(r, "/apiVersion");
    let kind = str_at(r, "/kind");
    let ref_name = str_at(r, "/name");
    let ref_uid = str_at(r, "/uid");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let get = |resource: &'static str, ns: Option<&str>| {
        let store = state.registry.get("", "v1", resource);
        let ns = ns.map(str::to_string);
        let name = ref_name.to_string();
        async move {
            let store = store.ok_or_else(|| {
                ApiError::bad_request(format!("cannot bind token to object of type {resource}"))
            })?;
            store.get_value(ns.as_deref(), &name).await
        }
    };
    let mut binding = Binding::default();
    let uid = match (group, kind) {
        ("", "Pod") => {
            let pod = get("pods", Some(namespace)).await?;
            if str_at(&pod, "/spec/serviceAccountName") != account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount \"{account}\" to pod running with different serviceaccount name."
                )));
            }
            let uid = str_at(&pod, "/metadata/uid").to_string();
            binding.pod = Some(ObjectRef {
                name: ref_name.to_string(),
                uid: uid.clone(),
            });
            let node_name = str_at(&pod, "/spec/nodeName");
            if !node_name.is_empty() {
                let node_uid = match state.registry.get("", "v1", "nodes") {
                    Some(nodes) => match nodes.get_value(None, node_name).await {
                        Ok(n) => str_at(&n, "/metadata/uid").to_string(),
                        // kube: a missing node still gives its name.
                        Err(e) if e.code == 404 => String::new(),
                        Err(e) => return Err(e),
                    },
                    None => String::new(),
                };
                binding.node = Some(ObjectRef {
                    name: node_name.to_string(),
                    uid: node_uid,
                });
            }
            uid
        }
        ("", "Node") => {
            let node = get("nodes", None).await?;
            let uid = str_at(&node, "/metadata/uid").to_string();
            binding.node = Some(ObjectRef {
                name: ref_name.to_string(),
                uid: uid.clone(),
            });
            uid
        }
        ("", "Secret") => {
            let secret = get("secrets", Some(namespace)).await?;
            let uid = str_at(&secret, "/metadata/uid").to_string();
            binding.secret = Some(ObjectRef {
                name: ref_name.to_string(),
                uid: uid.clone(),
            });
            uid
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {}",
                gvk_string(api_version, kind)
            )));
        }
    };
    if !ref_uid.is_empty() && ref_uid != uid {
        return Err(ApiError::conflict(
            group,
            kind,
            ref_name,
            &format!(
                "the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_kind_is_named_as_go_prints_a_group_version_kind() {
        assert_eq!(gvk_string("v1", "ConfigMap"), "/v1, Kind=ConfigMap");
        assert_eq!(
            gvk_string("apps/v1", "Deployment"),
            "apps/v1, Kind=Deployment"
        );
    }

    #[test]
    fn the_jwks_uri_is_the_servers_https_address() {
        let mut o = ServerOptions::for_test("/d");
        o.secure_port = 6443;
        assert_eq!(jwks_uri(&o), "https://127.0.0.1:6443/openid/v1/jwks");
        o.bind_address = "::1".parse().expect("ip");
        assert_eq!(jwks_uri(&o), "https://[::1]:6443/openid/v1/jwks");
    }
}
