//! The create-only review resources (`pkg/registry/authorization/*` and
//! `pkg/registry/authentication/*` of kube-apiserver): their answers are
//! computed, never stored.
//! - `authorization.k8s.io/v1`: `selfsubjectaccessreviews`
//!   (`kubectl auth can-i`), `selfsubjectrulesreviews` (`can-i --list`),
//!   `subjectaccessreviews`, `namespaces/<ns>/localsubjectaccessreviews`;
//! - `authentication.k8s.io/v1`: `selfsubjectreviews` (`kubectl auth
//!   whoami`), `tokenreviews` (tokens of `--token-auth-file`).
//!
//! Bodies arrive as JSON, YAML or protobuf (kubectl sends protobuf); the
//! answer is `201 Created` with the review and its status, as JSON (or YAML
//! when asked). [`review_resources`] describes them for discovery.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_rbac::reviews as rbac_reviews;

use crate::authn;
use crate::authz::to_rbac_user;
use crate::handlers::negotiate;
use crate::response::{HandlerResult, bytes_response};
use crate::state::AppState;

pub use crate::unstored::review_resources;
use crate::unstored::{AUTHN, AUTHZ};

/// The reviews whose bodies carry secrets (a TokenReview's token): never
/// audited above `Metadata`, as kube's default policy.
pub const SECRET_BODIES: &[(&str, &str)] = &[(AUTHN, "tokenreviews")];

/// The review routes (merge into the API router before the generic
/// `/apis/{group}/{version}/{*rest}` route; static paths win in axum).
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(self_subject_access_review),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            post(self_subject_rules_review),
        )
        .route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            post(subject_access_review),
        )
        .route(
            "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews",
            post(local_subject_access_review),
        )
        .route(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            post(self_subject_review),
        )
        .route(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            post(token_review),
        )
}

fn created(headers: &HeaderMap, v: &Value) -> HandlerResult {
    let output = negotiate::output(headers)?;
    // These resources have no table convertor in kube-apiserver, so a
    // Table is not a media type they can answer with (406).
    if output == negotiate::Output::Table {
        let accept = headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        return Err(ApiError::not_acceptable(format!(
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf; got {accept}"
        ))
        .into());
    }
    let body = negotiate::encode(v, output)?;
    Ok(bytes_response(
        StatusCode::CREATED,
        negotiate::content_type(output),
        body,
        &[],
    ))
}

/// The body as JSON, checked to be the expected kind when it names one.
fn body_of(headers: &HeaderMap, body: &[u8], group: &str, kind: &str) -> Result<Value, ApiError> {
    let v = negotiate::decode_body(headers, body, kind)?;
    let found = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if !found.is_empty() && found != kind {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: expected {group}/v1, Kind={kind}, got {api_version}, Kind={found}"
        )));
    }
    Ok(v)
}

async fn self_subject_access_review(
    State(state): State<Arc<AppState>>,
    Extension(user): Extension<authn::UserInfo>,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let v = body_of(&headers, &body, AUTHZ, "SelfSubjectAccessReview")?;
    let out = rbac_reviews::self_subject_access_review(
        &state.authz.authorizer(),
        &to_rbac_user(&user),
        &v,
    )?;
    created(&headers, &out)
}

async fn self_subject_rules_review(
    State(state): State<Arc<AppState>>,
    Extension(user): Extension<authn::UserInfo>,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let v = body_of(&headers, &body, AUTHZ, "SelfSubjectRulesReview")?;
    let out = rbac_reviews::self_subject_rules_review(
        &state.authz.authorizer(),
        &to_rbac_user(&user),
        &v,
    )?;
    created(&headers, &out)
}

async fn subject_access_review(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let v = body_of(&headers, &body, AUTHZ, "SubjectAccessReview")?;
    let out = rbac_reviews::subject_access_review(&state.authz.authorizer(), &v)?;
    created(&headers, &out)
}

async fn local_subject_access_review(
    State(state): State<Arc<AppState>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let v = body_of(&headers, &body, AUTHZ, "LocalSubjectAccessReview")?;
    let out = rbac_reviews::local_subject_access_review(&state.authz.authorizer(), &namespace, &v)?;
    created(&headers, &out)
}

async fn self_subject_review(
    Extension(user): Extension<authn::UserInfo>,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let v = body_of(&headers, &body, AUTHN, "SelfSubjectReview")?;
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let out = rbac_reviews::self_subject_review(&to_rbac_user(&user), api_version);
    created(&headers, &out)
}

/// `pkg/registry/authentication/tokenreview`: who a bearer token belongs
/// to, for the tokens this server knows (`--token-auth-file`).
async fn token_review(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let v = body_of(&headers, &body, AUTHN, "TokenReview")?;
    let out = token_review_of(&state.authenticator, &v)?;
    created(&headers, &out)
}

/// The TokenReview answer for `body` (kube's 400 for an empty token).
pub fn token_review_of(
    authenticator: &authn::Authenticator,
    body: &Value,
) -> Result<Value, ApiError> {
    let token = body
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let mut spec = Map::new();
    spec.insert("token".into(), json!(token));
    let audiences: Vec<String> = body
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if !audiences.is_empty() {
        spec.insert("audiences".into(), json!(audiences));
    }
    let mut status = Map::new();
    let mut user_info = Map::new();
    let wanted = (!audiences.is_empty()).then_some(audiences.as_slice());
    if let Ok((user, auds)) = authenticator.authenticate_token(token, wanted) {
        status.insert("authenticated".into(), json!(true));
        if !user.name.is_empty() {
            user_info.insert("username".into(), json!(user.name));
        }
        if !user.uid.is_empty() {
            user_info.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            user_info.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            user_info.insert("extra".into(), json!(user.extra));
        }
        if !auds.is_empty() {
            status.insert("audiences".into(), json!(auds));
        }
    }
    status.insert("user".into(), Value::Object(user_info));
    let api_version = match body.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => format!("{AUTHN}/v1"),
    };
    Ok(json!({
        "kind": "TokenReview",
        "apiVersion": api_version,
        "metadata": {},
        "spec": Value::Object(spec),
        "status": Value::Object(status),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};

    fn authenticator() -> authn::Authenticator {
        let mut map = HashMap::new();
        map.insert(
            "t0k".to_string(),
            authn::UserInfo {
                name: "bob".into(),
                uid: "42".into(),
                groups: vec!["devs".into()],
                extra: BTreeMap::new(),
            },
        );
        authn::Authenticator::with_tokens(map)
    }

    #[test]
    fn a_known_token_is_reviewed_as_its_user_with_the_authenticated_group() {
        let out = token_review_of(
            &authenticator(),
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "t0k"}}),
        )
        .expect("review");
        assert_eq!(out["status"]["authenticated"], true);
        assert_eq!(out["status"]["user"]["username"], "bob");
        assert_eq!(out["status"]["user"]["uid"], "42");
        assert_eq!(
            out["status"]["user"]["groups"],
            json!(["devs", "system:authenticated"])
        );
        assert_eq!(out["spec"]["token"], "t0k");
    }

    #[test]
    fn an_unknown_token_is_not_authenticated_and_an_empty_one_is_a_400() {
        let out =
            token_review_of(&authenticator(), &json!({"spec": {"token": "nope"}})).expect("review");
        assert_eq!(out["status"], json!({"user": {}}));
        let err = token_review_of(&authenticator(), &json!({"spec": {}})).expect_err("400");
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "token is required for TokenReview in authentication"
        );
    }

    #[test]
    fn discovery_lists_the_reviews_as_create_only_and_lsar_namespaced() {
        let infos = review_resources();
        assert_eq!(infos.len(), 6);
        assert!(infos.iter().all(|i| i.verbs == vec!["create"]));
        let lsar = infos
            .iter()
            .find(|i| i.resource == "localsubjectaccessreviews")
            .expect("lsar");
        assert!(lsar.namespaced);
        assert_eq!(
            lsar.definition,
            "io.k8s.api.authorization.v1.LocalSubjectAccessReview"
        );
    }
}
